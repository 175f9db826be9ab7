// Connected accounts: a session the gateway opens itself before the user connected is kept only when its registry
// binds it. An `initialize` it cannot keep (larger than the sessions' byte bound, counted in bytes, not characters)
// or a token naming nobody gets no id, so that the gateway refuses the `initialize` (as every session it opens itself)
// rather than answering 200 with an id nobody holds, which a client would re-initialize in a loop.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { AuthInfo } from '../../../../src/core/kernel/auth-info.js';
import { LazySessions } from '../../../../src/gateway/upstream/http/lazy-sessions.js';

const VERSION = '2025-11-25';

describe('connected accounts: the store of sessions opened before the user connected refuses what it cannot keep', () => {
  const initialize = { jsonrpc: '2.0' as const, id: 1, method: 'initialize', params: { protocolVersion: VERSION, capabilities: {}, clientInfo: { name: 't', version: '1' } } };

  it("a token naming no subject and no client gets 'no_identity', not an id", async () => {
    const sessions = new LazySessions({ maxSessions: 10, maxSessionsPerCaller: 10, idleTimeoutMs: 0 });
    try {
      const nobody: AuthInfo = { token: 't', clientId: '', scopes: [], extra: { iss: 'https://as.example', claims: {}, tokenType: 'jwt' } };
      assert.equal(sessions.create(initialize, nobody), 'no_identity');
    } finally {
      await sessions.close();
    }
  });

  it("an initialize larger in bytes than the bound gets 'busy'", async () => {
    const sessions = new LazySessions({ maxSessions: 10, maxSessionsPerCaller: 10, idleTimeoutMs: 0, maxBytes: 1_000 });
    try {
      const alice: AuthInfo = { token: 't', clientId: 'client', scopes: [], extra: { sub: 'alice', iss: 'https://as.example', claims: {}, tokenType: 'jwt' } };
      const large = { ...initialize, params: { ...initialize.params, capabilities: { experimental: { pad: '\u20ac'.repeat(400) } } } };
      assert.equal(sessions.create(large, alice), 'busy', '1 200 bytes, though 400 characters');
      assert.match(sessions.create(initialize, alice), /^mcpg-lazy-/);
    } finally {
      await sessions.close();
    }
  });
});
