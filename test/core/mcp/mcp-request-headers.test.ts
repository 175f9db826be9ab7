import assert from 'node:assert/strict';
import { test } from 'node:test';
import { RequestRejectedError } from '../../../src/core/kernel/errors.js';
import type { JsonRpcMessage } from '../../../src/core/wire/jsonrpc.js';
import { decodeMirroredHeaderValue } from '../../../src/core/wire/header-value-encoding.js';
import { checkMcpRequestHeaders, type McpRequestHeaders } from '../../../src/core/mcp/mcp-request-headers.js';
import { bodyProtocolVersion, PROTOCOL_VERSION_META_KEY, STATELESS_PROTOCOL_VERSION } from '../../../src/core/mcp/protocol-version.js';

const V2026 = '2026-07-28';

/** A request as a 2026-07-28 client sends it: `_meta` carries the protocol version. */
function request2026(method: string, params: Record<string, unknown> = {}, id: string | number = 1): JsonRpcMessage {
  return { jsonrpc: '2.0', id, method, params: { ...params, _meta: { [PROTOCOL_VERSION_META_KEY]: V2026, 'io.modelcontextprotocol/clientCapabilities': {} } } };
}

function assertMismatch(headers: McpRequestHeaders, message: JsonRpcMessage, expected: string): void {
  assert.throws(
    () => checkMcpRequestHeaders(headers, message),
    (e: unknown) => {
      assert.ok(e instanceof RequestRejectedError, String(e));
      assert.equal(e.status, 400);
      assert.equal(e.reason, 'header_mismatch');
      assert.equal(e.jsonRpcCode, -32020);
      assert.equal(e.message, expected);
      return true;
    },
  );
}

test('the first mirroring revision is 2026-07-28', () => {
  assert.equal(STATELESS_PROTOCOL_VERSION, V2026);
  assert.equal(PROTOCOL_VERSION_META_KEY, 'io.modelcontextprotocol/protocolVersion');
});

// MCP 2026-07-28 Streamable HTTP, "Value Encoding", encoding examples table, row by row.
const VALUE_ENCODING_TABLE: ReadonlyArray<readonly [original: string, encoded: string]> = [
  ['us-west1', 'us-west1'],
  ['Hello, 世界', '=?base64?SGVsbG8sIOS4lueVjA==?='],
  [' padded ', '=?base64?IHBhZGRlZCA=?='],
  ['line1\nline2', '=?base64?bGluZTEKbGluZTI=?='],
  ['=?base64?literal?=', '=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?='],
];

test('decodeMirroredHeaderValue decodes every row of the spec\'s Value Encoding table', () => {
  for (const [original, encoded] of VALUE_ENCODING_TABLE) {
    assert.equal(decodeMirroredHeaderValue(encoded), original, encoded);
  }
});

test('the table rows are what a client would encode (UTF-8, then standard base64)', () => {
  for (const [original, encoded] of VALUE_ENCODING_TABLE.slice(1)) {
    assert.equal(`=?base64?${Buffer.from(original, 'utf8').toString('base64')}?=`, encoded);
  }
});

test('an empty encoded value decodes to the empty string', () => {
  assert.equal(decodeMirroredHeaderValue('=?base64??='), '');
});

test('the sentinel markers are case-sensitive: an uppercase one is a plain value', () => {
  assert.equal(decodeMirroredHeaderValue('=?BASE64?SGk=?='), '=?BASE64?SGk=?=');
});

test('a plain value that only starts like the sentinel is taken as is', () => {
  // Clients encode only values that start with "=?base64?" AND end with "?="; others are sent raw.
  assert.equal(decodeMirroredHeaderValue('=?base64?x'), '=?base64?x');
  assert.equal(decodeMirroredHeaderValue('=?base64?SGk='), '=?base64?SGk=');
});

test('a malformed sentinel value is undefined', () => {
  const malformed = [
    '=?base64?SGk*?=', // character outside the base64 alphabet
    '=?base64?SGVsbG8?=', // length not a multiple of 4
    '=?base64?S===?=', // too much padding
    '=?base64?SG==SGk=?=', // padding in the middle
    '=?base64?/w==?=', // 0xFF: invalid UTF-8
    '=?base64?wMA=?=', // overlong encoding: invalid UTF-8
    '=?base64?7aCA?=', // lone surrogate U+D800: invalid UTF-8
    '=?base64?SGVsbG8-LCA_?=', // base64url alphabet is not the one the spec names
  ];
  for (const raw of malformed) {
    assert.equal(decodeMirroredHeaderValue(raw), undefined, raw);
  }
});

test('a raw header with non-ASCII or control characters is undefined', () => {
  for (const raw of ['caf\u00e9', '世界', 'a\tb', 'a\u0000b', 'a\u007fb', 'line1\nline2']) {
    assert.equal(decodeMirroredHeaderValue(raw), undefined, JSON.stringify(raw));
  }
});

test('bodyProtocolVersion reads params._meta only when it is a string', () => {
  assert.equal(bodyProtocolVersion(request2026('ping')), V2026);
  assert.equal(bodyProtocolVersion({ jsonrpc: '2.0', id: 1, method: 'ping' }), undefined);
  assert.equal(bodyProtocolVersion({ jsonrpc: '2.0', id: 1, method: 'ping', params: { _meta: null } }), undefined);
  assert.equal(bodyProtocolVersion({ jsonrpc: '2.0', id: 1, method: 'ping', params: { _meta: { [PROTOCOL_VERSION_META_KEY]: 20260728 } } }), undefined);
  assert.equal(bodyProtocolVersion({ jsonrpc: '2.0', id: 1, result: {} }), undefined);
});

test('older revisions without any mirrored header pass, and the version is returned', () => {
  const call: JsonRpcMessage = { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'echo' } };
  assert.equal(checkMcpRequestHeaders({}, call), undefined);
  assert.equal(checkMcpRequestHeaders({ 'mcp-protocol-version': '2025-06-18' }, call), '2025-06-18');
  assert.equal(checkMcpRequestHeaders({ 'mcp-protocol-version': '2025-11-25' }, call), '2025-11-25');
  const withMeta: JsonRpcMessage = { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'echo', _meta: { [PROTOCOL_VERSION_META_KEY]: '2025-11-25' } } };
  assert.equal(checkMcpRequestHeaders({}, withMeta), '2025-11-25');
});

test('older revisions: Mcp-Method and Mcp-Name, when sent anyway, must still match', () => {
  const call: JsonRpcMessage = { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'echo' } };
  const headers = { 'mcp-protocol-version': '2025-11-25' };
  assert.equal(checkMcpRequestHeaders({ ...headers, 'mcp-method': 'tools/call', 'mcp-name': 'echo' }, call), '2025-11-25');
  assertMismatch({ ...headers, 'mcp-method': 'tools/list' }, call, "Header mismatch: Mcp-Method header value 'tools/list' does not match body value 'tools/call'");
  assertMismatch({ ...headers, 'mcp-name': 'rm' }, call, "Header mismatch: Mcp-Name header value 'rm' does not match body value 'echo'");
});

test('a complete 2026-07-28 tools/call passes and returns the version', () => {
  const headers = { 'mcp-protocol-version': V2026, 'mcp-method': 'tools/call', 'mcp-name': 'get_weather' };
  assert.equal(checkMcpRequestHeaders(headers, request2026('tools/call', { name: 'get_weather', arguments: { location: 'Seattle, WA' } })), V2026);
});

test('2026-07-28: a request without MCP-Protocol-Version is refused', () => {
  assertMismatch(
    { 'mcp-method': 'tools/call', 'mcp-name': 'x' },
    request2026('tools/call', { name: 'x' }),
    'Header mismatch: MCP-Protocol-Version header is required',
  );
});

test('2026-07-28: a request without Mcp-Method is refused', () => {
  assertMismatch({ 'mcp-protocol-version': V2026 }, request2026('tools/list'), 'Header mismatch: Mcp-Method header is required');
});

test('2026-07-28: tools/call, prompts/get and resources/read without Mcp-Name are refused', () => {
  for (const [method, params] of [['tools/call', { name: 'x' }], ['prompts/get', { name: 'p' }], ['resources/read', { uri: 'file:///a' }]] as const) {
    assertMismatch(
      { 'mcp-protocol-version': V2026, 'mcp-method': method },
      request2026(method, params),
      `Header mismatch: Mcp-Name header is required for ${method}`,
    );
  }
});

test('2026-07-28: methods without a named target need no Mcp-Name, and one sent matches nothing', () => {
  const headers = { 'mcp-protocol-version': V2026, 'mcp-method': 'tools/list' };
  assert.equal(checkMcpRequestHeaders(headers, request2026('tools/list')), V2026);
  assertMismatch({ ...headers, 'mcp-name': 'anything' }, request2026('tools/list'), "Header mismatch: Mcp-Name header value 'anything' does not match the body: tools/list names no tool, prompt, resource or task");
  // A notification names nothing either.
  const cancelled = { jsonrpc: '2.0' as const, method: 'notifications/cancelled', params: { requestId: 1 } };
  assertMismatch({ 'mcp-name': 'secret_admin' }, cancelled, "Header mismatch: Mcp-Name header value 'secret_admin' does not match the body: notifications/cancelled names no tool, prompt, resource or task");
});

test('tasks/get, tasks/update and tasks/cancel: Mcp-Name, when sent, must be params.taskId (the tasks extension)', () => {
  for (const method of ['tasks/get', 'tasks/update', 'tasks/cancel']) {
    const headers = { 'mcp-protocol-version': V2026, 'mcp-method': method };
    assert.equal(checkMcpRequestHeaders({ ...headers, 'mcp-name': 'task-1' }, request2026(method, { taskId: 'task-1' })), V2026);
    assert.equal(checkMcpRequestHeaders(headers, request2026(method, { taskId: 'task-1' })), V2026);
    assertMismatch({ ...headers, 'mcp-name': 'task-2' }, request2026(method, { taskId: 'task-1' }), "Header mismatch: Mcp-Name header value 'task-2' does not match body value 'task-1'");
  }
});

test('resources/subscribe and resources/unsubscribe: Mcp-Name, when sent, must be params.uri', () => {
  for (const method of ['resources/subscribe', 'resources/unsubscribe']) {
    const message: JsonRpcMessage = { jsonrpc: '2.0', id: 1, method, params: { uri: 'docs://public/readme' } };
    // The security review's request: a public URI in the body, a private one in the header.
    assertMismatch({ 'mcp-name': 'docs://private/plan' }, message, "Header mismatch: Mcp-Name header value 'docs://private/plan' does not match body value 'docs://public/readme'");
    assert.equal(checkMcpRequestHeaders({ 'mcp-name': 'docs://public/readme', 'mcp-method': method }, message), undefined);
    // Not required: the 2025 revisions that have these methods define no Mcp-Name.
    assert.equal(checkMcpRequestHeaders({}, message), undefined);
  }
});

test('2026-07-28: a body that lacks the _meta version is no header mismatch (it is invalid params, checked next)', () => {
  const headers = { 'mcp-protocol-version': V2026, 'mcp-method': 'tools/list' };
  for (const params of [undefined, {}, { _meta: null }, { _meta: {} }, { _meta: { [PROTOCOL_VERSION_META_KEY]: 20260728 } }, { _meta: { [PROTOCOL_VERSION_META_KEY]: '' } }]) {
    const message = { jsonrpc: '2.0', id: 1, method: 'tools/list', ...(params ? { params } : {}) } as JsonRpcMessage;
    assert.equal(checkMcpRequestHeaders(headers, message), V2026, JSON.stringify(params));
  }
  // The header is still required when the body names the revision.
  assertMismatch({ 'mcp-method': 'tools/list' }, request2026('tools/list'), 'Header mismatch: MCP-Protocol-Version header is required');
});

test('the header version must equal the _meta version', () => {
  assertMismatch(
    { 'mcp-protocol-version': '2025-11-25', 'mcp-method': 'ping' },
    request2026('ping'),
    "Header mismatch: MCP-Protocol-Version header value '2025-11-25' does not match body value '2026-07-28'",
  );
  const old: JsonRpcMessage = { jsonrpc: '2.0', id: 1, method: 'ping', params: { _meta: { [PROTOCOL_VERSION_META_KEY]: '2025-11-25' } } };
  assertMismatch({ 'mcp-protocol-version': V2026 }, old, "Header mismatch: MCP-Protocol-Version header value '2026-07-28' does not match body value '2025-11-25'");
});

test('Mcp-Method must equal the body method (values are case-sensitive)', () => {
  assertMismatch(
    { 'mcp-protocol-version': V2026, 'mcp-method': 'Tools/Call', 'mcp-name': 'x' },
    request2026('tools/call', { name: 'x' }),
    "Header mismatch: Mcp-Method header value 'Tools/Call' does not match body value 'tools/call'",
  );
});

test('Mcp-Name must equal params.name (the spec\'s own example message)', () => {
  assertMismatch(
    { 'mcp-protocol-version': V2026, 'mcp-method': 'tools/call', 'mcp-name': 'foo' },
    request2026('tools/call', { name: 'bar' }),
    "Header mismatch: Mcp-Name header value 'foo' does not match body value 'bar'",
  );
  assertMismatch(
    { 'mcp-protocol-version': V2026, 'mcp-method': 'prompts/get', 'mcp-name': 'summary' },
    request2026('prompts/get', { name: 'Summary' }),
    "Header mismatch: Mcp-Name header value 'summary' does not match body value 'Summary'",
  );
});

test('resources/read compares Mcp-Name with params.uri, not params.name', () => {
  const uri = 'file:///projects/myapp/config.json';
  const headers = { 'mcp-protocol-version': V2026, 'mcp-method': 'resources/read' };
  assert.equal(checkMcpRequestHeaders({ ...headers, 'mcp-name': uri }, request2026('resources/read', { uri })), V2026);
  assertMismatch(
    { ...headers, 'mcp-name': 'config' },
    request2026('resources/read', { uri, name: 'config' }),
    `Header mismatch: Mcp-Name header value 'config' does not match body value '${uri}'`,
  );
});

test('Mcp-Name in the sentinel form is decoded before comparing', () => {
  const headers = { 'mcp-protocol-version': V2026, 'mcp-method': 'tools/call', 'mcp-name': '=?base64?SGVsbG8sIOS4lueVjA==?=' };
  assert.equal(checkMcpRequestHeaders(headers, request2026('tools/call', { name: 'Hello, 世界' })), V2026);
  assertMismatch(headers, request2026('tools/call', { name: 'Hello' }), "Header mismatch: Mcp-Name header value 'Hello, ??' does not match body value 'Hello'");
});

test('a malformed Mcp-Name is refused', () => {
  for (const name of ['=?base64?SGVsbG8?=', '=?base64?/w==?=', 'caf\u00e9']) {
    assertMismatch(
      { 'mcp-protocol-version': V2026, 'mcp-method': 'tools/call', 'mcp-name': name },
      request2026('tools/call', { name: 'café' }),
      'Header mismatch: Mcp-Name header value is malformed',
    );
  }
});

test('a non-string body name never matches a header', () => {
  assertMismatch(
    { 'mcp-protocol-version': V2026, 'mcp-method': 'tools/call', 'mcp-name': '42' },
    request2026('tools/call', { name: 42 }),
    "Header mismatch: Mcp-Name header value '42' does not match body value '42'",
  );
});

test('a long mismatched value is shortened in the message', () => {
  const long = 'a'.repeat(200);
  assertMismatch(
    { 'mcp-protocol-version': V2026, 'mcp-method': 'tools/call', 'mcp-name': long },
    request2026('tools/call', { name: 'b' }),
    `Header mismatch: Mcp-Name header value '${'a'.repeat(77)}...' does not match body value 'b'`,
  );
});

test('a header sent more than once (an array) is refused', () => {
  const message = request2026('tools/call', { name: 'x' });
  const headers = { 'mcp-protocol-version': V2026, 'mcp-method': 'tools/call', 'mcp-name': 'x' };
  assertMismatch({ ...headers, 'mcp-protocol-version': [V2026, V2026] }, message, 'Header mismatch: MCP-Protocol-Version header sent more than once');
  assertMismatch({ ...headers, 'mcp-method': ['tools/call', 'tools/call'] }, message, 'Header mismatch: Mcp-Method header sent more than once');
  assertMismatch({ ...headers, 'mcp-name': ['x', 'y'] }, message, 'Header mismatch: Mcp-Name header sent more than once');
});

test('a 2026-07-28 notification: Mcp-Method is checked only when present', () => {
  const notification: JsonRpcMessage = { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 1 } };
  assert.equal(checkMcpRequestHeaders({ 'mcp-protocol-version': V2026 }, notification), V2026);
  assert.equal(checkMcpRequestHeaders({ 'mcp-protocol-version': V2026, 'mcp-method': 'notifications/cancelled' }, notification), V2026);
  assertMismatch(
    { 'mcp-protocol-version': V2026, 'mcp-method': 'tools/call' },
    notification,
    "Header mismatch: Mcp-Method header value 'tools/call' does not match body value 'notifications/cancelled'",
  );
});

test('a 2026-07-28 notification still needs MCP-Protocol-Version (every POST carries it)', () => {
  const notification: JsonRpcMessage = {
    jsonrpc: '2.0',
    method: 'notifications/cancelled',
    params: { requestId: 1, _meta: { [PROTOCOL_VERSION_META_KEY]: V2026 } },
  };
  assertMismatch({}, notification, 'Header mismatch: MCP-Protocol-Version header is required');
});

test('a client response (no method) passes without mirrored headers: nothing is mirrored for it', () => {
  const response: JsonRpcMessage = { jsonrpc: '2.0', id: 'srv-1', result: { action: 'accept' } };
  assert.equal(checkMcpRequestHeaders({ 'mcp-protocol-version': V2026 }, response), V2026);
  assert.equal(checkMcpRequestHeaders({}, { jsonrpc: '2.0', id: 2, error: { code: -1, message: 'declined' } }), undefined);
});

test('a client response carrying Mcp-Method, Mcp-Name or Mcp-Param-* is a mismatch: it has no method, name or arguments', () => {
  const response: JsonRpcMessage = { jsonrpc: '2.0', id: 'srv-1', result: { action: 'accept' } };
  // The security review's request: a response dressed as a call of secret_admin.
  assertMismatch({ 'mcp-method': 'tools/call', 'mcp-name': 'secret_admin' }, response, "Header mismatch: Mcp-Method header value 'tools/call' does not match a response, which has no method");
  assertMismatch({ 'mcp-name': 'secret_admin' }, response, "Header mismatch: Mcp-Name header value 'secret_admin' does not match a response, which names nothing");
  assertMismatch({ 'mcp-param-region': 'eu' }, response, 'Header mismatch: Mcp-Param-region header does not match the body: a response has no tool arguments');
  assertMismatch({ 'mcp-method': ['tools/call', 'tools/call'] }, response, 'Header mismatch: Mcp-Method header sent more than once');
});

test('Mcp-Param-* on anything but tools/call mirrors nothing and is a mismatch', () => {
  const list: JsonRpcMessage = { jsonrpc: '2.0', id: 1, method: 'tools/list' };
  assertMismatch({ 'mcp-param-region': 'eu' }, list, 'Header mismatch: Mcp-Param-region header does not match the body: tools/list has no tool arguments');
});

test('Mcp-Param-* values must be well formed (plain visible ASCII or a valid base64 sentinel)', () => {
  const call = { jsonrpc: '2.0' as const, id: 1, method: 'tools/call', params: { name: 'sql', arguments: { region: 'us' } } };
  assert.equal(checkMcpRequestHeaders({ 'mcp-param-region': 'us-west1' }, call), undefined);
  assert.equal(checkMcpRequestHeaders({ 'mcp-param-greeting': '=?base64?SGVsbG8sIOS4lueVjA==?=' }, call), undefined);
  for (const value of ['=?base64?!!!?=', 'caf\u00e9', 'a\u0001b']) {
    assert.throws(
      () => checkMcpRequestHeaders({ 'mcp-param-region': value }, call),
      (e: unknown) => e instanceof RequestRejectedError && e.jsonRpcCode === -32020 && /Mcp-Param-region header value is malformed/.test(e.message),
      JSON.stringify(value),
    );
  }
  assert.throws(
    () => checkMcpRequestHeaders({ 'mcp-param-region': ['a', 'b'] }, call),
    (e: unknown) => e instanceof RequestRejectedError && e.jsonRpcCode === -32020,
  );
});
