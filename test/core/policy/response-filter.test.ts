import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { AuthInfo } from '../../../src/core/kernel/auth-info.js';
import { compilePolicy } from '../../../src/core/policy/compile-policy.js';
import type { JsonRpcMessage } from '../../../src/core/wire/jsonrpc.js';
import { answerRewrites, createResponseFilter, filterJsonText, filterMessage, isFilteredMethod, mayNeedFiltering, UNFILTERABLE, UNKNOWN_REQUEST } from '../../../src/core/policy/response-filter.js';

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

test('a public read whose request is not known (a replay) or is another method becomes private: fail closed', () => {
  const privateRead = { ...publicRead, result: { contents: [], cacheScope: 'private' } };
  assert.deepEqual(filter(read(), publicRead, auth), privateRead);
  assert.deepEqual(filter(UNKNOWN_REQUEST, publicRead, auth), privateRead);
  assert.deepEqual(filter({ jsonrpc: '2.0', id: 1, method: 'tools/call' }, publicRead, auth), privateRead, 'a read answer carried by a call with the same id');
  assert.deepEqual(filter({ ...read('mem://open'), id: 2 }, publicRead, auth), privateRead, 'the answer to another id');
});

test('a public read stays public only when every item it returns needs the base scopes alone', () => {
  const items = (...uris: string[]) => ({ ...publicRead, result: { contents: uris.map((uri) => ({ uri, text: '' })), cacheScope: 'public' } });
  const open = items('mem://open', 'mem://other');
  assert.equal(filter(read('mem://open'), open, auth), open);
  assert.equal((filter(read('mem://open'), items('mem://open', 'mem://private/x'), auth) as unknown as { result: { cacheScope: string } }).result.cacheScope, 'private');
  assert.equal((filter(read('mem://open'), { ...publicRead, result: { contents: [{ text: 'no uri' }], cacheScope: 'public' } }, auth) as unknown as { result: { cacheScope: string } }).result.cacheScope, 'private');
});

test('list items the caller may not use are removed whatever request or id the answer carries', () => {
  const list = { jsonrpc: '2.0' as const, id: 1, result: { tools: [{ name: 'open' }, { name: 'secret' }] } };
  const tools = (message: unknown) => (message as { result: { tools: unknown[] } }).result.tools;
  assert.deepEqual(tools(filter({ jsonrpc: '2.0', id: 1, method: 'tools/list' }, list, auth)), [{ name: 'open' }]);
  assert.deepEqual(tools(filter({ jsonrpc: '2.0', id: '1', method: 'tools/list' }, list, auth)), [{ name: 'open' }], 'id 1 and "1" differ, the shape decides');
  assert.deepEqual(tools(filter({ jsonrpc: '2.0', id: 1, method: 'tools/call' }, list, auth)), [{ name: 'open' }], 'a list carried by a call');
  assert.deepEqual(tools(filter({ jsonrpc: '2.0', id: 1, method: 'resources/list' }, list, auth)), [{ name: 'open' }], 'a tools list where resources were asked for');
  assert.deepEqual(tools(filter(UNKNOWN_REQUEST, list, auth)), [{ name: 'open' }], 'a replay');
});

test('a result with several list keys has each filtered; pagination and other fields are kept', () => {
  const mixed = {
    jsonrpc: '2.0' as const,
    id: 4,
    result: {
      tools: [{ name: 'open' }, { name: 'secret' }, { title: 'no name' }],
      resources: [{ uri: 'mem://open' }, { uri: 'mem://private/1' }, { uri: 7 }],
      resourceTemplates: [{ uriTemplate: 'mem://private/{id}' }, { uriTemplate: 'mem://open/{id}' }],
      prompts: [{ name: 'hello' }, null],
      nextCursor: 'page-2',
      _meta: { kept: true },
      content: [{ type: 'text', text: 'x' }],
    },
  };
  const out = filter({ jsonrpc: '2.0', id: 4, method: 'tools/call' }, mixed, auth) as unknown as { result: Record<string, unknown> };
  assert.deepEqual(out.result, {
    tools: [{ name: 'open' }],
    resources: [{ uri: 'mem://open' }],
    resourceTemplates: [{ uriTemplate: 'mem://open/{id}' }],
    prompts: [{ name: 'hello' }],
    nextCursor: 'page-2',
    _meta: { kept: true },
    content: [{ type: 'text', text: 'x' }],
  });
});

test('a list request whose answer lacks its key gets an empty list; other answers without list keys pass as they are', () => {
  const empty = { jsonrpc: '2.0' as const, id: 1, result: { nextCursor: 'c' } };
  assert.deepEqual(filter({ jsonrpc: '2.0', id: 1, method: 'prompts/list' }, empty, auth), { ...empty, result: { nextCursor: 'c', prompts: [] } });
  const call = { jsonrpc: '2.0' as const, id: 1, result: { content: [{ type: 'text', text: '"tools"' }], tools: 'not a list' } };
  assert.equal(filter({ jsonrpc: '2.0', id: 1, method: 'tools/call' }, call, auth), call);
  const error = { jsonrpc: '2.0' as const, id: 1, error: { code: 1, message: 'x' } };
  assert.equal(filter(UNKNOWN_REQUEST, error, auth), error);
});

test('mayNeedFiltering: only text that could hold a list key or cacheScope is parsed', () => {
  assert.equal(mayNeedFiltering('{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"say \\"tools\\""}]}}'), false);
  for (const key of ['tools', 'prompts', 'resources', 'resourceTemplates', 'cacheScope']) {
    assert.equal(mayNeedFiltering(`{"result":{"${key}":[]}}`), true, key);
    assert.equal(mayNeedFiltering(Buffer.from(`{"result":{"${key}" :[]}}`)), true, key);
  }
  // An escaped letter may spell a key: "t\u006fols" is "tools" once parsed.
  assert.equal(mayNeedFiltering('{"result":{"t\\u006fols":[]}}'), true);
  assert.equal(mayNeedFiltering(Buffer.from('{"result":{"\\u0054ools":[]}}')), true);
  assert.equal(mayNeedFiltering('{"result":{"text":"caf\\u00e9 \\u00"}}'), false, 'escapes of non-letters are no key');
});

test('filterJsonText filters every response in a message or a batch, and refuses non-JSON it must read', () => {
  const request: JsonRpcMessage = { jsonrpc: '2.0', id: 7, method: 'tools/list' };
  const byRequest = (response: JsonRpcMessage) => filter(request, response, auth);
  const body = JSON.stringify([{ jsonrpc: '2.0', method: 'notifications/progress' }, { jsonrpc: '2.0', id: 7, result: { tools: [{ name: 'secret' }] } }, { jsonrpc: '2.0', id: 8, result: { tools: [{ name: 'secret' }] } }]);
  const out = JSON.parse(filterJsonText(body, byRequest) as string);
  assert.deepEqual(out[1].result.tools, []);
  assert.deepEqual(out[2].result.tools, [], 'another id is filtered too');
  assert.equal(filterJsonText('not json', byRequest, true), UNFILTERABLE, 'a list answer that is not JSON is not forwarded');
  assert.equal(filterJsonText('not json', byRequest), undefined, 'no key: not read, forwarded');
  assert.equal(filterJsonText('{"tools": [', byRequest), UNFILTERABLE, 'a key in text that is no JSON: not forwarded');
  assert.equal(filterJsonText(JSON.stringify({ jsonrpc: '2.0', id: 8, result: { content: [{ type: 'text', text: 'x' }] } }), byRequest), undefined, 'not even parsed');
  const escaped = '{"jsonrpc":"2.0","id":1,"result":{"t\\u006fols":[{"name":"secret"}]}}';
  assert.deepEqual(JSON.parse(filterJsonText(escaped, (response) => filter(UNKNOWN_REQUEST, response, auth)) as string).result.tools, []);
});

test('filterJsonText skips a byte order mark, as clients do, so a list behind one is filtered', () => {
  const request: JsonRpcMessage = { jsonrpc: '2.0', id: 7, method: 'tools/list' };
  const body = `\uFEFF${JSON.stringify({ jsonrpc: '2.0', id: 7, result: { tools: [{ name: 'secret' }] } })}`;
  for (const always of [true, false]) {
    const out = filterJsonText(body, (response) => filter(request, response, auth), always);
    assert.equal(typeof out, 'string');
    assert.deepEqual(JSON.parse(out as string).result.tools, []);
  }
});

test('filterMessage leaves requests, notifications and errors alone', () => {
  const never = (): JsonRpcMessage => assert.fail('not a response with a result');
  for (const message of [{ jsonrpc: '2.0', id: 1, method: 'x' }, { jsonrpc: '2.0', method: 'x' }, { jsonrpc: '2.0', id: 1, error: {} }, [1], null, 'x']) {
    assert.equal(filterMessage(message, never), message);
  }
});

test('with every list shown, lists are left as the server wrote them (the same object), and the read rule still holds', () => {
  const all = createResponseFilter(policy, 'all');
  const list = { jsonrpc: '2.0' as const, id: 1, result: { tools: [{ name: 'open' }, { name: 'secret' }], resourceTemplates: [{ uriTemplate: 'mem://private/{id}' }] } };
  assert.equal(all({ jsonrpc: '2.0', id: 1, method: 'tools/list' }, list, auth), list);
  assert.equal(all(UNKNOWN_REQUEST, list, auth), list, 'a replay');
  const empty = { jsonrpc: '2.0' as const, id: 1, result: { nextCursor: 'c' } };
  assert.equal(all({ jsonrpc: '2.0', id: 1, method: 'prompts/list' }, empty, auth), empty, 'no key is filled in');
  // A 2026-07-28 list keeps the server's caching hints: it no longer varies per caller.
  const hinted = { jsonrpc: '2.0' as const, id: 1, result: { tools: [{ name: 'secret' }], resultType: 'complete', cacheScope: 'public', ttlMs: 5000 } };
  assert.equal(all({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: { _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28' } } }, hinted, auth), hinted);
  assert.equal(all(read('mem://open'), publicRead, auth), publicRead);
  assert.deepEqual(all(read('mem://private/x'), publicRead, auth), { ...publicRead, result: { contents: [], cacheScope: 'private' } });
  assert.deepEqual(all(UNKNOWN_REQUEST, publicRead, auth), { ...publicRead, result: { contents: [], cacheScope: 'private' } }, 'fail closed as before');
  // And the default is still the filtered mode.
  assert.deepEqual((createResponseFilter(policy)({ jsonrpc: '2.0', id: 1, method: 'tools/list' }, list, auth) as unknown as { result: { tools: unknown[] } }).result.tools, [{ name: 'open' }]);
});

test('answerRewrites: a list answer is parsed only when lists are filtered; a read answer in both modes', () => {
  const filtered = answerRewrites('filtered');
  const all = answerRewrites('all');
  assert.equal(filtered.lists, 'filtered');
  assert.equal(all.lists, 'all');
  const list = { jsonrpc: '2.0' as const, id: 1, method: 'tools/list' };
  for (const method of ['tools/list', 'prompts/list', 'resources/list', 'resources/templates/list']) {
    assert.equal(filtered.isFilteredRequest({ ...list, method }), true, method);
    assert.equal(all.isFilteredRequest({ ...list, method }), false, method);
  }
  assert.equal(all.isFilteredRequest(read('mem://open')), true);
  assert.equal(filtered.isFilteredRequest(read('mem://open')), true);
  assert.equal(all.isFilteredRequest({ jsonrpc: '2.0', method: 'resources/read' }), false, 'a notification has no answer');
  assert.equal(all.isFilteredRequest(undefined), false);
  // The search made before parsing any other answer.
  const listText = '{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"secret"}],"cacheScope":"public","ttlMs":5}}';
  assert.equal(filtered.mayNeedFiltering(listText), true);
  assert.equal(all.mayNeedFiltering(listText), false, 'a list answer (2026-07-28 caching hints and all) passes unparsed');
  assert.equal(all.mayNeedFiltering(Buffer.from(listText)), false);
  const readText = '{"jsonrpc":"2.0","id":1,"result":{"contents":[],"cacheScope":"public"}}';
  assert.equal(all.mayNeedFiltering(readText), true);
  assert.equal(all.mayNeedFiltering(Buffer.from(readText)), true);
  assert.equal(all.mayNeedFiltering('{"result":{"c\\u006fntents":[]}}'), true, 'an escaped letter may spell the key');
  assert.equal(mayNeedFiltering(listText), true, 'the exported check is the filtered one');
});

test('filterJsonText follows the mode it is given', () => {
  const all = createResponseFilter(policy, 'all');
  const listText = JSON.stringify({ jsonrpc: '2.0', id: 1, result: { tools: [{ name: 'secret' }] } });
  assert.equal(filterJsonText(listText, (r) => all(UNKNOWN_REQUEST, r, auth), false, answerRewrites('all')), undefined);
  assert.equal(filterJsonText('not json "contents"', (r) => all(UNKNOWN_REQUEST, r, auth), false, answerRewrites('all')), UNFILTERABLE);
  const readText = JSON.stringify(publicRead);
  assert.equal(JSON.parse(filterJsonText(readText, (r) => all(UNKNOWN_REQUEST, r, auth), false, answerRewrites('all')) as string).result.cacheScope, 'private');
});
