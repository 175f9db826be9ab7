import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { FORBIDDEN_JSONRPC_CODE, RATE_LIMITED_JSONRPC_CODE, UNAUTHORIZED_JSONRPC_CODE, UNAVAILABLE_JSONRPC_CODE } from '../../../src/core/kernel/errors.js';
import {
  isJsonRpcNotification,
  isJsonRpcRequest,
  isJsonRpcResponse,
  jsonRpcError,
  JsonRpcErrorCode,
  type JsonRpcMessage,
} from '../../../src/core/wire/jsonrpc.js';

const request: JsonRpcMessage = { jsonrpc: '2.0', id: 1, method: 'tools/list' };
const stringIdRequest: JsonRpcMessage = { jsonrpc: '2.0', id: 'a', method: 'tools/call', params: { name: 'x' } };
const zeroIdRequest: JsonRpcMessage = { jsonrpc: '2.0', id: 0, method: 'ping' };
const notification: JsonRpcMessage = { jsonrpc: '2.0', method: 'notifications/initialized' };
const success: JsonRpcMessage = { jsonrpc: '2.0', id: 1, result: {} };
const failure: JsonRpcMessage = { jsonrpc: '2.0', id: null, error: { code: -32600, message: 'Invalid Request' } };

describe('JSON-RPC type guards', () => {
  test('a request has a method and an id (0 and strings included)', () => {
    for (const m of [request, stringIdRequest, zeroIdRequest]) {
      assert.equal(isJsonRpcRequest(m), true, JSON.stringify(m));
      assert.equal(isJsonRpcNotification(m), false, JSON.stringify(m));
      assert.equal(isJsonRpcResponse(m), false, JSON.stringify(m));
    }
  });

  test('a notification has a method and no id', () => {
    assert.equal(isJsonRpcNotification(notification), true);
    assert.equal(isJsonRpcRequest(notification), false);
    assert.equal(isJsonRpcResponse(notification), false);
  });

  test('a response (success or error) has no method', () => {
    for (const m of [success, failure]) {
      assert.equal(isJsonRpcResponse(m), true, JSON.stringify(m));
      assert.equal(isJsonRpcRequest(m), false, JSON.stringify(m));
      assert.equal(isJsonRpcNotification(m), false, JSON.stringify(m));
    }
  });
});

describe('jsonRpcError', () => {
  test('without data: no data key at all', () => {
    const e = jsonRpcError(7, -32601, 'Method not found');
    assert.deepEqual(e, { jsonrpc: '2.0', id: 7, error: { code: -32601, message: 'Method not found' } });
    assert.equal(Object.hasOwn(e.error, 'data'), false);
    assert.equal(JSON.stringify(e), '{"jsonrpc":"2.0","id":7,"error":{"code":-32601,"message":"Method not found"}}');
  });

  test('with data, including falsy data other than undefined', () => {
    assert.deepEqual(jsonRpcError('x', -32003, 'Forbidden', { error: 'insufficient_scope' }), {
      jsonrpc: '2.0',
      id: 'x',
      error: { code: -32003, message: 'Forbidden', data: { error: 'insufficient_scope' } },
    });
    assert.equal(jsonRpcError(1, -1, 'm', null).error.data, null);
    assert.equal(jsonRpcError(1, -1, 'm', 0).error.data, 0);
    assert.equal(Object.hasOwn(jsonRpcError(1, -1, 'm', false).error, 'data'), true);
  });

  test('a null id (unknown request) stays null', () => {
    assert.equal(jsonRpcError(null, -32700, 'Parse error').id, null);
  });
});

describe('JsonRpcErrorCode', () => {
  test('standard JSON-RPC 2.0 codes, the MCP SDK transport codes, the MCP protocol codes (2026-07-28, and 2025-11-25\'s URL elicitation) and the guard\'s own', () => {
    assert.deepEqual(
      { ...JsonRpcErrorCode },
      {
        ParseError: -32700,
        InvalidRequest: -32600,
        MethodNotFound: -32601,
        InvalidParams: -32602,
        InternalError: -32603,
        ServerError: -32000,
        SessionNotFound: -32001,
        ResourceNotFound: -32002,
        HeaderMismatch: -32020,
        MissingRequiredClientCapability: -32021,
        UnsupportedProtocolVersion: -32022,
        UrlElicitationRequired: -32042,
        Unauthorized: -31401,
        Forbidden: -31403,
        RateLimited: -31429,
        Unavailable: -31503,
      },
    );
  });

  test('the public names of the guard\'s codes are the table\'s entries', () => {
    assert.equal(UNAUTHORIZED_JSONRPC_CODE, JsonRpcErrorCode.Unauthorized);
    assert.equal(FORBIDDEN_JSONRPC_CODE, JsonRpcErrorCode.Forbidden);
    assert.equal(RATE_LIMITED_JSONRPC_CODE, JsonRpcErrorCode.RateLimited);
    assert.equal(UNAVAILABLE_JSONRPC_CODE, JsonRpcErrorCode.Unavailable);
  });
});
