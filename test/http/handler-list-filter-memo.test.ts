// A handler's own list filter (the gateway's pins) may change while a list answer is awaited. A filtered answer is
// reused and kept only under the filter key it was filtered with: one filtered before a change is never served after
// it, and one filtered after a change is never kept under the key read before it. Real parts: an HTTP server with the
// request pipeline, a real guard, tokens signed with real keys.
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { createGuard } from '../../src/core/guard/create-guard.js';
import type { JsonRpcMessage } from '../../src/core/wire/jsonrpc.js';
import { httpHandler, type HandlerListFilter, type McpHttpHandler } from '../../src/http/http-handler.js';
import { createRequestPipeline } from '../../src/http/request-pipeline.js';
import { startTestIssuer, type TestIssuer } from '../helpers/fake-issuer.js';
import { postMcp } from '../helpers/http-client.js';

const TOOLS = [{ name: 'open' }, { name: 'secret' }];

/** What the handler's filter does now: hide `secret` or show every tool. Its key says which. */
let hiding = false;
/** Runs once the upstream has the request and before it answers: a test changes the filter there. */
let whileAwaited: (() => void) | undefined;

const listFilter: HandlerListFilter = {
  filter(response: JsonRpcMessage): JsonRpcMessage {
    const result = (response as { result?: { tools?: { name: string }[] } }).result;
    if (!hiding || !Array.isArray(result?.tools)) return response;
    return { ...response, result: { ...result, tools: result.tools.filter((tool) => tool.name !== 'secret') } } as JsonRpcMessage;
  },
  key: () => (hiding ? 'hiding' : 'showing'),
};

const handler: McpHttpHandler = {
  ...httpHandler((req, res) => {
    const id = (req.body as { id?: unknown }).id;
    // The same bytes every time: the memo would reuse a filtered form of them.
    setTimeout(() => {
      whileAwaited?.();
      whileAwaited = undefined;
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id, result: { tools: TOOLS } }));
    }, 20);
  }),
  listFilter,
};

describe('the list-answer memo with a handler list filter whose key moves', () => {
  let issuer: TestIssuer;
  let server: Server;
  let url: string;
  let token: string;

  before(async () => {
    issuer = await startTestIssuer();
    server = createServer();
    server.listen(0, '127.0.0.1');
    await new Promise<void>((resolve) => server.once('listening', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`;
    const pipeline = createRequestPipeline(createGuard({ issuer: issuer.issuer, resource: url }), handler);
    server.on('request', (req, res) => {
      if (!pipeline.serve(req, res)) res.writeHead(404).end();
    });
    token = await issuer.sign({ aud: url, sub: 'alice', client_id: 'c' });
  });
  after(async () => {
    server?.closeAllConnections();
    await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
    await issuer?.close();
  });

  async function listed(): Promise<string[]> {
    const answer = await postMcp(url, { jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} }, token);
    assert.equal(answer.status, 200, answer.text);
    return ((answer.json as { result: { tools: { name: string }[] } }).result.tools ?? []).map((tool) => tool.name);
  }

  test('an answer filtered before the key moved is not served after it', async () => {
    // A memo entry filtered while hiding: kept, and reused, as a rewritten answer.
    hiding = true;
    assert.deepEqual(await listed(), ['open']);
    // Asked while hiding; the filter shows everything again before the answer arrives.
    whileAwaited = () => (hiding = false);
    assert.deepEqual(await listed(), ['open', 'secret'], 'served the answer filtered under the key read when the request arrived');
  });

  test('an answer filtered after the key moved is not kept under the key read before', async () => {
    hiding = false;
    // Asked while showing; the filter hides before the answer arrives: filtered hiding, never kept as showing.
    whileAwaited = () => (hiding = true);
    assert.deepEqual(await listed(), ['open']);
    hiding = false;
    assert.deepEqual(await listed(), ['open', 'secret'], 'served an answer filtered while hiding under the showing key');
  });
});
