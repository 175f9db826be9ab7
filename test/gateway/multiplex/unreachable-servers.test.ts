// A server whose own requiredScopes the caller lacks is never contacted for that caller: no session opened, no list
// asked, no server/discover, no listen; its items and capabilities are absent, and a call to one of its tools gets
// the policy's 403 naming its scopes. A caller holding them reaches it as usual.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { startAuthorizationServer, type AuthorizationServer } from '../../../examples/dev/authorization-server.js';
import { loadGatewayConfig } from '../../../src/gateway/config/gateway-config.js';
import type { ServerConfig } from '../../../src/gateway/config/server-config.js';
import { startGateway, type RunningGateway } from '../../../src/gateway/server/start-gateway.js';
import { postMcp } from '../../helpers/http-client.js';

const STATELESS = '2026-07-28';
const META = { 'io.modelcontextprotocol/protocolVersion': STATELESS, 'io.modelcontextprotocol/clientCapabilities': {} };
const SCOPES = ['mcp', 'hr', 'hr:admin'];

/** A raw MCP server (2025-11-25 sessions and 2026-07-28) with one tool, `t`, counting every request it gets by method. */
async function countingServer(capability: string): Promise<{ url: string; server: Server; seen: string[] }> {
  const seen: string[] = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      const message = body ? (JSON.parse(body) as { id?: number; method: string }) : { method: req.method ?? '' };
      seen.push(message.method);
      if (message.id === undefined) return void res.writeHead(202).end();
      const capabilities = { tools: { listChanged: true }, [capability]: {} };
      const results: Record<string, unknown> = {
        initialize: { protocolVersion: '2025-11-25', capabilities, serverInfo: { name: capability, version: '1' }, instructions: `Use ${capability}.` },
        'server/discover': { resultType: 'complete', supportedVersions: [STATELESS], capabilities, serverInfo: { name: capability, version: '1' } },
        'tools/list': { resultType: 'complete', tools: [{ name: 't', inputSchema: { type: 'object' } }] },
        'tools/call': { resultType: 'complete', content: [{ type: 'text', text: capability }] },
      };
      const text = JSON.stringify({ jsonrpc: '2.0', id: message.id, result: results[message.method] ?? {} });
      res.writeHead(200, { 'content-type': 'application/json', ...(message.method === 'initialize' ? { 'mcp-session-id': `${capability}-1` } : {}) }).end(text);
    });
  }).listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`, server, seen };
}

let as: AuthorizationServer;
let gateway: RunningGateway;
let open: Awaited<ReturnType<typeof countingServer>>;
let hr: Awaited<ReturnType<typeof countingServer>>;

before(async () => {
  as = await startAuthorizationServer({ extraScopes: SCOPES });
  open = await countingServer('x-open');
  hr = await countingServer('x-hr');
  const config = loadGatewayConfig({ MCP_AUTH_ISSUER: as.issuer, HOST: '127.0.0.1', PORT: '0' }, { upstreamRequired: false });
  const servers: ServerConfig[] = [
    { name: 'open', transport: 'http', proxy: { upstream: open.url }, required: false },
    // Its own hierarchy: hr:admin implies hr, for its rules only.
    { name: 'hr', transport: 'http', proxy: { upstream: hr.url }, required: false, policy: { requiredScopes: ['hr'], scopeHierarchy: { 'hr:admin': ['hr'] } } },
  ];
  gateway = await startGateway({ ...config, servers, listTimeoutMs: 2_000 }, { log: () => {}, warn: () => {} });
  as.addResource(gateway.resource, { scopes: SCOPES });
});
after(async () => {
  await gateway?.shutdown();
  open?.server.close();
  hr?.server.close();
  await as?.close();
});

async function stateless(scope: string, method: string, params: Record<string, unknown> = {}) {
  const token = await as.issueAccessToken({ resource: gateway.resource, scope, sub: 'alice' });
  const name: Record<string, string> = typeof params.name === 'string' ? { 'mcp-name': params.name } : {};
  return postMcp(`${gateway.url}/mcp`, { jsonrpc: '2.0', id: 1, method, params: { ...params, _meta: META } }, token, { 'mcp-protocol-version': STATELESS, 'mcp-method': method, ...name });
}

const toolNames = (answer: { json: any }): string[] => answer.json.result.tools.map((t: { name: string }) => t.name);

describe('a server whose own requiredScopes the caller lacks', () => {
  it('is not asked for server/discover or a merged list (2026-07-28), and its items and capabilities are absent', async () => {
    const discovered = await stateless('mcp', 'server/discover');
    assert.equal(discovered.status, 200, discovered.text);
    assert.ok('x-open' in discovered.json.result.capabilities);
    assert.ok(!('x-hr' in discovered.json.result.capabilities), 'the capabilities of a server the caller may not use are absent');
    const listed = await stateless('mcp', 'tools/list');
    assert.equal(listed.status, 200, listed.text);
    assert.deepEqual(toolNames(listed), ['open__t']);
    assert.deepEqual(hr.seen, [], 'the server was never contacted for this caller');
    assert.ok(open.seen.includes('tools/list'));
  });

  it('gets the policy\'s 403 naming its scopes for a call to one of its tools, without a request to it', async () => {
    const denied = await stateless('mcp', 'tools/call', { name: 'hr__t', arguments: {} });
    assert.equal(denied.status, 403, denied.text);
    assert.match(String(denied.headers['www-authenticate']), /error="insufficient_scope".*scope="[^"]*\bhr\b/);
    assert.deepEqual(hr.seen, []);
  });

  it('opens no session with it at initialize or on a list within the client\'s session (2025-11-25)', async () => {
    const token = await as.issueAccessToken({ resource: gateway.resource, scope: 'mcp', sub: 'bob' });
    const init = await postMcp(`${gateway.url}/mcp`, { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } } }, token);
    assert.equal(init.status, 200, init.text);
    assert.ok(!('x-hr' in init.json.result.capabilities));
    assert.doesNotMatch(String(init.json.result.instructions ?? ''), /x-hr/);
    const headers = { 'mcp-session-id': String(init.headers['mcp-session-id']), 'mcp-protocol-version': '2025-11-25' };
    const listed = await postMcp(`${gateway.url}/mcp`, { jsonrpc: '2.0', id: 2, method: 'tools/list' }, token, headers);
    assert.deepEqual(toolNames(listed), ['open__t']);
    const level = await postMcp(`${gateway.url}/mcp`, { jsonrpc: '2.0', id: 3, method: 'logging/setLevel', params: { level: 'info' } }, token, headers);
    assert.equal(level.status, 200, level.text);
    assert.deepEqual(hr.seen, []);
    assert.ok(open.seen.includes('initialize'));
  });

  it('is reached as usual by a caller holding its scopes (under its own hierarchy)', async () => {
    const listed = await stateless('mcp hr:admin', 'tools/list');
    assert.deepEqual(toolNames(listed), ['open__t', 'hr__t']);
    const called = await stateless('mcp hr', 'tools/call', { name: 'hr__t', arguments: {} });
    assert.equal(called.status, 200, called.text);
    assert.equal(called.json.result.content[0].text, 'x-hr');
    assert.ok(hr.seen.includes('tools/list') && hr.seen.includes('tools/call'), hr.seen.join(','));
  });
});
