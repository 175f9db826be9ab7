import assert from 'node:assert/strict';
import { test } from 'node:test';
import { jsonRpcError } from '../../../src/core/wire/jsonrpc.js';
import { httpStatusForResponse, isStatelessRevision } from '../../../src/core/mcp/protocol-version.js';

test('isStatelessRevision: dated revisions compare as dates; a draft name counts as later; none is 2025', () => {
  assert.equal(isStatelessRevision('2026-07-28'), true);
  assert.equal(isStatelessRevision('2027-01-01'), true);
  assert.equal(isStatelessRevision('2025-11-25'), false);
  assert.equal(isStatelessRevision('2025-06-18'), false);
  assert.equal(isStatelessRevision('DRAFT-2026-v1'), true);
  assert.equal(isStatelessRevision(''), false);
  assert.equal(isStatelessRevision(undefined), false);
});

test('httpStatusForResponse: 2026-07-28 gives -32601 a 404 and header/capability/version errors a 400; 2025 answers 200', () => {
  const notFound = jsonRpcError(1, -32601, 'Method not found');
  assert.equal(httpStatusForResponse(notFound, '2026-07-28'), 404);
  assert.equal(httpStatusForResponse(notFound, '2025-11-25'), 200);
  assert.equal(httpStatusForResponse(notFound, undefined), 200);
  for (const code of [-32020, -32021, -32022]) assert.equal(httpStatusForResponse(jsonRpcError(1, code, 'x'), '2026-07-28'), 400);
  assert.equal(httpStatusForResponse(jsonRpcError(1, -32603, 'Internal error'), '2026-07-28'), 200);
  assert.equal(httpStatusForResponse({ jsonrpc: '2.0', id: 1, result: {} }, '2026-07-28'), 200);
});

test("httpStatusForResponse: a handler's -32602 (bad arguments, unknown tool, resource not found) is 200 under 2026-07-28 too", () => {
  // 400 with -32602 is for a request missing required _meta fields, which the guard refuses before a handler runs;
  // a 400 here would make a dual-era client take the server for a legacy one (basic/versioning).
  const invalidParams = jsonRpcError(1, -32602, 'Invalid params: unknown tool');
  assert.equal(httpStatusForResponse(invalidParams, '2026-07-28'), 200);
  assert.equal(httpStatusForResponse(invalidParams, '2025-11-25'), 200);
});
