// The gateway's issuers, read one way by every part that needs them (the login issuer, the upstream credentials).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { gatewayIssuers } from '../../../src/gateway/config/gateway-issuers.js';
import { loadConnectedAccountsConfig } from '../../../src/gateway/config/connected-accounts-config.js';
import { ConfigurationProblems } from '../../../src/core/kernel/configuration-problems.js';
import { loadUpstreamAuth } from '../../../src/gateway/upstream-auth/upstream-auth-config.js';

describe('gatewayIssuers', () => {
  it('is the list when several are given, else the one issuer, else none', () => {
    assert.deepEqual(gatewayIssuers({ issuers: ['https://a.example', 'https://b.example'] }), ['https://a.example', 'https://b.example']);
    assert.deepEqual(gatewayIssuers({ issuer: 'https://a.example' }), ['https://a.example']);
    assert.deepEqual(gatewayIssuers({}), []);
    assert.deepEqual(gatewayIssuers(undefined), []);
  });

  it('is what the login issuer and the upstream credentials read', () => {
    const guard = { resource: 'https://mcp.example/mcp', issuers: ['https://a.example', 'https://b.example'] };
    const problems = new ConfigurationProblems();
    const settings = { MCP_AUTH_LOGIN_CLIENT_ID: 'login', MCP_AUTH_LOGIN_ISSUER: 'https://b.example', MCP_AUTH_TOKEN_STORE_SECRET: Buffer.from(Array.from({ length: 32 }, (_, i) => (i * 37 + 11) % 256)).toString('base64url') };
    const connected = loadConnectedAccountsConfig(settings, problems, { connected: [''], guard, env: { XDG_STATE_HOME: '/tmp/state' } });
    assert.equal(connected?.login.issuer, 'https://b.example');
    const upstream = loadUpstreamAuth({ MCP_AUTH_UPSTREAM_AUTH: 'connected', MCP_AUTH_UPSTREAM: 'https://notes.example/mcp' }, guard);
    assert.deepEqual(upstream && 'gatewayIssuers' in upstream ? upstream.gatewayIssuers : undefined, gatewayIssuers(guard));
  });
});
