// Every request failure carries what the adapter needs to answer: status, stable reason, JSON-RPC code,
// RFC 6750 error and extra headers. Start-up failures name the setting first.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  AuthorizationServerUnavailableError,
  ConfigurationError,
  FORBIDDEN_JSONRPC_CODE,
  GuardError,
  InsufficientScopeError,
  InvalidDpopProofError,
  InvalidRequestError,
  InvalidTokenError,
  MissingTokenError,
  RequestRejectedError,
  UNAUTHORIZED_JSONRPC_CODE,
  UNAVAILABLE_JSONRPC_CODE,
} from '../../../src/core/kernel/errors.js';

describe('JSON-RPC codes of the guard\'s refusals', () => {
  test('401, 403 and 503 bodies use -31401, -31403 and -31503', () => {
    assert.equal(UNAUTHORIZED_JSONRPC_CODE, -31401);
    assert.equal(FORBIDDEN_JSONRPC_CODE, -31403);
    assert.equal(UNAVAILABLE_JSONRPC_CODE, -31503);
  });

  test('they sit outside the range JSON-RPC reserves and MCP partitions (-32768 to -32000)', () => {
    // MCP 2026-07-28 basic "Error Codes": new codes SHOULD be outside it; -32002 meant "Resource not found".
    for (const code of [UNAUTHORIZED_JSONRPC_CODE, FORBIDDEN_JSONRPC_CODE, UNAVAILABLE_JSONRPC_CODE]) {
      assert.ok(Number.isInteger(code) && (code < -32768 || code > -32000), String(code));
    }
    assert.equal(new Set([UNAUTHORIZED_JSONRPC_CODE, FORBIDDEN_JSONRPC_CODE, UNAVAILABLE_JSONRPC_CODE]).size, 3);
  });

  test('every refusal class uses them', () => {
    assert.equal(new MissingTokenError().jsonRpcCode, UNAUTHORIZED_JSONRPC_CODE);
    assert.equal(new InvalidTokenError('x').jsonRpcCode, UNAUTHORIZED_JSONRPC_CODE);
    assert.equal(new InvalidDpopProofError('x').jsonRpcCode, UNAUTHORIZED_JSONRPC_CODE);
    assert.equal(new InsufficientScopeError('x', [], []).jsonRpcCode, FORBIDDEN_JSONRPC_CODE);
    assert.equal(new AuthorizationServerUnavailableError('x').jsonRpcCode, UNAVAILABLE_JSONRPC_CODE);
  });
});

describe('InvalidDpopProofError', () => {
  test('is 401 invalid_dpop_proof (RFC 9449 section 7.1); the reason defaults to dpop_proof_invalid', () => {
    const e = new InvalidDpopProofError('bad proof');
    assert.equal(e.status, 401);
    assert.equal(e.bearerError, 'invalid_dpop_proof');
    assert.equal(e.reason, 'dpop_proof_invalid');
    assert.equal(new InvalidDpopProofError('used', 'dpop_proof_replayed').reason, 'dpop_proof_replayed');
  });
});

describe('MissingTokenError', () => {
  test('is a bare 401: no RFC 6750 error code, no extra headers', () => {
    const e = new MissingTokenError();
    assert.ok(e instanceof GuardError);
    assert.ok(e instanceof Error);
    assert.equal(e.name, 'MissingTokenError');
    assert.equal(e.status, 401);
    assert.equal(e.reason, 'token_missing');
    assert.equal(e.jsonRpcCode, -31401);
    assert.equal(e.bearerError, undefined);
    assert.deepEqual(e.headers, {});
    assert.match(e.message, /Authorization: Bearer <token>/);
  });
});

describe('InvalidRequestError', () => {
  test('is 400 invalid_request with -32600; the reason defaults to token_malformed', () => {
    const e = new InvalidRequestError('two Authorization headers');
    assert.equal(e.name, 'InvalidRequestError');
    assert.equal(e.status, 400);
    assert.equal(e.reason, 'token_malformed');
    assert.equal(e.jsonRpcCode, -32600);
    assert.equal(e.bearerError, 'invalid_request');
    assert.deepEqual(e.headers, {});
    assert.equal(e.message, 'two Authorization headers');
  });

  test('takes a more precise reason', () => {
    assert.equal(new InvalidRequestError('token in query', 'token_in_query').reason, 'token_in_query');
    assert.equal(new InvalidRequestError('twice', 'token_multiple').reason, 'token_multiple');
  });
});

describe('InvalidTokenError', () => {
  test('is 401 invalid_token with -31401; the reason defaults to token_invalid', () => {
    const e = new InvalidTokenError('token expired');
    assert.equal(e.name, 'InvalidTokenError');
    assert.equal(e.status, 401);
    assert.equal(e.reason, 'token_invalid');
    assert.equal(e.jsonRpcCode, -31401);
    assert.equal(e.bearerError, 'invalid_token');
    assert.deepEqual(e.headers, {});
    assert.equal(e.cause, undefined);
    assert.equal(Object.hasOwn(e, 'cause'), false);
  });

  test('keeps a precise reason and the cause', () => {
    const cause = new Error('jose said no');
    const e = new InvalidTokenError('token expired', 'token_expired', cause);
    assert.equal(e.reason, 'token_expired');
    assert.equal(e.cause, cause);
  });
});

describe('InsufficientScopeError', () => {
  test('is 403 insufficient_scope with -31403', () => {
    const e = new InsufficientScopeError('needs x:write', ['x:write'], ['x:read']);
    assert.equal(e.name, 'InsufficientScopeError');
    assert.equal(e.status, 403);
    assert.equal(e.reason, 'scope_insufficient');
    assert.equal(e.jsonRpcCode, -31403);
    assert.equal(e.bearerError, 'insufficient_scope');
    assert.deepEqual(e.headers, {});
  });

  test('challengeScopes is required ∪ granted: required first, then granted, each once', () => {
    const e = new InsufficientScopeError('m', ['b:write', 'a:admin', 'b:write'], ['a:read', 'a:admin', 'c:other', 'a:read']);
    assert.deepEqual(e.requiredScopes, ['b:write', 'a:admin', 'b:write']);
    assert.deepEqual(e.challengeScopes, ['b:write', 'a:admin', 'a:read', 'c:other']);
    assert.equal(new Set(e.challengeScopes).size, e.challengeScopes.length);
  });

  test('the order is stable whatever order the granted scopes come in after the required ones', () => {
    const a = new InsufficientScopeError('m', ['x:write'], ['x:read', 'y:read']);
    const b = new InsufficientScopeError('m', ['x:write'], ['x:read', 'y:read']);
    assert.deepEqual(a.challengeScopes, b.challengeScopes);
    assert.deepEqual(a.challengeScopes, ['x:write', 'x:read', 'y:read']);
  });

  test('with nothing granted the challenge names exactly the required scopes', () => {
    const e = new InsufficientScopeError('m', ['x:write'], []);
    assert.deepEqual(e.challengeScopes, ['x:write']);
  });

  test('copies its inputs: later changes to the caller\'s arrays do not leak in', () => {
    const required = ['x:write'];
    const granted = ['x:read'];
    const e = new InsufficientScopeError('m', required, granted);
    required.push('mutated');
    granted.push('mutated');
    assert.deepEqual(e.requiredScopes, ['x:write']);
    assert.deepEqual(e.challengeScopes, ['x:write', 'x:read']);
  });
});

describe('AuthorizationServerUnavailableError', () => {
  test('is 503 with Retry-After 5 by default, no bearer error (never a 401)', () => {
    const e = new AuthorizationServerUnavailableError('JWKS unreachable');
    assert.equal(e.name, 'AuthorizationServerUnavailableError');
    assert.equal(e.status, 503);
    assert.equal(e.reason, 'authorization_server_unavailable');
    assert.equal(e.jsonRpcCode, -31503);
    assert.equal(e.bearerError, undefined);
    assert.deepEqual(e.headers, { 'Retry-After': '5' });
  });

  test('takes the Retry-After seconds and the cause', () => {
    const cause = new Error('ECONNREFUSED');
    const e = new AuthorizationServerUnavailableError('down', 30, cause);
    assert.deepEqual(e.headers, { 'Retry-After': '30' });
    assert.equal(e.cause, cause);
  });
});

describe('RequestRejectedError', () => {
  test('carries exactly the status, reason, code and headers it is given, no bearer error', () => {
    const e = new RequestRejectedError('Method not allowed', {
      status: 405,
      reason: 'method_not_allowed',
      jsonRpcCode: -32600,
      headers: { Allow: 'POST, OPTIONS' },
    });
    assert.equal(e.name, 'RequestRejectedError');
    assert.ok(e instanceof GuardError);
    assert.equal(e.status, 405);
    assert.equal(e.reason, 'method_not_allowed');
    assert.equal(e.jsonRpcCode, -32600);
    assert.equal(e.bearerError, undefined);
    assert.deepEqual(e.headers, { Allow: 'POST, OPTIONS' });
  });

  test('headers default to an empty object', () => {
    const e = new RequestRejectedError('Header mismatch: x', { status: 400, reason: 'header_mismatch', jsonRpcCode: -32020 });
    assert.deepEqual(e.headers, {});
  });
});

describe('ConfigurationError', () => {
  test('the message starts with the setting, and the setting is kept apart', () => {
    const e = new ConfigurationError('MCP_AUTH_ISSUER', 'is required');
    assert.ok(e instanceof Error);
    assert.equal(e instanceof GuardError, false);
    assert.equal(e.name, 'ConfigurationError');
    assert.equal(e.setting, 'MCP_AUTH_ISSUER');
    assert.equal(e.message, 'MCP_AUTH_ISSUER: is required');
    assert.ok(e.message.startsWith(`${e.setting}: `));
  });
});
