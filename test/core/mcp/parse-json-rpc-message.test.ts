import assert from 'node:assert/strict';
import { test } from 'node:test';
import { RequestRejectedError } from '../../../src/core/kernel/errors.js';
import type { JsonRpcId } from '../../../src/core/wire/jsonrpc.js';
import { DEFAULT_MAX_JSON_DEPTH, parseJsonRpcMessage } from '../../../src/core/mcp/parse-json-rpc-message.js';

/** Asserts the body is refused with exactly this JSON-RPC code, message and recovered id. */
function assertRejected(body: string, code: number, message: string | RegExp, id: JsonRpcId | null = null, maxDepth?: number): void {
  const parsed = parseJsonRpcMessage(body, maxDepth);
  assert.equal(parsed.ok, false, `expected a refusal for ${body.slice(0, 80)}`);
  if (parsed.ok) return;
  assert.ok(parsed.error instanceof RequestRejectedError);
  assert.equal(parsed.error.status, 400);
  assert.equal(parsed.error.reason, 'request_invalid');
  assert.equal(parsed.error.jsonRpcCode, code);
  if (typeof message === 'string') assert.equal(parsed.error.message, message);
  else assert.match(parsed.error.message, message);
  assert.equal(parsed.id, id);
}

function assertAccepted(body: string, maxDepth?: number): unknown {
  const parsed = parseJsonRpcMessage(body, maxDepth);
  assert.equal(parsed.ok, true, parsed.ok ? '' : parsed.error.message);
  return parsed.ok ? parsed.message : undefined;
}

function nested(depth: number, inner = '1'): string {
  return '['.repeat(depth) + inner + ']'.repeat(depth);
}

test('invalid JSON is -32700 with id null', () => {
  assertRejected('{"jsonrpc":"2.0","id":7,', -32700, 'Parse error: the body is not valid JSON');
  assertRejected('', -32700, 'Parse error: the body is not valid JSON');
  assertRejected("{'jsonrpc':'2.0'}", -32700, 'Parse error: the body is not valid JSON');
});

test('the default depth limit is 64', () => {
  assert.equal(DEFAULT_MAX_JSON_DEPTH, 64);
  const at = `{"jsonrpc":"2.0","id":1,"method":"x","params":{"a":${nested(62)}}}`; // 64 levels
  assertAccepted(at);
  const over = `{"jsonrpc":"2.0","id":1,"method":"x","params":{"a":${nested(63)}}}`; // 65 levels
  assertRejected(over, -32600, 'Invalid Request: JSON nested deeper than 64 levels');
});

test('nesting deeper than maxDepth is -32600 even when the JSON is invalid (checked before parsing)', () => {
  assertRejected('['.repeat(100_000), -32600, 'Invalid Request: JSON nested deeper than 64 levels');
  assertRejected('{"a":{"b":{"c":1}}}', -32600, 'Invalid Request: JSON nested deeper than 2 levels', null, 2);
});

test('brackets inside strings are not counted', () => {
  const message = assertAccepted(`{"jsonrpc":"2.0","id":1,"method":"x","params":{"text":"${'[{'.repeat(50)}"}}`, 3) as {
    params: { text: string };
  };
  assert.equal(message.params.text, '[{'.repeat(50));
});

test('an escaped quote does not end a string for the depth scan', () => {
  // If \" ended the string, the brackets after it would be counted and exceed depth 3.
  assertAccepted(`{"jsonrpc":"2.0","id":1,"method":"x","params":{"text":"a\\"${'['.repeat(10)}"}}`, 3);
  // An escaped backslash right before the closing quote does end the string: brackets after it count.
  assertRejected(`{"jsonrpc":"2.0","id":1,"method":"x","params":{"t":"a\\\\","n":${nested(5)}}}`, -32600, /deeper than 3 levels/, null, 3);
});

test('a batch (array) is -32600 with a hint', () => {
  assertRejected(
    '[{"jsonrpc":"2.0","id":1,"method":"ping"}]',
    -32600,
    'Invalid Request: JSON-RPC batches are not supported (removed in MCP 2025-06-18); send one message per POST',
  );
  assertRejected('[]', -32600, /batches are not supported/);
});

test('a JSON value that is not an object is -32600', () => {
  for (const body of ['null', '42', '"text"', 'true']) {
    assertRejected(body, -32600, 'Invalid Request: expected a JSON-RPC 2.0 object');
  }
});

test('jsonrpc must be exactly "2.0"; the id is recovered for the answer', () => {
  assertRejected('{"id":5,"method":"ping"}', -32600, 'Invalid Request: "jsonrpc" must be "2.0"', 5);
  assertRejected('{"jsonrpc":"1.0","id":"a","method":"ping"}', -32600, 'Invalid Request: "jsonrpc" must be "2.0"', 'a');
  assertRejected('{"jsonrpc":2.0,"id":1,"method":"ping"}', -32600, 'Invalid Request: "jsonrpc" must be "2.0"', 1);
  assertRejected('{"jsonrpc":"2.0 ","id":null,"method":"ping"}', -32600, 'Invalid Request: "jsonrpc" must be "2.0"', null);
});

test('an id that is null, boolean, object, array or not finite is -32600 with id null', () => {
  for (const id of ['null', 'true', 'false', '{"n":1}', '[1]', '1e999', '-1e999']) {
    assertRejected(`{"jsonrpc":"2.0","id":${id},"method":"ping"}`, -32600, 'Invalid Request: "id" must be a string or a number');
  }
});

test('string and number ids are accepted, including 0, negative, fractional and empty string', () => {
  for (const [raw, id] of [['"abc"', 'abc'], ['""', ''], ['0', 0], ['-3', -3], ['1.5', 1.5]] as const) {
    const message = assertAccepted(`{"jsonrpc":"2.0","id":${raw},"method":"ping"}`) as { id: unknown };
    assert.equal(message.id, id);
  }
});

test('method must be a non-empty string', () => {
  for (const method of ['""', '1', 'null', '["ping"]', '{}']) {
    assertRejected(`{"jsonrpc":"2.0","id":9,"method":${method}}`, -32600, 'Invalid Request: "method" must be a non-empty string', 9);
  }
  assertRejected('{"jsonrpc":"2.0","method":""}', -32600, 'Invalid Request: "method" must be a non-empty string', null);
});

test('params must be an object: an array (by-position params) or null is -32600', () => {
  assertRejected('{"jsonrpc":"2.0","id":2,"method":"tools/call","params":["a"]}', -32600, 'Invalid Request: "params" must be an object', 2);
  assertRejected('{"jsonrpc":"2.0","id":2,"method":"tools/call","params":null}', -32600, 'Invalid Request: "params" must be an object', 2);
  assertRejected('{"jsonrpc":"2.0","method":"notifications/x","params":"s"}', -32600, 'Invalid Request: "params" must be an object', null);
});

test('a request cannot carry result or error', () => {
  assertRejected('{"jsonrpc":"2.0","id":3,"method":"ping","result":{}}', -32600, 'Invalid Request: a request cannot carry "result" or "error"', 3);
  assertRejected(
    '{"jsonrpc":"2.0","id":3,"method":"ping","error":{"code":1,"message":"m"}}',
    -32600,
    'Invalid Request: a request cannot carry "result" or "error"',
    3,
  );
});

test('a message with neither method nor id is -32600', () => {
  assertRejected('{"jsonrpc":"2.0"}', -32600, 'Invalid Request: a message needs a "method" or an "id"');
  assertRejected('{"jsonrpc":"2.0","result":{}}', -32600, 'Invalid Request: a message needs a "method" or an "id"');
});

test('a response carries exactly one of result or error', () => {
  const message = 'Invalid Request: a response carries exactly one of "result" or "error"';
  assertRejected('{"jsonrpc":"2.0","id":4}', -32600, message, 4);
  assertRejected('{"jsonrpc":"2.0","id":4,"result":{},"error":{"code":1,"message":"m"}}', -32600, message, 4);
});

test('a response result must be an object', () => {
  for (const result of ['null', '[]', '"ok"', '1']) {
    assertRejected(`{"jsonrpc":"2.0","id":"r","result":${result}}`, -32600, 'Invalid Request: "result" must be an object', 'r');
  }
});

test('a response error needs an integer code and a string message', () => {
  const message = 'Invalid Request: "error" needs an integer "code" and a string "message"';
  for (const error of ['null', '"boom"', '[]', '{"message":"m"}', '{"code":"1","message":"m"}', '{"code":1.5,"message":"m"}', '{"code":1}', '{"code":1,"message":2}']) {
    assertRejected(`{"jsonrpc":"2.0","id":6,"error":${error}}`, -32600, message, 6);
  }
});

test('valid request, notification and responses are returned as parsed', () => {
  assert.deepEqual(assertAccepted('{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"x":1}}}'), {
    jsonrpc: '2.0',
    id: 1,
    method: 'tools/call',
    params: { name: 'echo', arguments: { x: 1 } },
  });
  assert.deepEqual(assertAccepted('{"jsonrpc":"2.0","id":"p","method":"ping"}'), { jsonrpc: '2.0', id: 'p', method: 'ping' });
  assert.deepEqual(assertAccepted('{"jsonrpc":"2.0","method":"notifications/initialized"}'), {
    jsonrpc: '2.0',
    method: 'notifications/initialized',
  });
  assert.deepEqual(assertAccepted('{"jsonrpc":"2.0","id":0,"result":{}}'), { jsonrpc: '2.0', id: 0, result: {} });
  assert.deepEqual(assertAccepted('{"jsonrpc":"2.0","id":"s1","error":{"code":-1,"message":"declined","data":[1]}}'), {
    jsonrpc: '2.0',
    id: 's1',
    error: { code: -1, message: 'declined', data: [1] },
  });
});

test('a "__proto__" key in params stays an own property and pollutes nothing', () => {
  const message = assertAccepted('{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"__proto__":{"polluted":true},"name":"x"}}') as {
    params: Record<string, unknown>;
  };
  assert.equal(Object.hasOwn(message.params, '__proto__'), true);
  assert.deepEqual(Object.getOwnPropertyDescriptor(message.params, '__proto__')?.value, { polluted: true });
  assert.equal(Object.getPrototypeOf(message.params), Object.prototype);
  assert.equal((message.params as { polluted?: unknown }).polluted, undefined);
  assert.equal(({} as { polluted?: unknown }).polluted, undefined);
  assert.equal(Object.hasOwn(Object.prototype, 'polluted'), false);
});

test('a top-level "__proto__" key does not make a request look like a response', () => {
  // "result" reachable only through a prototype must not count as present.
  const message = assertAccepted('{"jsonrpc":"2.0","id":1,"method":"ping","__proto__":{"result":{}}}');
  assert.equal(Object.getPrototypeOf(message), Object.prototype);
});
