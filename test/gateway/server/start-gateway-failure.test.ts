// A configuration the guard refuses after the gateway started listening must leave nothing running.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from '../../helpers/child-process.js';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import { ConfigurationError } from '../../../src/core/kernel/errors.js';
import { loadGatewayConfig } from '../../../src/gateway/config/gateway-config.js';
import { startGateway } from '../../../src/gateway/server/start-gateway.js';
import { startTestIssuer } from '../../helpers/fake-issuer.js';
import { postMcp } from '../../helpers/http-client.js';

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });
}

function portIsFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = createServer();
    probe.once('error', () => resolve(false));
    probe.listen(port, '127.0.0.1', () => probe.close(() => resolve(true)));
  });
}

test('startGateway closes its listener when the guard refuses the configuration', async () => {
  const config = loadGatewayConfig({
    MCP_AUTH_UPSTREAM: 'http://127.0.0.1:9/mcp',
    MCP_AUTH_ISSUER: 'http://127.0.0.1:9',
    HOST: '127.0.0.1',
    PORT: '0',
  });
  // Bypass load-time validation to reach the path after listen().
  const port = await freePort();
  const broken = { ...config, resourceIsDefault: false, port, guard: { ...config.guard, allowedOrigins: ['not an origin'] } };
  await assert.rejects(
    startGateway(broken, { log: () => {}, warn: () => {} }),
    (e: unknown) => e instanceof ConfigurationError && e.setting === 'MCP_AUTH_ALLOWED_ORIGINS',
  );
  assert.equal(await portIsFree(port), true, 'the listener was closed');
});

test('the CLI exits 2 with one line when a setting is refused, instead of hanging', { timeout: 20_000 }, async () => {
  const cli = fileURLToPath(new URL('../../../src/gateway/cli.ts', import.meta.url));
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', cli, '--upstream', 'http://127.0.0.1:9/mcp', '--issuer', 'http://127.0.0.1:9', '--port', '0', '--jwks-uri', 'notaurl'],
    { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, PORT: '', HOST: '' } },
  );
  let stderr = '';
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  assert.equal(code, 2, stderr);
  assert.match(stderr, /^mcp-oauth-guard: configuration error: MCP_AUTH_JWKS_URI \(--jwks-uri\): "notaurl" is not an absolute URL/);
  assert.equal(stderr.trim().split('\n').length, 1);
});

test('a failed discovery is logged with what each URL answered', { timeout: 20_000 }, async () => {
  const issuer = await startTestIssuer({ discovery: 'oauth2' });
  const warnings: string[] = [];
  const config = loadGatewayConfig({
    MCP_AUTH_UPSTREAM: 'http://127.0.0.1:9/mcp',
    MCP_AUTH_ISSUER: `${issuer.issuer}/not-an-issuer`,
    HOST: '127.0.0.1',
    PORT: '0',
  });
  const gateway = await startGateway(config, { log: () => {}, warn: (line) => warnings.push(line) });
  try {
    for (let i = 0; i < 50 && warnings.length === 0; i++) await new Promise((resolve) => setTimeout(resolve, 20));
    assert.equal(warnings.length, 1);
    const warning = JSON.parse(warnings[0]!) as { message: string; detail: string };
    assert.equal(warning.message, 'authorization server discovery failed; requests with a token get 503 until it succeeds');
    assert.ok(warning.detail.includes(`GET ${issuer.issuer}/.well-known/oauth-authorization-server/not-an-issuer: HTTP 404`), warning.detail);
    assert.ok(warning.detail.includes('openid-configuration: HTTP 404'), warning.detail);
  } finally {
    await gateway.shutdown();
    await issuer.close();
  }
});

test('with several issuers, the warning says only the failing issuer\'s tokens are refused, and names it', { timeout: 20_000 }, async () => {
  const up = await startTestIssuer();
  const notAnIssuer = await startTestIssuer({ discovery: 'oauth2' });
  const warnings: string[] = [];
  const config = loadGatewayConfig({
    MCP_AUTH_UPSTREAM: 'http://127.0.0.1:9/mcp',
    MCP_AUTH_ISSUER: `${up.issuer},${notAnIssuer.issuer}/tenant`,
    HOST: '127.0.0.1',
    PORT: '0',
  });
  const gateway = await startGateway(config, { log: () => {}, warn: (line) => warnings.push(line) });
  try {
    for (let i = 0; i < 50 && !warnings.some((line) => line.includes('"event":"warning"')); i++) await new Promise((resolve) => setTimeout(resolve, 20));
    const warning = warnings.map((line) => JSON.parse(line) as { event?: string; message: string; detail: string }).find((w) => w.event === 'warning');
    assert.ok(warning, warnings.join('\n'));
    assert.match(warning.message, /their tokens get 503 .* the others are served/);
    assert.ok(warning.detail.includes(`discovery of issuer ${notAnIssuer.issuer}/tenant failed`), warning.detail);
    assert.ok(!warning.detail.includes(`discovery of issuer ${up.issuer} failed`), warning.detail);
  } finally {
    await gateway.shutdown();
    await Promise.all([up.close(), notAnIssuer.close()]);
  }
});

test('an issuer spelt otherwise than its metadata: the warning says its tokens get 401 invalid_token, as they do', { timeout: 20_000 }, async () => {
  const issuer = await startTestIssuer();
  const warnings: string[] = [];
  const config = loadGatewayConfig({
    MCP_AUTH_UPSTREAM: 'http://127.0.0.1:9/mcp',
    // The metadata says http://127.0.0.1:<port>, without the slash, and so do its tokens.
    MCP_AUTH_ISSUER: `${issuer.issuer}/`,
    HOST: '127.0.0.1',
    PORT: '0',
  });
  const gateway = await startGateway(config, { log: () => {}, warn: (line) => warnings.push(line) });
  try {
    for (let i = 0; i < 50 && warnings.length === 0; i++) await new Promise((resolve) => setTimeout(resolve, 20));
    assert.equal(warnings.length, 1, warnings.join('\n'));
    const warning = JSON.parse(warnings[0]!) as { message: string; detail: string };
    assert.equal(
      warning.message,
      'the authorization server\'s metadata spells its issuer differently: its tokens get 401 invalid_token (their "iss" is not the configured issuer) until MCP_AUTH_ISSUER is set to the metadata\'s spelling (see detail)',
    );
    assert.ok(warning.detail.includes(`calls itself "${issuer.issuer}"`), warning.detail);
    const token = await issuer.sign({ aud: gateway.resource, sub: 'alice' });
    const answer = await postMcp(gateway.resource, { jsonrpc: '2.0', id: 1, method: 'ping' }, token);
    assert.equal(answer.status, 401);
    assert.match(String(answer.headers['www-authenticate']), /error="invalid_token"/);
  } finally {
    await gateway.shutdown();
    await issuer.close();
  }
});
