import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { AuthInfo } from '../../src/core/auth-info.js';
import { createSessionRegistry } from '../../src/gateway/session-registry.js';

function caller(sub: string | undefined, clientId = 'client-1', iss = 'https://as.example'): AuthInfo {
  return { token: `t-${sub}`, clientId, scopes: [], extra: { ...(sub !== undefined ? { sub } : {}), iss, claims: {}, tokenType: 'jwt' } };
}

const ALICE = caller('alice');
const BOB = caller('bob');

describe('createSessionRegistry', () => {
  it('binds a session to issuer, subject and client, and refuses everyone else', () => {
    const registry = createSessionRegistry({ maxSessions: 10, idleTimeoutMs: 1000 });
    assert.equal(registry.bind('s1', ALICE), 'bound');
    assert.equal(registry.bind('s1', ALICE), 'known');
    assert.equal(registry.bind('s1', BOB), 'conflict');
    assert.ok('session' in registry.lookup('s1', { ...ALICE, token: 'refreshed', scopes: ['more'] }));
    assert.deepEqual(registry.lookup('s1', BOB), { refused: 'session_owner_mismatch' });
    assert.deepEqual(registry.lookup('s1', caller('alice', 'client-2')), { refused: 'session_owner_mismatch' });
    assert.deepEqual(registry.lookup('s1', caller('alice', 'client-1', 'https://other.example')), { refused: 'session_owner_mismatch' });
    assert.deepEqual(registry.lookup('s2', ALICE), { refused: 'session_unknown' });
  });

  it('binds nothing to a token with neither subject nor client id, but does to one with either', () => {
    const registry = createSessionRegistry({ maxSessions: 10, idleTimeoutMs: 1000 });
    const nobody = caller(undefined, '');
    assert.equal(registry.bind('s1', nobody), 'no_identity');
    assert.equal(registry.bind('s1', caller('', '')), 'no_identity');
    assert.deepEqual(registry.lookup('s1', nobody), { refused: 'session_no_identity' });
    assert.equal(registry.bind('s2', caller(undefined, 'machine-client')), 'bound');
    assert.equal(registry.bind('s3', caller('user', '')), 'bound');
  });

  it('expires idle sessions on the injected clock, never while an exchange is in progress', () => {
    let now = 0;
    const registry = createSessionRegistry({ maxSessions: 10, idleTimeoutMs: 1000, now: () => now });
    registry.bind('idle', ALICE);
    registry.bind('busy', BOB);
    const busy = registry.lookup('busy', BOB);
    assert.ok('session' in busy);
    busy.session.acquire();
    now = 999;
    assert.ok('session' in registry.lookup('idle', ALICE), 'use refreshes the idle time');
    now = 1998;
    assert.ok('session' in registry.lookup('idle', ALICE));
    now = 2998;
    assert.deepEqual(registry.lookup('idle', ALICE), { refused: 'session_unknown' });
    assert.ok('session' in registry.lookup('busy', BOB), 'an open stream keeps the session');
    busy.session.release();
    now = 3997;
    assert.ok('session' in registry.lookup('busy', BOB));
    now = 5000;
    registry.bind('new', ALICE);
    assert.equal(registry.size, 1, 'binding sweeps expired sessions');
  });

  it('one caller past maxSessionsPerCaller loses its own oldest session, never anyone else\'s', () => {
    const registry = createSessionRegistry({ maxSessions: 100, maxSessionsPerCaller: 3, idleTimeoutMs: 60_000 });
    registry.bind('bob-1', BOB);
    for (let i = 0; i < 50; i++) registry.bind(`alice-${i}`, ALICE);
    assert.ok('session' in registry.lookup('bob-1', BOB), "another caller's session survives the flood");
    assert.equal(registry.size, 4);
    assert.deepEqual(registry.lookup('alice-46', ALICE), { refused: 'session_unknown' });
    for (const id of ['alice-47', 'alice-48', 'alice-49']) assert.ok('session' in registry.lookup(id, ALICE), id);
  });

  it('evicts the least recently used session at maxSessions, preferring one with nothing in progress', () => {
    const registry = createSessionRegistry({ maxSessions: 2, idleTimeoutMs: 60_000 });
    registry.bind('a', ALICE);
    registry.bind('b', BOB);
    const a = registry.lookup('a', ALICE);
    assert.ok('session' in a);
    registry.bind('c', ALICE);
    assert.deepEqual(registry.lookup('b', BOB), { refused: 'session_unknown' });
    // `a` is now the least recently used but streaming, so `c` goes instead.
    a.session.acquire();
    registry.lookup('c', ALICE);
    registry.bind('d', BOB);
    assert.ok('session' in registry.lookup('a', ALICE));
    assert.deepEqual(registry.lookup('c', ALICE), { refused: 'session_unknown' });
    assert.equal(registry.size, 2);
  });

  it('forgets sessions, and a late release does not bring one back', () => {
    const registry = createSessionRegistry({ maxSessions: 10, idleTimeoutMs: 60_000 });
    registry.bind('s', ALICE);
    const s = registry.lookup('s', ALICE);
    assert.ok('session' in s);
    s.session.acquire();
    registry.forget('s');
    s.session.release();
    assert.deepEqual(registry.lookup('s', ALICE), { refused: 'session_unknown' });
  });

  it('remembers list requests by id and type, bounded, and says when older ones were dropped', () => {
    const registry = createSessionRegistry({ maxSessions: 10, idleTimeoutMs: 60_000 });
    registry.bind('s', ALICE);
    const found = registry.lookup('s', ALICE);
    assert.ok('session' in found);
    const session = found.session;
    session.recordListRequest(1, 'tools/list');
    session.recordListRequest('1', 'prompts/list');
    assert.equal(session.listMethodFor(1), 'tools/list');
    assert.equal(session.listMethodFor('1'), 'prompts/list');
    assert.equal(session.listMethodFor(2), undefined);
    for (let i = 100; i < 400; i++) session.recordListRequest(i, 'resources/list');
    assert.equal(session.listMethodFor(399), 'resources/list');
    assert.equal(session.listMethodFor(1), 'overflowed');
  });
});
