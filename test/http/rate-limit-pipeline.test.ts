// Rate limits through the node:http pipeline, in memory: 429 with Retry-After and a JSON-RPC error carrying the
// request's id, the decision hook told rate_limited, per-tool limits, GET counted and DELETE never refused.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { createGuard } from '../../src/core/guard/create-guard.js';
import type { DecisionEvent } from '../../src/core/kernel/decision.js';
import { RATE_LIMITED_JSONRPC_CODE } from '../../src/core/kernel/errors.js';
import { httpHandler } from '../../src/http/http-handler.js';
import { createRequestPipeline } from '../../src/http/request-pipeline.js';
import { startTestIssuer, type TestIssuer } from '../helpers/fake-issuer.js';
import { postMcp, send } from '../helpers/http-client.js';

let issuer: TestIssuer;
let server: Server;
let url: string;
let handled = 0;
const decisions: DecisionEvent[] = [];
const RESOURCE = 'https://mcp.example.com/mcp';

before(async () => {
  issuer = await startTestIssuer();
  const guard = createGuard({
    issuer: issuer.issuer,
    resource: RESOURCE,
    rateLimit: '4/min',
    policy: { rateLimits: { tools: { notes_add: '1/min' } } },
    onDecision: (event) => decisions.push(event),
  });
  const pipeline = createRequestPipeline(
    guard,
    httpHandler((req, res) => {
      handled++;
      const id = (req.body as { id?: unknown } | undefined)?.id ?? null;
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id, result: {} }));
    }),
  );
  server = createServer((req, res) => {
    if (!pipeline.serve(req, res)) res.writeHead(404).end();
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`;
});
after(async () => {
  server?.closeAllConnections();
  server?.close();
  await issuer?.close();
});

const token = (sub: string) => issuer.sign({ aud: RESOURCE, sub, client_id: 'app' });
const call = (id: number | string, name: string) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: {} } });
const V = { 'mcp-protocol-version': '2025-11-25' };

describe('rate limits in the request pipeline', () => {
  test('a per-tool limit: 429, Retry-After, the JSON-RPC id, rate_limited, and the handler never called', async () => {
    const alice = await token('alice');
    assert.equal((await postMcp(url, call(1, 'notes_add'), alice, V)).status, 200);
    const before = handled;
    decisions.length = 0;
    const refused = await postMcp(url, call('second', 'notes_add'), alice, V);
    assert.equal(refused.status, 429, refused.text);
    assert.ok(Number(refused.headers['retry-after']) >= 1 && Number(refused.headers['retry-after']) <= 60);
    assert.equal(refused.json.id, 'second');
    assert.equal(refused.json.error.code, RATE_LIMITED_JSONRPC_CODE);
    assert.match(refused.json.error.message, /notes_add/);
    assert.equal(handled, before);
    assert.deepEqual(decisions.map((d) => [d.decision, d.reason, d.status, d.subject]), [['deny', 'rate_limited', 429, 'alice']]);
    // Another caller, and another tool of the same caller, are not affected.
    assert.equal((await postMcp(url, call(3, 'notes_add'), await token('bob'), V)).status, 200);
    assert.equal((await postMcp(url, call(4, 'notes_list'), alice, V)).status, 200);
  });

  test('the caller-wide limit counts every request, GET included; DELETE is never refused', async () => {
    const carol = await token('carol');
    const auth = { authorization: `Bearer ${carol}`, ...V };
    assert.equal((await postMcp(url, call(1, 'notes_list'), carol, V)).status, 200);
    assert.equal((await send(url, { method: 'GET', headers: { ...auth, accept: 'text/event-stream' } })).status, 200);
    assert.equal((await postMcp(url, { jsonrpc: '2.0', method: 'notifications/initialized' }, carol, V)).status, 200);
    assert.equal((await postMcp(url, call(2, 'notes_list'), carol, V)).status, 200);
    const refused = await postMcp(url, call(5, 'notes_list'), carol, V);
    assert.equal(refused.status, 429);
    assert.equal(refused.json.id, 5);
    assert.equal((await send(url, { method: 'GET', headers: { ...auth, accept: 'text/event-stream' } })).status, 429);
    assert.equal((await send(url, { method: 'DELETE', headers: auth })).status, 200);
  });

  test('a refused token is refused as before, not counted', async () => {
    assert.equal((await postMcp(url, call(1, 'notes_add'), 'not-a-token', V)).status, 401);
  });
});
