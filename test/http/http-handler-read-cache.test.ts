// A resources/read answer an HTTP handler writes itself is kept out of shared caches when the resource is restricted.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type { ServerResponse } from 'node:http';
import { startAuthorizationServer, type AuthorizationServer } from '../../examples/dev/authorization-server.js';
import { httpHandler, type GuardedRequest } from '../../src/index.js';
import { startGuardedApp, type GuardedApp } from '../helpers/guarded-app.js';
import { postMcp } from '../helpers/http-client.js';

let as: AuthorizationServer;
let app: GuardedApp;
let adminToken: string;

function inner(req: GuardedRequest, res: ServerResponse): void {
  const message = req.body as unknown as { id: number; params: { uri: string } };
  const result = { contents: [{ uri: message.params.uri, text: 'content' }], cacheScope: 'public', ttlMs: 60_000 };
  if (req.headers['x-answer'] === 'sse') {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.end(`event: message\ndata: ${JSON.stringify({ jsonrpc: '2.0', id: message.id, result })}\n\n`);
    return;
  }
  res.setHeader('content-type', 'application/json');
  res.end(JSON.stringify({ jsonrpc: '2.0', id: message.id, result }));
}

before(async () => {
  as = await startAuthorizationServer();
  app = await startGuardedApp((origin) => ({
    issuer: as.issuer,
    resource: `${origin}/mcp`,
    policy: { scopesSupported: ['x:admin'], resources: { 'admin://config': ['x:admin'], '*': [] } },
    handler: httpHandler(inner, { supportsGet: false, supportsDelete: false }),
  }));
  as.addResource(app.url, { scopes: ['x:admin'] });
  adminToken = await as.issueAccessToken({ resource: app.url, scope: 'x:admin', sub: 'root' });
});
after(async () => {
  await app?.close();
  await as?.close();
});

const meta = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} };
const read = (uri: string, answer: 'json' | 'sse') =>
  postMcp(app.url, { jsonrpc: '2.0', id: 1, method: 'resources/read', params: { uri, _meta: meta } }, adminToken, {
    'mcp-protocol-version': '2026-07-28',
    'mcp-method': 'resources/read',
    'mcp-name': uri,
    'x-answer': answer,
  });

function resultOf(text: string, contentType: string | string[] | undefined): { cacheScope: string; ttlMs: number } {
  if (String(contentType).startsWith('text/event-stream')) return JSON.parse(text.slice(text.indexOf('data: ') + 6)).result;
  return JSON.parse(text).result;
}

test('a restricted resource answered as public (JSON or SSE) reaches the client as private', async () => {
  for (const answer of ['json', 'sse'] as const) {
    const res = await read('admin://config', answer);
    assert.equal(res.status, 200, answer);
    const result = resultOf(res.text, res.headers['content-type']);
    assert.equal(result.cacheScope, 'private', answer);
    assert.equal(result.ttlMs, 60_000, answer);
  }
});

test('an unrestricted resource keeps the cache scope the server chose', async () => {
  const res = await read('public://readme', 'json');
  assert.equal(resultOf(res.text, res.headers['content-type']).cacheScope, 'public');
});
