// What a 2026-07-28 request must carry, and the answer to each defect (basic/index "_meta", SEP-2575, Streamable
// HTTP "Protocol Version Header"); earlier revisions are left alone.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { checkRequestRevision } from '../../../src/core/mcp/check-request-revision.js';
import { RequestRejectedError } from '../../../src/core/kernel/errors.js';
import type { JsonRpcMessage } from '../../../src/core/wire/jsonrpc.js';
import { isRemovedMethod } from '../../../src/core/mcp/protocol-version.js';

const V2026 = '2026-07-28';
const META = { 'io.modelcontextprotocol/protocolVersion': V2026, 'io.modelcontextprotocol/clientCapabilities': {} };
const request = (method: string, params?: unknown): JsonRpcMessage => ({ jsonrpc: '2.0', id: 9, method, ...(params === undefined ? {} : { params }) }) as JsonRpcMessage;

function assertRefused(message: JsonRpcMessage, status: number, code: number, text: RegExp, version = V2026): void {
  assert.throws(
    () => checkRequestRevision(message, version),
    (e: unknown) => {
      assert.ok(e instanceof RequestRejectedError, String(e));
      assert.equal(e.status, status);
      assert.equal(e.jsonRpcCode, code);
      assert.match(e.message, text);
      return true;
    },
    JSON.stringify(message),
  );
}

describe('checkRequestRevision', () => {
  it('passes a 2026-07-28 request with the required _meta fields (clientInfo and logLevel are optional)', () => {
    checkRequestRevision(request('tools/list', { _meta: META }), V2026);
    checkRequestRevision(request('tools/call', { name: 'x', _meta: { ...META, 'io.modelcontextprotocol/clientInfo': { name: 'c', version: '1' } } }), V2026);
    checkRequestRevision(request('server/discover', { _meta: META }), V2026);
  });

  it('refuses a 2026-07-28 request without _meta, or whose _meta is not an object, with 400 and -32602', () => {
    for (const params of [undefined, {}, [], { _meta: null }, { _meta: 'x' }, { _meta: [META] }]) {
      assertRefused(request('tools/list', params), 400, -32602, /^Invalid params: MCP 2026-07-28 requires params\._meta, an object$/);
    }
  });

  it('refuses a missing or invalid protocolVersion with 400 and -32602', () => {
    const { ['io.modelcontextprotocol/protocolVersion']: _version, ...noVersion } = META;
    for (const meta of [noVersion, { ...META, 'io.modelcontextprotocol/protocolVersion': 20260728 }, { ...META, 'io.modelcontextprotocol/protocolVersion': '' }]) {
      assertRefused(request('tools/list', { _meta: meta }), 400, -32602, /requires params\._meta\["io\.modelcontextprotocol\/protocolVersion"\], a string/);
    }
  });

  it('refuses missing or invalid clientCapabilities with 400 and -32602', () => {
    const { ['io.modelcontextprotocol/clientCapabilities']: _caps, ...noCapabilities } = META;
    for (const meta of [noCapabilities, { ...META, 'io.modelcontextprotocol/clientCapabilities': null }, { ...META, 'io.modelcontextprotocol/clientCapabilities': [] }, { ...META, 'io.modelcontextprotocol/clientCapabilities': 'all' }]) {
      assertRefused(request('tools/list', { _meta: meta }), 400, -32602, /requires params\._meta\["io\.modelcontextprotocol\/clientCapabilities"\], an object/);
    }
  });

  it('answers every client request 2026-07-28 removed with 404 and -32601, before reading its params', () => {
    for (const method of ['resources/subscribe', 'resources/unsubscribe', 'ping', 'initialize', 'logging/setLevel', 'tasks/result', 'tasks/list']) {
      assertRefused(request(method, { uri: 'notes://x/1', _meta: META }), 404, -32601, new RegExp(`Method not found: ${method} does not exist in MCP 2026-07-28`));
      assertRefused(request(method), 404, -32601, /Method not found/);
      assert.equal(isRemovedMethod(method, '2027-01-01'), true, 'later revisions too');
      assert.equal(isRemovedMethod(method, '2025-11-25'), false);
    }
    // The tasks extension keeps these, and unknown methods are the server's to answer.
    for (const method of ['tasks/get', 'tasks/cancel', 'subscriptions/listen', 'foo/bar']) {
      assert.equal(isRemovedMethod(method, V2026), false, method);
      checkRequestRevision(request(method, { _meta: META }), V2026);
    }
  });

  it('names a revision that is not a date without echoing it', () => {
    assertRefused(request('ping'), 404, -32601, /^Method not found: ping does not exist in this MCP revision$/, 'DRAFT-\u0007x');
  });

  it('leaves 2025 requests, notifications and responses alone', () => {
    for (const version of ['2025-11-25', '2025-06-18', undefined]) {
      checkRequestRevision(request('resources/subscribe', { uri: 'notes://x/1' }), version);
      checkRequestRevision(request('ping'), version);
      checkRequestRevision(request('tools/list'), version);
    }
    checkRequestRevision({ jsonrpc: '2.0', method: 'notifications/initialized' } as JsonRpcMessage, V2026);
    checkRequestRevision({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 1 } } as JsonRpcMessage, V2026);
    checkRequestRevision({ jsonrpc: '2.0', id: 1, result: {} } as JsonRpcMessage, V2026);
  });
});
