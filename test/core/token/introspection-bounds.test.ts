// The bounds on introspection calls without a network: refusals reused for a short time from a token's second
// refusal and bounded, a token not valid yet never reused, refusals counted per client address (IPv6 per /64),
// and the setting checked.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ConfigurationError, InvalidTokenError, RateLimitedError } from '../../../src/core/kernel/errors.js';
import { INTROSPECTION_REFUSALS_MAX_BYTES, INTROSPECTION_REFUSALS_MAX_ENTRIES, createIntrospectionBounds, parseRefusalsPerAddress } from '../../../src/core/token/introspection-bounds.js';
import { loadOptionsFromEnv } from '../../../src/core/guard/load-options-from-env.js';

describe('createIntrospectionBounds', () => {
  test('a refusal is reused for its TTL from its second time, as a new error each time; a token not valid yet is never reused', () => {
    let now = 0;
    const bounds = createIntrospectionBounds({ refusalTtlSeconds: 10, refusalsPerAddress: false, now: () => now });
    const key = 'kAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA';
    bounds.remember(key, new InvalidTokenError('access token is not active', 'token_inactive'), undefined);
    assert.equal(bounds.refused(key), undefined, 'a first refusal (an authorization server glitch, maybe) is not reused');
    bounds.remember(key, new InvalidTokenError('access token is not active', 'token_inactive'), undefined);
    for (let i = 0; i < 2; i++) bounds.remember('early', new InvalidTokenError('access token is not valid yet (nbf)', 'token_not_yet_valid'), undefined);
    const first = bounds.refused(key);
    assert.ok(first instanceof InvalidTokenError && first.reason === 'token_inactive' && first.status === 401);
    assert.notEqual(bounds.refused(key), first);
    assert.equal(bounds.refused('early'), undefined);
    now = 10_000;
    assert.equal(bounds.refused(key), undefined, 'expired after 10 s');
  });

  test('refusals are bounded in entries and bytes, whatever the messages', () => {
    const bounds = createIntrospectionBounds({ refusalTtlSeconds: 10, refusalsPerAddress: false });
    const long = 'x'.repeat(2_000);
    for (let i = 0; i < INTROSPECTION_REFUSALS_MAX_ENTRIES + 500; i++) {
      const key = `key-${i}`.padEnd(43, '-');
      for (let twice = 0; twice < 2; twice++) bounds.remember(key, new InvalidTokenError(`${long}${i}`, 'token_audience'), undefined);
    }
    assert.ok(bounds.refusals!.size <= INTROSPECTION_REFUSALS_MAX_ENTRIES);
    assert.ok(bounds.refusals!.bytes <= INTROSPECTION_REFUSALS_MAX_BYTES);
    assert.ok(bounds.refusals!.size < INTROSPECTION_REFUSALS_MAX_ENTRIES, 'the byte bound bit first');
  });

  test('no refusal is reused with a TTL of 0', () => {
    const bounds = createIntrospectionBounds({ refusalTtlSeconds: 0, refusalsPerAddress: false });
    for (let i = 0; i < 2; i++) bounds.remember('k', new InvalidTokenError('access token is not active', 'token_inactive'), undefined);
    assert.equal(bounds.refused('k'), undefined);
  });

  test('refusals are counted per address (IPv6 per /64): 429 with Retry-After while past the rate; accepted tokens never count', () => {
    let now = 0;
    const bounds = createIntrospectionBounds({ refusalTtlSeconds: 10, refusalsPerAddress: '2/s', now: () => now });
    const refuse = (clientAddress: string | undefined, key: string): void => {
      bounds.admit(clientAddress === undefined ? undefined : { clientAddress });
      bounds.remember(key.padEnd(43, '-'), new InvalidTokenError('access token is not active', 'token_inactive'), clientAddress === undefined ? undefined : { clientAddress });
    };
    // Admissions alone (calls whose tokens were accepted) count nothing, however many.
    for (let i = 0; i < 100; i++) bounds.admit({ clientAddress: '2001:db8::1' });
    refuse('2001:db8::1', 'a');
    refuse('2001:db8::ffff:2', 'b');
    assert.throws(() => bounds.admit({ clientAddress: '2001:db8::3' }), (e: unknown) => {
      assert.ok(e instanceof RateLimitedError);
      assert.equal(e.status, 429);
      assert.equal(e.headers['Retry-After'], '1');
      assert.equal(e.message, 'Too many refused access tokens from this address: at most 2/s; retry later');
      return true;
    });
    bounds.admit({ clientAddress: '2001:db8:0:1::1' });
    refuse('::ffff:192.0.2.1', 'c');
    refuse('192.0.2.1', 'd');
    assert.throws(() => bounds.admit({ clientAddress: '192.0.2.1' }), RateLimitedError, 'an IPv4-mapped address is its IPv4 address');
    for (let i = 0; i < 5; i++) refuse(undefined, `e${i}`);
    now = 1_000;
    bounds.admit({ clientAddress: '2001:db8::3' });
  });

  test('refusalsPerAddress is checked, and read from MCP_AUTH_INTROSPECTION_RATE_LIMIT', () => {
    assert.throws(() => createIntrospectionBounds({ refusalTtlSeconds: 10, refusalsPerAddress: 'lots' }), (e: unknown) => e instanceof ConfigurationError && e.setting === 'introspection.refusalsPerAddress');
    const env = { MCP_AUTH_ISSUER: 'https://as.example', MCP_AUTH_RESOURCE: 'https://mcp.example/mcp', MCP_AUTH_INTROSPECTION_CLIENT_ID: 'rs', MCP_AUTH_INTROSPECTION_CLIENT_SECRET: 's' };
    assert.equal(loadOptionsFromEnv({ ...env, MCP_AUTH_INTROSPECTION_RATE_LIMIT: '5/min' }).introspection?.refusalsPerAddress, '5/min');
    assert.equal(loadOptionsFromEnv({ ...env, MCP_AUTH_INTROSPECTION_RATE_LIMIT: 'off' }).introspection?.refusalsPerAddress, false);
    assert.equal(loadOptionsFromEnv(env).introspection?.refusalsPerAddress, undefined);
    assert.throws(() => loadOptionsFromEnv({ ...env, MCP_AUTH_INTROSPECTION_RATE_LIMIT: 'lots' }), (e: unknown) => e instanceof ConfigurationError && /MCP_AUTH_INTROSPECTION_RATE_LIMIT/.test(e.message));
  });
});

describe('MCP_AUTH_INTROSPECTION_RATE_LIMIT values', () => {
  test('a rate, or off in any case, and a bad value names off as the other choice', () => {
    assert.deepEqual(parseRefusalsPerAddress('20/s', 'S'), { points: 20, windowMs: 1000, text: '20/s' });
    assert.equal(parseRefusalsPerAddress('OFF', 'S'), undefined);
    assert.equal(parseRefusalsPerAddress(false, 'S'), undefined);
    assert.throws(() => parseRefusalsPerAddress('banana', 'S'), (error: unknown) => error instanceof ConfigurationError && error.setting === 'S' && /"banana"\); or off to disable$/.test(error.message));
  });

  test('zero is no bound of refusals: 0, "0" and "0/s" are refused at start-up, saying to use off', () => {
    for (const zero of [0, '0', '0/s', ' 00 / min ']) {
      assert.throws(() => parseRefusalsPerAddress(zero, 'S'), (error: unknown) => error instanceof ConfigurationError && error.setting === 'S' && /zero is no value of it; use off to disable$/.test(error.message), String(zero));
    }
    assert.throws(
      () => loadOptionsFromEnv({ MCP_AUTH_ISSUER: 'https://as.example.com', MCP_AUTH_RESOURCE: 'https://mcp.example.com/mcp', MCP_AUTH_INTROSPECTION_CLIENT_ID: 'rs', MCP_AUTH_INTROSPECTION_CLIENT_SECRET: 's', MCP_AUTH_INTROSPECTION_RATE_LIMIT: '0' }),
      (error: unknown) => error instanceof ConfigurationError && /MCP_AUTH_INTROSPECTION_RATE_LIMIT: is "0", and zero is no value of it; use off to disable/.test(error.message),
    );
  });

  test('a bad value is named even when the introspection client is what is missing', () => {
    assert.throws(
      () => loadOptionsFromEnv({ MCP_AUTH_ISSUER: 'https://as.example.com', MCP_AUTH_RESOURCE: 'https://mcp.example.com/mcp', MCP_AUTH_INTROSPECTION_RATE_LIMIT: 'banana' }),
      (error: unknown) =>
        error instanceof ConfigurationError &&
        error.problems.some((p) => p.setting === 'MCP_AUTH_INTROSPECTION_RATE_LIMIT' && p.detail.includes('"banana"')) &&
        error.problems.some((p) => p.setting === 'MCP_AUTH_INTROSPECTION_CLIENT_ID'),
    );
  });
});
