import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConfigurationError, RequestRejectedError } from '../../../src/core/kernel/errors.js';
import { createOriginCheck } from '../../../src/core/guard/origin-check.js';
import { assertGuardError } from '../../helpers/assert-guard-error.js';

const resourceOrigin = 'https://mcp.example.com';

async function assertRefused(check: (origin: string | undefined) => void, origin: string): Promise<void> {
  const error = await assertGuardError(() => check(origin), RequestRejectedError, 'origin_forbidden', 403);
  assert.equal(error.message, 'Origin not allowed');
  assert.equal(error.jsonRpcCode, -32600);
  assert.equal(error.bearerError, undefined);
}

test('a request without Origin (a non-browser client) passes', () => {
  const check = createOriginCheck([], resourceOrigin);
  assert.equal(check(undefined), undefined);
});

test('the resource\'s own origin passes, with or without the default port', () => {
  const check = createOriginCheck([], resourceOrigin);
  assert.doesNotThrow(() => check('https://mcp.example.com'));
  assert.doesNotThrow(() => check('https://mcp.example.com:443'));
  assert.doesNotThrow(() => check('https://MCP.Example.com'));
});

test('any other origin is refused with 403 origin_forbidden', async () => {
  const check = createOriginCheck([], resourceOrigin);
  await assertRefused(check, 'https://evil.example');
  await assertRefused(check, 'http://mcp.example.com'); // other scheme
  await assertRefused(check, 'https://mcp.example.com:8443'); // other port
  await assertRefused(check, 'https://mcp.example.com.evil.example');
  await assertRefused(check, '');
  await assertRefused(check, 'not an origin');
});

test('the opaque origin "null" is refused, even if someone configured it', async () => {
  await assertRefused(createOriginCheck([], resourceOrigin), 'null');
  await assertRefused(createOriginCheck(['https://app.example.com'], resourceOrigin), 'null');
  assert.throws(() => createOriginCheck(['null'], resourceOrigin), ConfigurationError);
});

test('configured origins pass, compared after normalization (host case, default port)', async () => {
  const check = createOriginCheck(['https://App.Example.com', 'http://localhost:5173/'], resourceOrigin);
  assert.doesNotThrow(() => check('https://app.example.com'));
  assert.doesNotThrow(() => check('https://APP.EXAMPLE.COM'));
  assert.doesNotThrow(() => check('https://app.example.com:443'));
  assert.doesNotThrow(() => check('http://localhost:5173'));
  assert.doesNotThrow(() => check(resourceOrigin));
  await assertRefused(check, 'http://localhost:5174');
  await assertRefused(check, 'http://app.example.com');
});

test('"*" allows every origin, including "null"', () => {
  const check = createOriginCheck(['https://app.example.com', '*'], resourceOrigin);
  for (const origin of [undefined, 'https://evil.example', 'null', 'whatever']) {
    assert.doesNotThrow(() => check(origin));
  }
});

test('a configured value that is not an origin is a ConfigurationError naming the setting', () => {
  assert.throws(
    () => createOriginCheck(['app.example.com'], resourceOrigin, 'MCP_AUTH_ALLOWED_ORIGINS'),
    (e: unknown) => {
      assert.ok(e instanceof ConfigurationError);
      assert.equal(e.setting, 'MCP_AUTH_ALLOWED_ORIGINS');
      assert.equal(
        e.message,
        'MCP_AUTH_ALLOWED_ORIGINS: "app.example.com" is not an origin; use scheme://host[:port], e.g. https://app.example.com, or * to allow any',
      );
      return true;
    },
  );
  assert.throws(
    () => createOriginCheck(['file:///tmp/x'], resourceOrigin),
    (e: unknown) => {
      assert.ok(e instanceof ConfigurationError);
      assert.equal(e.setting, 'allowedOrigins');
      assert.equal(e.message, 'allowedOrigins: "file:///tmp/x" has no origin; use scheme://host[:port]');
      return true;
    },
  );
});
