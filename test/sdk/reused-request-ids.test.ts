/**
 * A reused JSON-RPC id behind the middleware: `mcpOAuthGuard` with the SDK adapter (stateful) in front of an SDK
 * `McpServer` whose resource-template list answers late, with real tokens from the test authorization server.
 * The SDK moves a reused id to the newest request's stream, so the list answer goes out on a tool call's.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { McpServer, ResourceTemplate } from '@modelcontextprotocol/sdk/server/mcp.js';
import { listenWithGuard, type GuardedServer } from '../../examples/serve-guarded.js';
import { mcpOAuthGuard } from '../../src/index.js';
import { sdkStreamableHttpHandler, type SdkStreamableHttpHandler } from '../../src/sdk/index.js';
import { eventStreamData } from '../../src/core/wire/event-stream.js';
import { startTestIssuer, type TestIssuer } from '../helpers/fake-issuer.js';

const VERSION = '2025-11-25';
const POLICY = {
  scopesSupported: ['mcp:basic', 'mcp:admin'],
  requiredScopes: ['mcp:basic'],
  tools: { '*': [] },
  resources: { '*': [], 'docs://private/{name}': ['mcp:admin'] },
};

let issuer: TestIssuer;
let server: GuardedServer;
let handler: SdkStreamableHttpHandler;
let token: string;

function buildServer(): McpServer {
  const mcp = new McpServer({ name: 'docs', version: '1' });
  mcp.registerTool('slow', { description: 'answers late' }, async () => {
    await new Promise((r) => setTimeout(r, 1_500));
    return { content: [{ type: 'text', text: 'done' }] };
  });
  mcp.registerResource(
    'docs',
    new ResourceTemplate('docs://{area}/{name}', {
      list: async () => {
        await new Promise((r) => setTimeout(r, 400));
        return { resources: [{ uri: 'docs://public/readme', name: 'readme' }, { uri: 'docs://private/plan', name: 'plan' }] };
      },
    }),
    {},
    async (uri) => ({ contents: [{ uri: uri.href, text: 'text' }] }),
  );
  return mcp;
}

function post(sessionId: string | undefined, body: unknown, signal?: AbortSignal): Promise<Response> {
  return fetch(server.url, {
    method: 'POST',
    headers: {
      Authorization: `Bearer ${token}`,
      'Content-Type': 'application/json',
      Accept: 'application/json, text/event-stream',
      'MCP-Protocol-Version': VERSION,
      ...(sessionId ? { 'Mcp-Session-Id': sessionId } : {}),
    },
    body: JSON.stringify(body),
    signal: signal ?? AbortSignal.timeout(10_000),
  });
}

async function openSession(): Promise<string> {
  const res = await post(undefined, { jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: VERSION, capabilities: {}, clientInfo: { name: 't', version: '1' } } });
  assert.equal(res.status, 200);
  await res.text();
  const sessionId = res.headers.get('mcp-session-id')!;
  await (await post(sessionId, { jsonrpc: '2.0', method: 'notifications/initialized' })).text();
  return sessionId;
}

async function messages(res: Response): Promise<Record<string, any>[]> {
  const text = await res.text();
  if ((res.headers.get('content-type') ?? '').startsWith('application/json')) return [JSON.parse(text)];
  return eventStreamData(text).filter((d) => d !== '').map((d) => JSON.parse(d));
}

describe('the SDK adapter and a reused request id', { timeout: 30_000 }, () => {
  before(async () => {
    issuer = await startTestIssuer();
    handler = sdkStreamableHttpHandler({ createServer: buildServer, stateful: true });
    server = await listenWithGuard('127.0.0.1', 0, (resource) => mcpOAuthGuard({ issuer: issuer.issuer, resource, policy: POLICY, handler }));
    await server.router.guard.ready();
    token = await issuer.sign({ aud: server.url, scope: 'mcp:basic', sub: 'alice', client_id: 'client-1' });
  });
  after(async () => {
    await handler?.close();
    await server?.close();
    await issuer?.close();
  });

  it('refuses a request whose id is in use by a request of the session still in progress', async () => {
    const sessionId = await openSession();
    const list = post(sessionId, { jsonrpc: '2.0', id: 9, method: 'resources/list' });
    await new Promise((r) => setTimeout(r, 100));
    const call = await post(sessionId, { jsonrpc: '2.0', id: 9, method: 'tools/call', params: { name: 'slow', arguments: {} } });
    assert.equal(call.status, 400);
    const refusal = (await call.json()) as { id: number; error: { code: number; message: string } };
    assert.equal(refusal.id, 9);
    assert.equal(refusal.error.code, -32600);
    const listed = await messages(await list);
    assert.deepEqual(listed.map((m) => m.result.resources.map((r: { uri: string }) => r.uri)), [['docs://public/readme']]);
  });

  it('a list answer the SDK sends on a tool call\'s stream (the list\'s client left) is filtered by its shape', async () => {
    const sessionId = await openSession();
    const controller = new AbortController();
    const list = post(sessionId, { jsonrpc: '2.0', id: 9, method: 'resources/list' }, controller.signal).catch(() => undefined);
    await new Promise((r) => setTimeout(r, 100));
    controller.abort();
    await list;
    await new Promise((r) => setTimeout(r, 50));
    const call = await post(sessionId, { jsonrpc: '2.0', id: 9, method: 'tools/call', params: { name: 'slow', arguments: {} } });
    assert.equal(call.status, 200);
    const carried = await messages(call);
    const lists = carried.filter((m) => Array.isArray(m.result?.resources));
    assert.equal(lists.length, 1, JSON.stringify(carried));
    assert.deepEqual(lists[0]!.result.resources.map((r: { uri: string }) => r.uri), ['docs://public/readme']);
  });
});
