// The sessions the gateway answers itself before a user connects keep the client's whole `initialize`: they are
// bounded in bytes of those requests too, not only in count, so that large requests cannot hold count × body limit.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { AuthInfo } from '../../../../src/core/kernel/auth-info.js';
import { LazySessions } from '../../../../src/gateway/upstream/http/lazy-sessions.js';

function caller(sub: string): AuthInfo {
  return { token: `t-${sub}`, clientId: 'client', scopes: [], extra: { sub, iss: 'https://as.example', claims: {}, tokenType: 'jwt' } };
}

test('kept initialize requests past the byte bound forget the least recently used sessions', () => {
  const sessions = new LazySessions({ maxSessions: 100, maxSessionsPerCaller: 100, idleTimeoutMs: 0, maxBytes: 10_000 });
  try {
    const initialize = (pad: number) => ({ jsonrpc: '2.0' as const, id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: { experimental: { pad: 'x'.repeat(pad) } }, clientInfo: { name: 't', version: '1' } } });
    const users = ['alice', 'bob', 'carol', 'dave'];
    const ids = users.map((user) => sessions.create(initialize(3_000), caller(user)));
    // Three of about 3.1 kB fit in 10 000 bytes; the fourth forgot the first.
    assert.equal(sessions.get(ids[0]!, caller('alice')), undefined);
    for (let i = 1; i < 4; i++) assert.ok(sessions.get(ids[i]!, caller(users[i]!)), users[i]);
    // Small ones fit beside them.
    const small = sessions.create(initialize(10), caller('erin'));
    assert.ok(sessions.get(small, caller('erin')));
  } finally {
    sessions.close();
  }
});
