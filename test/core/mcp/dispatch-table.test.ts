import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { AuthInfo } from '../../../src/core/kernel/auth-info.js';
import { dispatchTable, JsonRpcMethodError, type MethodHandler } from '../../../src/core/mcp/dispatch-table.js';
import type { HandlerContext } from '../../../src/core/mcp/handler.js';
import type { JsonRpcMessage } from '../../../src/core/wire/jsonrpc.js';

const auth: AuthInfo = { token: 't', clientId: 'c', scopes: ['mcp'], extra: { claims: {}, tokenType: 'jwt' } };
const context: HandlerContext = { auth, signal: new AbortController().signal, protocolVersion: '2025-11-25' };

function request(method: string, params?: Record<string, unknown>, id: string | number = 1): JsonRpcMessage {
  return params === undefined ? { jsonrpc: '2.0', id, method } : { jsonrpc: '2.0', id, method, params };
}

test('a request is answered with the handler\'s result, given params and the context', async () => {
  const calls: Array<[Record<string, unknown>, HandlerContext]> = [];
  const handle = dispatchTable({
    'tools/call': (params, ctx) => {
      calls.push([params, ctx]);
      return { content: [{ type: 'text', text: 'ok' }] };
    },
  });
  const answer = await handle(request('tools/call', { name: 'echo' }, 'a'), context);
  assert.deepEqual(answer, { jsonrpc: '2.0', id: 'a', result: { content: [{ type: 'text', text: 'ok' }] } });
  assert.equal(calls.length, 1);
  assert.deepEqual(calls[0]?.[0], { name: 'echo' });
  assert.equal(calls[0]?.[1], context);
});

test('a missing params is given as {}, and an undefined result answers {}', async () => {
  let seen: unknown;
  const handle = dispatchTable({
    ping: async (params) => {
      seen = params;
    },
  });
  assert.deepEqual(await handle(request('ping', undefined, 0), context), { jsonrpc: '2.0', id: 0, result: {} });
  assert.deepEqual(seen, {});
});

test('an unknown request method is -32601 naming the method', async () => {
  const handle = dispatchTable({ ping: () => ({}) });
  assert.deepEqual(await handle(request('tools/list', undefined, 7), context), {
    jsonrpc: '2.0',
    id: 7,
    error: { code: -32601, message: 'Method not found: tools/list' },
  });
});

test('a notification is delivered and gets no answer', async () => {
  const delivered: unknown[] = [];
  const handle = dispatchTable({ 'notifications/initialized': (params) => void delivered.push(params) });
  assert.equal(await handle({ jsonrpc: '2.0', method: 'notifications/initialized', params: { x: 1 } }, context), undefined);
  assert.equal(await handle({ jsonrpc: '2.0', method: 'notifications/initialized' }, context), undefined);
  assert.deepEqual(delivered, [{ x: 1 }, {}]);
});

test('a notification with no handler gets no answer (never -32601)', async () => {
  const handle = dispatchTable({});
  assert.equal(await handle({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 1 } }, context), undefined);
});

test('a client response is not dispatched and gets no answer', async () => {
  let called = false;
  const handle = dispatchTable({ ping: () => void (called = true) });
  assert.equal(await handle({ jsonrpc: '2.0', id: 1, result: {} }, context), undefined);
  assert.equal(await handle({ jsonrpc: '2.0', id: 2, error: { code: -1, message: 'no' } }, context), undefined);
  assert.equal(called, false);
});

test('constructor, __proto__, toString and hasOwnProperty never resolve through the prototype', async () => {
  const handle = dispatchTable({ ping: () => ({}) });
  for (const method of ['constructor', '__proto__', 'toString', 'hasOwnProperty', 'valueOf']) {
    assert.deepEqual(await handle(request(method, undefined, method), context), {
      jsonrpc: '2.0',
      id: method,
      error: { code: -32601, message: `Method not found: ${method}` },
    });
  }
});

test('own entries with those names are resolved', async () => {
  const table: Record<string, MethodHandler> = {};
  for (const name of ['constructor', '__proto__', 'toString']) {
    Object.defineProperty(table, name, { value: () => ({ name }), enumerable: true });
  }
  const handle = dispatchTable(table);
  for (const name of ['constructor', '__proto__', 'toString']) {
    assert.deepEqual(await handle(request(name), context), { jsonrpc: '2.0', id: 1, result: { name } });
  }
});

test('a JsonRpcMethodError passes its code, message and data through', async () => {
  const handle = dispatchTable({
    'tools/call': () => {
      throw new JsonRpcMethodError(-32602, 'Unknown tool: nope', { tool: 'nope' });
    },
    'prompts/get': async () => {
      throw new JsonRpcMethodError(-32002, 'Prompt not found');
    },
  });
  assert.deepEqual(await handle(request('tools/call', { name: 'nope' }, 3), context), {
    jsonrpc: '2.0',
    id: 3,
    error: { code: -32602, message: 'Unknown tool: nope', data: { tool: 'nope' } },
  });
  assert.deepEqual(await handle(request('prompts/get', {}, 4), context), {
    jsonrpc: '2.0',
    id: 4,
    error: { code: -32002, message: 'Prompt not found' },
  });
});

test('any other throw is -32603 "Internal error", with nothing of the message', async () => {
  const secret = 'connect ECONNREFUSED db.internal:5432 password=hunter2';
  const handle = dispatchTable({
    sync: () => {
      throw new Error(secret);
    },
    async: async () => {
      throw new TypeError(secret);
    },
    string: () => {
      throw secret;
    },
  });
  for (const method of ['sync', 'async', 'string']) {
    const answer = await handle(request(method, undefined, method), context);
    assert.deepEqual(answer, { jsonrpc: '2.0', id: method, error: { code: -32603, message: 'Internal error' } });
    assert.doesNotMatch(JSON.stringify(answer), /hunter2|ECONNREFUSED/);
  }
});

test('JsonRpcMethodError carries its fields', () => {
  const error = new JsonRpcMethodError(-32602, 'bad', [1]);
  assert.ok(error instanceof Error);
  assert.equal(error.name, 'JsonRpcMethodError');
  assert.equal(error.code, -32602);
  assert.equal(error.message, 'bad');
  assert.deepEqual(error.data, [1]);
});

test('the table is copied when built: later changes to it have no effect', async () => {
  const table: Record<string, MethodHandler> = { ping: () => ({ v: 1 }) };
  const handle = dispatchTable(table);
  table.ping = () => ({ v: 2 });
  table['tools/list'] = () => ({ tools: [] });
  assert.deepEqual(await handle(request('ping'), context), { jsonrpc: '2.0', id: 1, result: { v: 1 } });
  assert.deepEqual(await handle(request('tools/list'), context), { jsonrpc: '2.0', id: 1, error: { code: -32601, message: 'Method not found: tools/list' } });
});

test('2026-07-28 results get resultType "complete" unless the method set one; older ones are untouched', async () => {
  const handler = dispatchTable({ 'tools/list': () => ({ tools: [] }), 'tasks/get': () => ({ resultType: 'input_required' }) });
  const ctx = (protocolVersion?: string) => ({ auth: {} as never, signal: new AbortController().signal, protocolVersion });
  const list = { jsonrpc: '2.0' as const, id: 1, method: 'tools/list' };
  assert.deepEqual(await handler(list, ctx('2026-07-28')), { jsonrpc: '2.0', id: 1, result: { resultType: 'complete', tools: [] } });
  assert.deepEqual(await handler(list, ctx('2025-11-25')), { jsonrpc: '2.0', id: 1, result: { tools: [] } });
  assert.deepEqual(await handler({ ...list, method: 'tasks/get' }, ctx('2026-07-28')), { jsonrpc: '2.0', id: 1, result: { resultType: 'input_required' } });
});
