import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { AuthInfo } from '../../../src/core/kernel/auth-info.js';
import { checkNamedSession, SESSION_NOT_FOUND_JSONRPC_CODE, sessionNotFoundAnswer } from '../../../src/core/session/session-gate.js';
import { createSessionRegistry } from '../../../src/core/session/session-registry.js';

const caller = (sub: string | undefined, clientId = 'client-1'): AuthInfo => ({ token: 't', clientId, scopes: [], extra: { ...(sub === undefined ? {} : { sub }), claims: {}, tokenType: 'jwt' } });

test('every refusal gets one answer: 404, JSON-RPC -32001 Session not found, the request id', () => {
  assert.equal(SESSION_NOT_FOUND_JSONRPC_CODE, -32001);
  assert.deepEqual(sessionNotFoundAnswer(3), { status: 404, body: { jsonrpc: '2.0', id: 3, error: { code: -32001, message: 'Session not found' } } });
  assert.deepEqual(sessionNotFoundAnswer(null).body.id, null);
});

test('the gate passes the caller its own session, and refuses an unknown, a foreign or an unidentifiable one', () => {
  const registry = createSessionRegistry({ maxSessions: 10, idleTimeoutMs: 0 });
  assert.equal(registry.bind('s1', caller('alice')), 'bound');
  const passed = checkNamedSession(registry, 's1', caller('alice'));
  assert.ok(!('reason' in passed) && passed.id === 's1');
  assert.deepEqual(checkNamedSession(registry, 's2', caller('alice')), { reason: 'session_unknown', sessionId: 's2' });
  assert.deepEqual(checkNamedSession(registry, 's1', caller('bob')), { reason: 'session_owner_mismatch', sessionId: 's1' });
  assert.deepEqual(checkNamedSession(registry, 's1', caller(undefined, '')), { reason: 'session_no_identity', sessionId: 's1' });
});
