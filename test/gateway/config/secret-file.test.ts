// Every `…_FILE` secret setting is read by the one secret-file reader: the same refusals at start-up (missing,
// empty, too large) for the upstream token, the upstream client secret and the session secret, naming the setting
// and the file and never the content; and a file that never ends (a device, a pipe) is not read past the bound.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { ConfigurationError } from '../../../src/core/kernel/errors.js';
import { loadGatewayConfig } from '../../../src/gateway/config/gateway-config.js';
import { readSecretFile } from '../../../src/gateway/config/secret-file.js';

const dir = mkdtempSync(join(tmpdir(), 'secret-file-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const base = { MCP_AUTH_ISSUER: 'https://auth.example.com', MCP_AUTH_UPSTREAM: 'http://127.0.0.1:3001/mcp' };
/** Each secret-file setting, with what else it needs to be read. */
const SETTINGS: Record<string, Record<string, string>> = {
  MCP_AUTH_UPSTREAM_TOKEN_FILE: { MCP_AUTH_UPSTREAM_AUTH: 'static' },
  MCP_AUTH_UPSTREAM_CLIENT_SECRET_FILE: { MCP_AUTH_UPSTREAM_AUTH: 'client_credentials', MCP_AUTH_UPSTREAM_CLIENT_ID: 'gateway' },
  MCP_AUTH_SESSION_SECRET_FILE: {},
};

function refusal(setting: string, file: string): ConfigurationError {
  try {
    loadGatewayConfig({ ...base, ...SETTINGS[setting], [setting]: file });
  } catch (error) {
    assert.ok(error instanceof ConfigurationError, String(error));
    return error;
  }
  assert.fail(`${setting} was accepted`);
}

describe('secret files', () => {
  const missing = join(dir, 'missing');
  const empty = join(dir, 'empty');
  const large = join(dir, 'large');
  const secret = randomBytes(32).toString('base64url');
  writeFileSync(empty, ' \n\t\n');
  writeFileSync(large, `${secret}\n${'x'.repeat(70_000)}`);

  for (const setting of Object.keys(SETTINGS)) {
    it(`${setting}: a missing, empty or too large file is refused at start-up with the same words, never the content`, () => {
      assert.equal(refusal(setting, missing).message, `${setting}: cannot read "${missing}" (ENOENT)`);
      assert.equal(refusal(setting, empty).message, `${setting}: "${empty}" is empty`);
      const tooLarge = refusal(setting, large);
      assert.equal(tooLarge.message, `${setting}: "${large}" is larger than 65536 bytes; it should hold only the secret`);
      assert.ok(!tooLarge.message.includes(secret));
    });
  }

  it('a file that never ends is read no further than the bound', { skip: process.platform === 'win32' ? 'no /dev/zero on Windows' : false }, () => {
    assert.throws(() => readSecretFile('/dev/zero', 'MCP_AUTH_SESSION_SECRET_FILE'), {
      name: 'ConfigurationError',
      message: 'MCP_AUTH_SESSION_SECRET_FILE: "/dev/zero" is larger than 65536 bytes; it should hold only the secret',
    });
  });

  it('the content is trimmed', () => {
    const file = join(dir, 'padded');
    writeFileSync(file, `\n  ${secret}  \r\n`);
    assert.equal(readSecretFile(file, 'MCP_AUTH_UPSTREAM_CLIENT_SECRET_FILE'), secret);
  });
});
