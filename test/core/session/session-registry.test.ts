import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { AuthInfo } from '../../../src/core/kernel/auth-info.js';
import { createSessionRegistry } from '../../../src/core/session/session-registry.js';

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

  it('bindInUse hands back the new session in use, so a clock that moves on at once cannot expire it before its first use', () => {
    // Every reading of the clock a millisecond later, as on a busy machine with a 1 ms idle timeout.
    let now = 0;
    const registry = createSessionRegistry<string>({ maxSessions: 10, idleTimeoutMs: 1, now: () => now++ });
    assert.equal(registry.bind('looked-up', ALICE, 'a'), 'bound');
    assert.deepEqual(registry.lookup('looked-up', ALICE), { refused: 'session_unknown' }, 'the case bindInUse is for');
    const bound = registry.bindInUse('in-use', ALICE, 'b');
    assert.ok('session' in bound, 'bound');
    assert.equal(bound.session.value, 'b');
    registry.sweep();
    assert.equal(registry.size, 1, 'in use, it is not swept');
    bound.session.release();
    registry.sweep();
    assert.equal(registry.size, 0, 'released and idle, it is');
    assert.deepEqual(registry.bindInUse('x', caller(undefined, '')), { refused: 'no_identity' });
    const reservation = registry.reserve(BOB);
    assert.ok(typeof reservation === 'object', 'reserved');
    const reserved = reservation.bindInUse('r', 'c');
    assert.ok('session' in reserved, 'a reserved slot is bound in use too');
    registry.sweep();
    assert.equal(registry.size, 1);
    assert.deepEqual(registry.bindInUse('r', BOB), { refused: 'known' }, 'not bound twice');
  });

  it('a release with no acquire leaves a later exchange in progress: the session goes neither first nor when idle', () => {
    let now = 0;
    const registry = createSessionRegistry({ maxSessions: 2, idleTimeoutMs: 1000, now: () => now });
    registry.bind('busy', ALICE);
    registry.bind('idle', BOB);
    const busy = registry.lookup('busy', ALICE);
    assert.ok('session' in busy);
    busy.session.release();
    busy.session.release();
    busy.session.acquire();
    now = 100;
    assert.ok('session' in registry.lookup('idle', BOB), 'used since: the one in use is the least recently used');
    now = 500;
    registry.bind('third', BOB);
    assert.deepEqual(registry.lookup('idle', BOB), { refused: 'session_unknown' }, 'the session with nothing in progress was evicted');
    assert.ok('session' in registry.lookup('busy', ALICE), 'not the one in use');
    now = 2000;
    assert.ok('session' in registry.lookup('busy', ALICE), 'in use past the idle timeout');
    busy.session.release();
    now = 3000;
    assert.deepEqual(registry.lookup('busy', ALICE), { refused: 'session_unknown' }, 'idle once released');
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

  it('counts sessions being opened: a reservation takes a slot, binds into it, or gives it back', () => {
    const registry = createSessionRegistry({ maxSessions: 3, maxSessionsPerCaller: 2, idleTimeoutMs: 60_000 });
    const first = registry.reserve(ALICE);
    const second = registry.reserve(ALICE);
    assert.ok(typeof first === 'object' && typeof second === 'object');
    assert.equal(registry.reserve(ALICE), 'busy', 'both of the caller\'s slots are being opened');
    assert.equal(first.bind('a1', undefined), 'bound');
    const third = registry.reserve(ALICE);
    assert.ok(typeof third === 'object', 'an opened session can make room for the next');
    assert.deepEqual(registry.lookup('a1', ALICE), { refused: 'session_unknown' });
    second.release();
    second.release();
    third.release();
    assert.equal(registry.reserve(caller('', '')), 'no_identity');
    const bob = registry.reserve(BOB);
    assert.ok(typeof bob === 'object');
    assert.equal(bob.bind('b1', undefined), 'bound');
    assert.ok('session' in registry.lookup('b1', BOB));
  });

  it('tells onForget of every session that leaves: expiry, eviction, forget and clear', () => {
    let now = 0;
    const gone: string[] = [];
    const registry = createSessionRegistry<string>({ maxSessions: 2, idleTimeoutMs: 100, now: () => now, onForget: (s) => gone.push(`${s.id}=${s.value}`) });
    registry.bind('a', ALICE, 'A');
    registry.bind('b', BOB, 'B');
    registry.bind('c', BOB, 'C');
    assert.deepEqual(gone, ['a=A']);
    registry.forget('b');
    registry.forget('c', false);
    registry.bind('d', ALICE, 'D');
    now = 100;
    registry.sweep();
    registry.bind('e', ALICE, 'E');
    registry.clear();
    assert.deepEqual(gone, ['a=A', 'b=B', 'd=D', 'e=E']);
  });
});

describe('createSessionRegistry bounds with sessions being opened', () => {
  it('bind refuses rather than exceed maxSessions when every slot is being opened', () => {
    const registry = createSessionRegistry({ maxSessions: 2, idleTimeoutMs: 60_000 });
    assert.equal(typeof registry.reserve(ALICE), 'object');
    assert.equal(typeof registry.reserve(BOB), 'object');
    assert.equal(registry.bind('x', caller('carol')), 'full');
    assert.equal(registry.size, 0);
  });

  it('a reservation that cannot be had evicts nothing', () => {
    const registry = createSessionRegistry({ maxSessions: 2, maxSessionsPerCaller: 5, idleTimeoutMs: 60_000 });
    const bob = registry.reserve(BOB);
    assert.ok(typeof bob === 'object');
    assert.equal(bob.bind('b1', undefined), 'bound');
    assert.equal(typeof registry.reserve(ALICE), 'object');
    // One slot holds Bob's open session, the other Alice's opening: Carol may evict Bob's (least recently used).
    assert.equal(typeof registry.reserve(caller('carol')), 'object');
    assert.deepEqual(registry.lookup('b1', BOB), { refused: 'session_unknown' });
    // Now both slots are being opened: nothing can go, and nothing went.
    assert.equal(registry.reserve(caller('dave')), 'busy');
  });

  it('with evict: false a bound refuses the new session and forgets nobody\'s, idle ones still expire', () => {
    let now = 0;
    const forgotten: string[] = [];
    const registry = createSessionRegistry({ maxSessions: 3, maxSessionsPerCaller: 2, idleTimeoutMs: 1000, evict: false, now: () => now, onForget: (s) => forgotten.push(s.id) });
    assert.equal(registry.bind('a1', ALICE), 'bound');
    assert.equal(registry.bind('a2', ALICE), 'bound');
    assert.equal(registry.bind('a3', ALICE), 'caller_full', "Alice's own sessions are not given up either");
    assert.equal(registry.bind('b1', BOB), 'bound');
    assert.equal(registry.bind('c1', caller('carol')), 'full');
    assert.equal(registry.reserve(caller('carol')), 'busy');
    assert.deepEqual(forgotten, []);
    for (const id of ['a1', 'a2']) assert.ok('session' in registry.lookup(id, ALICE), id);
    assert.ok('session' in registry.lookup('b1', BOB));
    // Once Bob's session has been idle past the timeout, it expires and Carol gets the slot; Alice's, in use, stay.
    for (const id of ['a1', 'a2']) {
      const found = registry.lookup(id, ALICE);
      assert.ok('session' in found);
      found.session.acquire();
    }
    now = 1500;
    assert.equal(registry.bind('c1', caller('carol')), 'bound');
    assert.ok('session' in registry.lookup('a2', ALICE));
    assert.deepEqual(forgotten, ['b1']);
  });

  it('bounds the bytes the values retain, by the estimates given: least recently used (idle first) go, or with evict: false the new one is refused', () => {
    const forgotten: string[] = [];
    const registry = createSessionRegistry({ maxSessions: 100, maxBytes: 1000, idleTimeoutMs: 60_000, onForget: (s) => forgotten.push(s.id) });
    assert.equal(registry.bind('a1', ALICE, undefined, 400), 'bound');
    assert.equal(registry.bind('b1', BOB, undefined, 400), 'bound');
    const busy = registry.lookup('a1', ALICE);
    assert.ok('session' in busy);
    busy.session.acquire();
    // 400 + 400 + 300 > 1000: the least recently used idle one goes (Bob's), not Alice's, in use.
    assert.equal(registry.bind('c1', caller('carol'), undefined, 300), 'bound');
    assert.deepEqual(forgotten, ['b1']);
    const reservation = registry.reserve(caller('dave'));
    assert.ok(typeof reservation === 'object');
    assert.equal(reservation.bind('d1', undefined, 301), 'bound', 'a reserved slot is bound within the bytes too');
    assert.deepEqual(forgotten, ['b1', 'c1']);
    assert.equal(registry.bind('huge', BOB, undefined, 1001), 'full', 'one larger than the whole bound is refused');
    registry.forget('d1');
    assert.equal(registry.bind('e1', BOB, undefined, 600), 'bound', 'forgetting gives its bytes back');
    assert.equal(registry.size, 2);

    const strict = createSessionRegistry({ maxSessions: 100, maxBytes: 1000, idleTimeoutMs: 60_000, evict: false });
    assert.equal(strict.bind('a1', ALICE, undefined, 700), 'bound');
    assert.equal(strict.bind('b1', BOB, undefined, 301), 'full');
    assert.equal(strict.bind('b1', BOB, undefined, 300), 'bound');
    assert.equal(strict.size, 2);
  });
});
