// Under MCP 2026-07-28, which HTTP status a JSON-RPC error goes out with, end to end through the pipeline: a
// request missing its required _meta fields is refused by the guard with 400 and -32602, as `basic/index` requires;
// a handler's own -32602 (here an unknown tool) is an ordinary JSON-RPC answer with 200, as a 4xx without a modern
// error would send a dual-era client back to `initialize` (`basic/versioning`); -32601 from a handler is 404.
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { after, before, describe, test } from 'node:test';
import { createGuard } from '../../src/core/guard/create-guard.js';
import { jsonRpcError, type JsonRpcMessage } from '../../src/core/wire/jsonrpc.js';
import { createRequestPipeline } from '../../src/http/request-pipeline.js';
import { startTestIssuer, type TestIssuer } from '../helpers/fake-issuer.js';
import { send } from '../helpers/http-client.js';
import { closeServer, listenOnLoopback } from '../helpers/loopback-server.js';

const REVISION = '2026-07-28';
const META = { 'io.modelcontextprotocol/protocolVersion': REVISION, 'io.modelcontextprotocol/clientCapabilities': {} };

let issuer: TestIssuer;
let server: Server;
let url: string;
let resource: string;
let handled = 0;

before(async () => {
  issuer = await startTestIssuer();
  server = createServer();
  const origin = await listenOnLoopback(server);
  resource = `${origin}/mcp`;
  const pipeline = createRequestPipeline(createGuard({ issuer: issuer.issuer, resource }), (message: JsonRpcMessage) => {
    handled++;
    const { id, method, params } = message as { id: number; method: string; params: { name?: string } };
    if (method === 'tools/call') return jsonRpcError(id, -32602, `Invalid params: no tool named ${params.name}`);
    return jsonRpcError(id, -32601, 'Method not found');
  });
  server.on('request', (req, res) => {
    if (!pipeline.serve(req, res)) res.writeHead(404).end();
  });
  url = resource;
});
after(async () => {
  if (server) closeServer(server);
  await issuer?.close();
});

async function post(method: string, params: Record<string, unknown>, name?: string) {
  const token = await issuer.sign({ aud: resource, sub: 'alice', scope: 'mcp' });
  return send(url, {
    headers: {
      authorization: `Bearer ${token}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': REVISION,
      'mcp-method': method,
      ...(name !== undefined ? { 'mcp-name': name } : {}),
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 7, method, params }),
  });
}

describe('2026-07-28: the HTTP status of JSON-RPC errors', () => {
  test("a handler's -32602 goes out with 200", async () => {
    handled = 0;
    const res = await post('tools/call', { name: 'nope', arguments: {}, _meta: META }, 'nope');
    assert.equal(handled, 1);
    assert.equal(res.status, 200, res.text);
    assert.equal(res.headers['content-type'], 'application/json');
    assert.deepEqual(res.json, { jsonrpc: '2.0', id: 7, error: { code: -32602, message: 'Invalid params: no tool named nope' } });
  });

  test('a request missing its required _meta is refused by the guard with 400 and -32602, before the handler', async () => {
    handled = 0;
    const res = await post('tools/call', { name: 'nope', arguments: {} }, 'nope');
    assert.equal(handled, 0);
    assert.equal(res.status, 400, res.text);
    assert.equal(res.json.id, 7);
    assert.equal(res.json.error.code, -32602);
  });

  test("a handler's -32601 goes out with 404", async () => {
    const res = await post('sampling/unknown', { _meta: META });
    assert.equal(res.status, 404, res.text);
    assert.equal(res.json.error.code, -32601);
  });
});
