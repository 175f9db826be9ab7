// MCP_AUTH_UPSTREAM_AUTH and its settings as loadGatewayConfig reads them, the static token file, and where the
// upstream's issuer and resource come from (RFC 9728 metadata, its 401 challenge, or the fallbacks).
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type RequestListener, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { ConfigurationError } from '../../../src/core/kernel/errors.js';
import { loadGatewayConfig, parseGatewayArgs } from '../../../src/gateway/config/gateway-config.js';
import { staticCredentials } from '../../../src/gateway/upstream-auth/upstream-credentials.js';
import { createUpstreamTargetResolver, resourceMetadataParameter } from '../../../src/gateway/upstream-auth/upstream-resource-metadata.js';
import { NODE_SERVER, quote } from '../../helpers/stdio-gateway.js';
import type { AuthInfo } from '../../../src/core/kernel/auth-info.js';

const base = { MCP_AUTH_ISSUER: 'https://auth.example.com', MCP_AUTH_UPSTREAM: 'http://127.0.0.1:3001/mcp' };
const client = { MCP_AUTH_UPSTREAM_CLIENT_ID: 'gateway', MCP_AUTH_UPSTREAM_CLIENT_SECRET: 's3cret' };
const dir = mkdtempSync(join(tmpdir(), 'upstream-auth-config-'));
const servers: Server[] = [];

function settingAtFault(settings: Record<string, string>): { setting: string; message: string } {
  try {
    loadGatewayConfig(settings);
  } catch (error) {
    assert.ok(error instanceof ConfigurationError, String(error));
    return { setting: error.setting, message: error.message };
  }
  assert.fail('expected a ConfigurationError');
}

async function serve(listener: RequestListener): Promise<URL> {
  const server = createServer(listener);
  servers.push(server);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`);
}

after(() => {
  for (const server of servers) server.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('upstream authentication settings', () => {
  it('defaults to none: no credentials', () => {
    assert.equal(loadGatewayConfig(base).upstreamAuth, undefined);
    assert.equal(loadGatewayConfig({ ...base, MCP_AUTH_UPSTREAM_AUTH: 'none' }).upstreamAuth, undefined);
  });

  it('refuses an unknown mode, naming the modes', () => {
    const fault = settingAtFault({ ...base, MCP_AUTH_UPSTREAM_AUTH: 'bearer' });
    assert.equal(fault.setting, 'MCP_AUTH_UPSTREAM_AUTH');
    assert.match(fault.message, /none, static, client_credentials, token_exchange/);
  });

  it('static needs exactly one of the token and the token file, and a readable file', () => {
    assert.equal(settingAtFault({ ...base, MCP_AUTH_UPSTREAM_AUTH: 'static' }).setting, 'MCP_AUTH_UPSTREAM_TOKEN');
    const file = join(dir, 'both');
    writeFileSync(file, 'abc');
    assert.equal(settingAtFault({ ...base, MCP_AUTH_UPSTREAM_AUTH: 'static', MCP_AUTH_UPSTREAM_TOKEN: 'abc', MCP_AUTH_UPSTREAM_TOKEN_FILE: file }).setting, 'MCP_AUTH_UPSTREAM_TOKEN');
    assert.equal(settingAtFault({ ...base, MCP_AUTH_UPSTREAM_AUTH: 'static', MCP_AUTH_UPSTREAM_TOKEN_FILE: join(dir, 'missing') }).setting, 'MCP_AUTH_UPSTREAM_TOKEN_FILE');
    assert.deepEqual(loadGatewayConfig({ ...base, MCP_AUTH_UPSTREAM_AUTH: 'static', MCP_AUTH_UPSTREAM_TOKEN: 'abc' }).upstreamAuth, { mode: 'static', token: 'abc' });
  });

  it('client_credentials and token_exchange need the client id and one secret', () => {
    for (const mode of ['client_credentials', 'token_exchange']) {
      assert.equal(settingAtFault({ ...base, MCP_AUTH_UPSTREAM_AUTH: mode, MCP_AUTH_UPSTREAM_CLIENT_SECRET: 'x' }).setting, 'MCP_AUTH_UPSTREAM_CLIENT_ID');
      assert.equal(settingAtFault({ ...base, MCP_AUTH_UPSTREAM_AUTH: mode, MCP_AUTH_UPSTREAM_CLIENT_ID: 'gateway' }).setting, 'MCP_AUTH_UPSTREAM_CLIENT_SECRET');
      const config = loadGatewayConfig({ ...base, ...client, MCP_AUTH_UPSTREAM_AUTH: mode, MCP_AUTH_UPSTREAM_SCOPE: 'notes:read, notes:write' }).upstreamAuth;
      assert.ok(config && config.mode === mode && 'clientId' in config);
      assert.equal(config.scope, 'notes:read notes:write');
    }
    const secretFile = join(dir, 'secret');
    writeFileSync(secretFile, 'from-file\n');
    const fromFile = loadGatewayConfig({ ...base, MCP_AUTH_UPSTREAM_AUTH: 'client_credentials', MCP_AUTH_UPSTREAM_CLIENT_ID: 'gateway', MCP_AUTH_UPSTREAM_CLIENT_SECRET_FILE: secretFile }).upstreamAuth;
    assert.ok(fromFile && 'clientSecret' in fromFile);
    assert.equal(fromFile.clientSecret, 'from-file');
  });

  it('refuses a setting the chosen mode does not read, and any of them without a mode', () => {
    assert.equal(settingAtFault({ ...base, ...client, MCP_AUTH_UPSTREAM_AUTH: 'client_credentials', MCP_AUTH_UPSTREAM_TOKEN: 'abc' }).setting, 'MCP_AUTH_UPSTREAM_TOKEN');
    const fault = settingAtFault({ ...base, MCP_AUTH_UPSTREAM_CLIENT_ID: 'gateway' });
    assert.equal(fault.setting, 'MCP_AUTH_UPSTREAM_CLIENT_ID');
    assert.match(fault.message, /MCP_AUTH_UPSTREAM_AUTH=none/);
  });

  it('refuses credentials over plain http off loopback', () => {
    const fault = settingAtFault({ ...base, MCP_AUTH_UPSTREAM: 'http://notes.example.com/mcp', MCP_AUTH_UPSTREAM_AUTH: 'static', MCP_AUTH_UPSTREAM_TOKEN: 'abc' });
    assert.equal(fault.setting, 'MCP_AUTH_UPSTREAM');
    assert.equal(settingAtFault({ ...base, ...client, MCP_AUTH_UPSTREAM_AUTH: 'token_exchange', MCP_AUTH_UPSTREAM_ISSUER: 'http://as.example.com' }).setting, 'MCP_AUTH_UPSTREAM_ISSUER');
  });

  it('refuses upstream authentication with a stdio upstream, naming both settings', () => {
    const stdio = { MCP_AUTH_ISSUER: 'https://auth.example.com', MCP_AUTH_UPSTREAM_COMMAND: `${quote(process.execPath)} ${quote(NODE_SERVER)}` };
    const fault = settingAtFault({ ...stdio, MCP_AUTH_UPSTREAM_AUTH: 'static', MCP_AUTH_UPSTREAM_TOKEN: 'abc' });
    assert.equal(fault.setting, 'MCP_AUTH_UPSTREAM_AUTH');
    assert.match(fault.message, /MCP_AUTH_UPSTREAM_COMMAND/);
    assert.equal(settingAtFault({ ...stdio, MCP_AUTH_UPSTREAM_CLIENT_ID: 'gateway' }).setting, 'MCP_AUTH_UPSTREAM_CLIENT_ID');
    assert.equal(loadGatewayConfig({ ...stdio, MCP_AUTH_UPSTREAM_AUTH: 'none' }).upstreamAuth, undefined);
  });

  it('takes no secret on the command line, and says where to set it', () => {
    for (const [flag, env] of [
      ['--upstream-token', 'MCP_AUTH_UPSTREAM_TOKEN'],
      ['--upstream-client-secret', 'MCP_AUTH_UPSTREAM_CLIENT_SECRET'],
    ]) {
      assert.throws(() => parseGatewayArgs([flag!, 'x'], {}), (error: unknown) => error instanceof ConfigurationError && error.message.includes(`set ${env} in the environment`));
    }
    const parsed = parseGatewayArgs(['--upstream-auth', 'token_exchange', '--upstream-client-id', 'gateway', '--upstream-scope', 'notes:read'], {});
    assert.ok(!parsed.help);
    assert.equal(parsed.settings.MCP_AUTH_UPSTREAM_AUTH, 'token_exchange');
  });
});

describe('static token file', () => {
  const caller = { token: 'caller' } as AuthInfo;

  it('is read again after a 401 when it changed, and keeps the last token while it is unreadable', async () => {
    const file = join(dir, 'rotating');
    writeFileSync(file, 'first\n');
    const credentials = staticCredentials({ file, setting: 'MCP_AUTH_UPSTREAM_TOKEN_FILE' });
    assert.equal(await credentials.authorization(caller), 'Bearer first');
    assert.equal(await credentials.renew(caller, 'Bearer first'), undefined);
    writeFileSync(file, 'second-and-longer\n');
    assert.equal(await credentials.renew(caller, 'Bearer first'), 'Bearer second-and-longer');
    assert.equal(await credentials.authorization(caller), 'Bearer second-and-longer');
    rmSync(file);
    assert.equal(await credentials.renew(caller, 'Bearer second-and-longer'), undefined);
    assert.equal(await credentials.authorization(caller), 'Bearer second-and-longer');
  });
});

describe("the upstream's issuer and resource", () => {
  const gatewayIssuers = ['https://gateway-as.example.com'];

  it('come from the metadata at the well-known URI, preferring an issuer the gateway trusts', async () => {
    let origin = '';
    const upstream = await serve((req, res) => {
      if (req.url === '/.well-known/oauth-protected-resource/mcp') {
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ resource: `${origin}/mcp`, authorization_servers: ['https://other-as.example.com', gatewayIssuers[0]] }));
      } else res.writeHead(404).end();
    });
    origin = upstream.origin;
    const target = await createUpstreamTargetResolver({ upstream, gatewayIssuers, timeoutMs: 2000 })();
    assert.deepEqual(target, { issuer: gatewayIssuers[0], resource: `${origin}/mcp` });
  });

  it("come from the document the 401 challenge's resource_metadata names, on the upstream's origin only", async () => {
    let origin = '';
    const upstream = await serve((req, res) => {
      if (req.url === '/meta/notes.json') {
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ resource: `${origin}/api`, authorization_servers: ['https://notes-as.example.com'] }));
      } else if (req.url === '/mcp' && req.method === 'POST') {
        req.resume();
        res.writeHead(401, { 'www-authenticate': `Bearer error="invalid_token", resource_metadata="${origin}/meta/notes.json"` }).end();
      } else res.writeHead(404).end();
    });
    origin = upstream.origin;
    assert.deepEqual(await createUpstreamTargetResolver({ upstream, gatewayIssuers, timeoutMs: 2000 })(), { issuer: 'https://notes-as.example.com', resource: `${origin}/api` });
    // Settings win over the metadata.
    assert.deepEqual(await createUpstreamTargetResolver({ upstream, gatewayIssuers, timeoutMs: 2000, resource: 'https://set.example.com/mcp' })(), { issuer: 'https://notes-as.example.com', resource: 'https://set.example.com/mcp' });
  });

  it('fall back to the gateway issuer and the upstream URL without usable metadata', async () => {
    const upstream = await serve((req, res) => {
      req.resume();
      // A document naming another origin's resource is ignored.
      if (req.url?.startsWith('/.well-known/')) res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ resource: 'https://elsewhere.example.com/mcp' }));
      else res.writeHead(401, { 'www-authenticate': 'Bearer resource_metadata="https://elsewhere.example.com/meta"' }).end();
    });
    assert.deepEqual(await createUpstreamTargetResolver({ upstream, gatewayIssuers, timeoutMs: 2000 })(), { issuer: gatewayIssuers[0], resource: upstream.href });
  });

  it('without issuers of the gateway (connected accounts), no metadata is an error naming MCP_AUTH_UPSTREAM_ISSUER, not a guess', async () => {
    const upstream = await serve((req, res) => {
      req.resume();
      res.writeHead(404).end();
    });
    await assert.rejects(createUpstreamTargetResolver({ upstream, gatewayIssuers: [], timeoutMs: 2000 })(), /MCP_AUTH_UPSTREAM_ISSUER: is needed: the upstream names no authorization server/);
    assert.deepEqual(await createUpstreamTargetResolver({ upstream, gatewayIssuers: [], timeoutMs: 2000, issuer: 'https://notes-as.example.com' })(), { issuer: 'https://notes-as.example.com', resource: upstream.href });
  });

  it('are not settled while the upstream cannot be reached: 503 until it can', async () => {
    const upstream = await serve(() => {});
    const down = new URL(upstream.href);
    await new Promise<void>((resolve) => servers.pop()!.close(() => resolve()));
    await assert.rejects(createUpstreamTargetResolver({ upstream: down, gatewayIssuers, timeoutMs: 2000 })(), (error: unknown) => (error as { status?: number }).status === 503);
  });

  it('reads resource_metadata quoted or as a token', () => {
    assert.equal(resourceMetadataParameter('Bearer realm="x", resource_metadata="https://a.example/m"'), 'https://a.example/m');
    assert.equal(resourceMetadataParameter('Bearer resource_metadata=https://a.example/m, scope="x"'), 'https://a.example/m');
    assert.equal(resourceMetadataParameter('Bearer error="invalid_token"'), undefined);
    assert.equal(resourceMetadataParameter(null), undefined);
  });
});
