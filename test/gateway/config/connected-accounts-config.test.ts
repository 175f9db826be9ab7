// Connected accounts are configured in one place: the mode on an upstream, then the token store, its key and the
// gateway's own sign-in, each problem named by its variable (or JSON path) in the one start-up error.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { defaultTokenStoreDirectory } from '../../../src/gateway/config/connected-accounts-config.js';
import { loadGatewayConfig } from '../../../src/gateway/config/gateway-config.js';
import { problemsOf } from '../../helpers/configuration-problems.js';

const dir = mkdtempSync(join(tmpdir(), 'connected-config-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const KEY = Buffer.from(Array.from({ length: 32 }, (_, i) => (i * 37 + 11) % 256)).toString('base64url');
const base = { MCP_AUTH_UPSTREAM: 'http://127.0.0.1:3001/mcp', MCP_AUTH_ISSUER: 'http://127.0.0.1:9', HOST: '127.0.0.1', PORT: '0' };
const connected = { ...base, MCP_AUTH_UPSTREAM_AUTH: 'connected', MCP_AUTH_TOKEN_STORE_SECRET: KEY, MCP_AUTH_LOGIN_CLIENT_ID: 'gateway-login' };

describe('connected accounts: settings', () => {
  it('the single upstream in connected mode: no upstream client needed, the store in the state directory by default', () => {
    const config = loadGatewayConfig({ ...connected, XDG_STATE_HOME: dir });
    assert.equal(config.upstreamAuth?.mode, 'connected');
    assert.equal(config.upstreamAuth && 'clientId' in config.upstreamAuth ? config.upstreamAuth.clientId : undefined, undefined);
    assert.deepEqual(config.connectedAccounts?.store, { kind: 'directory', directory: join(dir, 'mcp-oauth-guard', 'tokens') });
    assert.equal(config.connectedAccounts?.login.issuer, base.MCP_AUTH_ISSUER);
    assert.equal(config.connectedAccounts?.lists, 'show');
    assert.equal(config.connectedAccounts?.storeKeys.length, 1);
    assert.equal(defaultTokenStoreDirectory({ XDG_STATE_HOME: 'relative' }).endsWith(join('.local', 'state', 'mcp-oauth-guard', 'tokens')), true, 'a relative XDG_STATE_HOME is ignored, as the XDG rules say');
  });

  it('names every missing or bad setting at once', () => {
    const problems = problemsOf(() => loadGatewayConfig({ ...base, MCP_AUTH_UPSTREAM_AUTH: 'connected', MCP_AUTH_TOKEN_STORE: 'tokens', MCP_AUTH_CONNECT_LISTS: 'maybe' }));
    assert.equal(problems.length, 4, problems.join('\n'));
    assert.match(problems.join('\n'), /MCP_AUTH_TOKEN_STORE: is "tokens"; use an absolute directory path/);
    assert.match(problems.join('\n'), /MCP_AUTH_TOKEN_STORE_SECRET: is required with connected accounts/);
    assert.match(problems.join('\n'), /MCP_AUTH_LOGIN_CLIENT_ID: is required with connected accounts.*\/connect\/callback/);
    assert.match(problems.join('\n'), /MCP_AUTH_CONNECT_LISTS: is "maybe"; use show or hide/);
  });

  it('reads the trusted proxies, and names a bad entry in the one start-up error with the other problems', () => {
    assert.equal(loadGatewayConfig(connected).connectedAccounts?.trustedProxies, '', 'none by default');
    assert.equal(loadGatewayConfig({ ...connected, MCP_AUTH_TRUSTED_PROXIES: '10.0.0.0/8, 192.0.2.7, 2001:db8::/32' }).connectedAccounts?.trustedProxies, '10.0.0.0/8, 192.0.2.7, 2001:db8::/32');
    for (const bad of ['proxy.example', '10.0.0.0/33', '10.0.0.1/8/2', '2001:db8::/129', '10.0.0.0/x']) {
      const problems = problemsOf(() => loadGatewayConfig({ ...connected, MCP_AUTH_CONNECT_LISTS: 'maybe', MCP_AUTH_TRUSTED_PROXIES: `127.0.0.1, ${bad}` }));
      assert.equal(problems.length, 2, problems.join('\n'));
      assert.ok(problems.includes(`MCP_AUTH_TRUSTED_PROXIES: has "${bad}", which is neither an IP address nor a CIDR range (e.g. 10.0.0.0/8 or 2001:db8::/32)`), problems.join('\n'));
    }
    assert.match(problemsOf(() => loadGatewayConfig({ ...base, MCP_AUTH_TRUSTED_PROXIES: '127.0.0.1' })).join('\n'), /MCP_AUTH_TRUSTED_PROXIES: does nothing without an upstream in connected mode/);
  });

  it('refuses a weak key, a Redis store without Redis, a secret without its client, and settings that would do nothing', () => {
    assert.match(problemsOf(() => loadGatewayConfig({ ...connected, MCP_AUTH_TOKEN_STORE_SECRET: 'short' })).join('\n'), /MCP_AUTH_TOKEN_STORE_SECRET: .*openssl rand/);
    assert.match(problemsOf(() => loadGatewayConfig({ ...connected, MCP_AUTH_TOKEN_STORE: 'redis' })).join('\n'), /MCP_AUTH_TOKEN_STORE: is "redis" but MCP_AUTH_REDIS_URL is not set/);
    assert.match(problemsOf(() => loadGatewayConfig({ ...connected, MCP_AUTH_UPSTREAM_CLIENT_SECRET: 's' })).join('\n'), /MCP_AUTH_UPSTREAM_CLIENT_ID: is required when a client secret is set/);
    assert.deepEqual(problemsOf(() => loadGatewayConfig({ ...base, MCP_AUTH_LOGIN_CLIENT_ID: 'x', MCP_AUTH_TOKEN_STORE: '/tmp/x' })), [
      'MCP_AUTH_TOKEN_STORE: does nothing without an upstream in connected mode (MCP_AUTH_UPSTREAM_AUTH=connected, or auth.mode "connected" for a server): unset it',
      'MCP_AUTH_LOGIN_CLIENT_ID: does nothing without an upstream in connected mode (MCP_AUTH_UPSTREAM_AUTH=connected, or auth.mode "connected" for a server): unset it',
    ]);
    assert.equal(loadGatewayConfig({ ...connected, MCP_AUTH_TOKEN_STORE: 'redis', MCP_AUTH_REDIS_URL: 'redis://127.0.0.1:6379' }).connectedAccounts?.store.kind, 'redis');
  });

  it('with several issuers, the login issuer must be named, and be one of them', () => {
    const several = { ...connected, MCP_AUTH_ISSUER: 'http://127.0.0.1:9,http://127.0.0.1:10' };
    assert.match(problemsOf(() => loadGatewayConfig(several)).join('\n'), /MCP_AUTH_LOGIN_ISSUER: is required with several issuers/);
    assert.match(problemsOf(() => loadGatewayConfig({ ...several, MCP_AUTH_LOGIN_ISSUER: 'http://127.0.0.1:11' })).join('\n'), /MCP_AUTH_LOGIN_ISSUER: is "http:\/\/127.0.0.1:11", which is none of the gateway's issuers/);
    assert.equal(loadGatewayConfig({ ...several, MCP_AUTH_LOGIN_ISSUER: 'http://127.0.0.1:10' }).connectedAccounts?.login.issuer, 'http://127.0.0.1:10');
  });

  it('a server of the configuration file in connected mode, beside one that is not', () => {
    const file = join(dir, 'servers.json');
    writeFileSync(
      file,
      JSON.stringify({
        gateway: { issuer: base.MCP_AUTH_ISSUER, loginClientId: 'gateway-login' },
        servers: { crm: { url: 'http://127.0.0.1:3002/mcp', auth: { mode: 'connected', scope: 'crm.read' } }, notes: { url: 'http://127.0.0.1:3001/mcp' } },
      }),
    );
    const config = loadGatewayConfig({ MCP_AUTH_CONFIG: file, HOST: '127.0.0.1', PORT: '0', MCP_AUTH_TOKEN_STORE_SECRET: KEY, XDG_STATE_HOME: dir });
    assert.deepEqual(
      config.servers?.map((s) => [s.name, s.upstreamAuth?.mode]),
      [
        ['crm', 'connected'],
        ['notes', undefined],
      ],
    );
    assert.equal(config.connectedAccounts?.login.clientId, 'gateway-login');
  });
});
