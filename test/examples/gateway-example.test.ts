// examples/gateway/: the plain node:http upstream behind the gateway, configured with the flags its README
// shows and its policy.json, against the test authorization server.
import assert from 'node:assert/strict';
import type { Server } from 'node:http';
import { fileURLToPath } from 'node:url';
import { after, before, describe, test } from 'node:test';
import { startUpstreamServer } from '../../examples/gateway/upstream-server.js';
import { loadGatewayConfig, parseGatewayArgs } from '../../src/gateway/config/gateway-config.js';
import { startGateway, type RunningGateway } from '../../src/gateway/server/start-gateway.js';
import { startAuthorizationServer, type AuthorizationServer } from '../../examples/dev/authorization-server.js';
import { postMcp, send } from '../helpers/http-client.js';

const POLICY = fileURLToPath(new URL('../../examples/gateway/policy.json', import.meta.url));
const COUNTER_SCOPES = ['counter:read', 'counter:write', 'counter:admin'];

let as: AuthorizationServer;
let upstream: { url: string; server: Server };
let gateway: RunningGateway;
let mcp: string;
const toolCall = (name: string) => ({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name, arguments: {} } });
const textOf = (answer: { json: any }): string => answer.json.result.content[0].text;

describe('examples/gateway', () => {
  before(async () => {
    as = await startAuthorizationServer({ extraScopes: COUNTER_SCOPES });
    upstream = await startUpstreamServer('127.0.0.1', 0);
    // The README's flags, with this test's issuer and a free port.
    const args = parseGatewayArgs(
      ['--upstream', upstream.url, '--issuer', as.issuer, '--policy', POLICY, '--challenge-scopes', 'counter:read', '--identity-headers', 'on', '--port', '0'],
      {},
    );
    assert.equal(args.help, false);
    gateway = await startGateway(loadGatewayConfig(args.help ? {} : args.settings), { log: () => {}, warn: () => {} });
    mcp = gateway.resource;
    as.addResource(mcp, { scopes: COUNTER_SCOPES });
  });

  after(async () => {
    await gateway?.shutdown();
    upstream?.server.closeAllConnections();
    upstream?.server.close();
    await as?.close();
  });

  test('the upstream alone: JSON answers, 202 for notifications, 405 for GET, no authentication', async () => {
    const list = await postMcp(upstream.url, { jsonrpc: '2.0', id: 1, method: 'tools/list' });
    assert.equal(list.status, 200);
    assert.deepEqual(list.json.result.tools.map((t: { name: string }) => t.name), ['whoami', 'counter_get', 'counter_increment']);
    assert.equal((await postMcp(upstream.url, { jsonrpc: '2.0', method: 'notifications/initialized' })).status, 202);
    assert.equal((await send(upstream.url, { method: 'GET' })).status, 405);
    assert.equal((await postMcp(upstream.url, { jsonrpc: '2.0', id: 1, method: 'nope' })).json.error.code, -32601);
  });

  test('without a token: 401 asking for counter:read', async () => {
    const answer = await postMcp(mcp, { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } } });
    assert.equal(answer.status, 401);
    assert.match(String(answer.headers['www-authenticate']), /scope="counter:read"/);
  });

  test('counter:read: tools filtered by policy.json, identity headers instead of the token, 403 to increment', async () => {
    const token = await as.issueAccessToken({ resource: mcp, scope: 'counter:read', sub: 'alice' });
    const init = await postMcp(mcp, { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } } }, token);
    assert.equal(init.status, 200);
    assert.equal(init.json.result.serverInfo.name, 'gateway-example-upstream');
    const list = await postMcp(mcp, { jsonrpc: '2.0', id: 1, method: 'tools/list' }, token);
    assert.deepEqual(list.json.result.tools.map((t: { name: string }) => t.name), ['whoami', 'counter_get']);
    assert.match(textOf(await postMcp(mcp, toolCall('whoami'), token)), /^subject alice, client \S+, scopes counter:read, issuer \S+$/);
    assert.equal(textOf(await postMcp(mcp, toolCall('counter_get'), token)), 'counter: 0');
    const refused = await postMcp(mcp, toolCall('counter_increment'), token);
    assert.equal(refused.status, 403);
    assert.match(String(refused.headers['www-authenticate']), /error="insufficient_scope"/);
  });

  test('counter:write implies counter:read and may increment', async () => {
    const token = await as.issueAccessToken({ resource: mcp, scope: 'counter:write', sub: 'bob' });
    assert.equal(textOf(await postMcp(mcp, toolCall('counter_increment'), token)), 'counter: 1');
    assert.equal(textOf(await postMcp(mcp, toolCall('counter_get'), token)), 'counter: 1');
  });
});
