import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { AuthInfo } from '../../src/core/auth-info.js';
import { compilePolicy } from '../../src/core/compile-policy.js';
import type { JsonRpcMessage } from '../../src/core/jsonrpc.js';
import { answering, createResponseFilter, filterJsonText, inferRequest, isFilteredMethod, requestForReplay } from '../../src/core/response-filter.js';

const policy = compilePolicy({ requiredScopes: ['base'], tools: { secret: ['admin'] }, resources: { 'mem://private/{id}': ['admin'] } });
const filter = createResponseFilter(policy);
const auth: AuthInfo = { token: 't', clientId: 'c', scopes: ['base'], extra: { sub: 'u', claims: {}, tokenType: 'jwt' } };
const read = (uri?: string): JsonRpcMessage => ({ jsonrpc: '2.0', id: 1, method: 'resources/read', params: uri === undefined ? {} : { uri } });
const publicRead = { jsonrpc: '2.0' as const, id: 1, result: { contents: [], cacheScope: 'public' } };

test('the filtered methods are the four lists and resources/read', () => {
  for (const m of ['tools/list', 'prompts/list', 'resources/list', 'resources/templates/list', 'resources/read']) assert.equal(isFilteredMethod(m), true, m);
  for (const m of ['tools/call', 'prompts/get', 'initialize', 42]) assert.equal(isFilteredMethod(m), false, String(m));
});

test('a public read stays public when the base scopes suffice, and becomes private when the resource needs more', () => {
  assert.equal(filter(read('mem://open'), publicRead, auth), publicRead);
  assert.deepEqual(filter(read('mem://private/x'), publicRead, auth), { ...publicRead, result: { contents: [], cacheScope: 'private' } });
});

test('a public read whose request was not kept (no URI) becomes private: fail closed', () => {
  assert.deepEqual(filter(read(), publicRead, auth), { ...publicRead, result: { contents: [], cacheScope: 'private' } });
});

test('list items the caller may not use are removed; other ids and methods pass unchanged', () => {
  const list = { jsonrpc: '2.0' as const, id: 1, result: { tools: [{ name: 'open' }, { name: 'secret' }] } };
  const filtered = filter({ jsonrpc: "2.0", id: 1, method: "tools/list" }, list, auth) as unknown as { result: { tools: unknown[] } };
  assert.deepEqual(filtered.result.tools, [{ name: 'open' }]);
  assert.equal(filter({ jsonrpc: '2.0', id: '1', method: 'tools/list' }, list, auth), list, 'id 1 and "1" differ');
  assert.equal(filter({ jsonrpc: '2.0', id: 1, method: 'tools/call' }, list, auth), list);
});

test('filterJsonText rewrites the matching response in a message or a batch, and leaves non-JSON alone', () => {
  const request: JsonRpcMessage = { jsonrpc: '2.0', id: 7, method: 'tools/list' };
  const body = JSON.stringify([{ jsonrpc: '2.0', method: 'notifications/progress' }, { jsonrpc: '2.0', id: 7, result: { tools: [{ name: 'secret' }] } }]);
  const out = filterJsonText(body, answering(request), (req, res) => filter(req, res, auth));
  assert.deepEqual(JSON.parse(out!)[1].result.tools, []);
  assert.equal(filterJsonText('not json', answering(request), (req, res) => filter(req, res, auth)), undefined);
  assert.equal(filterJsonText(JSON.stringify({ jsonrpc: '2.0', id: 8, result: { tools: [] } }), answering(request), (req, res) => filter(req, res, auth)), undefined);
});

test('requestForReplay keeps only method, id, the URI of a read and the protocol version', () => {
  const kept = requestForReplay({ jsonrpc: '2.0', id: 1, method: 'resources/read', params: { uri: 'mem://a', other: 'x'.repeat(100), _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', big: 'y' } } });
  assert.deepEqual(kept, { jsonrpc: '2.0', id: 1, method: 'resources/read', params: { uri: 'mem://a', _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28' } } });
  assert.deepEqual(requestForReplay({ jsonrpc: '2.0', id: 1, method: 'resources/read', params: { uri: 'x'.repeat(5000) } }), { jsonrpc: '2.0', id: 1, method: 'resources/read', params: {} });
});

test('inferRequest recognises list and read answers by shape', () => {
  assert.deepEqual(inferRequest(3, { result: { prompts: [] } }), { jsonrpc: '2.0', id: 3, method: 'prompts/list' });
  assert.deepEqual(inferRequest(3, { result: { contents: [] } }), { jsonrpc: '2.0', id: 3, method: 'resources/read', params: {} });
  assert.equal(inferRequest(3, { result: { content: [] } }), undefined);
  assert.equal(inferRequest(3, { error: {} }), undefined);
});
