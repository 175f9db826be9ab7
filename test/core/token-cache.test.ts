import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { AuthInfo } from '../../src/core/auth-info.js';
import { ConfigurationError } from '../../src/core/errors.js';
import { createTokenCache } from '../../src/core/token-cache.js';

function info(token: string, expiresAt?: number): AuthInfo {
  return { token, clientId: 'c', scopes: [], expiresAt, extra: { claims: {}, tokenType: 'jwt' } };
}

/** A clock the test moves by hand, in milliseconds. */
function manualClock(startMs = 1_700_000_000_000): { now: () => number; advance: (ms: number) => void } {
  let current = startMs;
  return { now: () => current, advance: (ms) => void (current += ms) };
}

describe('createTokenCache', () => {
  it('returns what was stored, as the same object', () => {
    const cache = createTokenCache();
    const a = info('a');
    cache.set('a', a);
    assert.equal(cache.get('a'), a);
    assert.equal(cache.get('b'), undefined);
  });

  it('evicts the least recently used entry beyond maxEntries', () => {
    const cache = createTokenCache({ maxEntries: 2 });
    cache.set('a', info('a'));
    cache.set('b', info('b'));
    cache.set('c', info('c'));
    assert.equal(cache.get('a'), undefined);
    assert.ok(cache.get('b'));
    assert.ok(cache.get('c'));
    assert.equal(cache.size, 2);
  });

  it('stays within maxEntries when every entry is in use (second chance terminates)', () => {
    const cache = createTokenCache({ maxEntries: 3 });
    for (let i = 0; i < 50; i++) {
      cache.set(`t${i}`, info(`t${i}`));
      for (let j = Math.max(0, i - 2); j <= i; j++) cache.get(`t${j}`);
      assert.ok(cache.size <= 3);
    }
    assert.ok(cache.get('t49'));
    assert.equal(cache.get('t0'), undefined);
  });

  it('counts a hit as a use', () => {
    const cache = createTokenCache({ maxEntries: 2 });
    cache.set('a', info('a'));
    cache.set('b', info('b'));
    cache.get('a');
    cache.set('c', info('c'));
    assert.ok(cache.get('a'));
    assert.equal(cache.get('b'), undefined);
  });

  it('never returns an entry past exp', () => {
    const clock = manualClock();
    const cache = createTokenCache({ now: clock.now, maxTtlSeconds: 300 });
    cache.set('a', info('a', clock.now() / 1000 + 10));
    clock.advance(9_999);
    assert.ok(cache.get('a'));
    clock.advance(1);
    assert.equal(cache.get('a'), undefined);
    assert.equal(cache.size, 0);
  });

  it('caps the lifetime at maxTtlSeconds and at the ttl given', () => {
    const clock = manualClock();
    const cache = createTokenCache({ now: clock.now, maxTtlSeconds: 60 });
    cache.set('long', info('long', clock.now() / 1000 + 3600));
    cache.set('short', info('short'), 5);
    clock.advance(5_000);
    assert.equal(cache.get('short'), undefined);
    assert.ok(cache.get('long'));
    clock.advance(55_000);
    assert.equal(cache.get('long'), undefined);
  });

  it('does not store an already expired identity', () => {
    const clock = manualClock();
    const cache = createTokenCache({ now: clock.now });
    cache.set('a', info('a', clock.now() / 1000 - 1));
    assert.equal(cache.size, 0);
  });

  it('refuses bad settings, naming them', () => {
    assert.throws(() => createTokenCache({ maxEntries: 0 }), (e: unknown) => e instanceof ConfigurationError && e.setting === 'tokenCache.maxEntries');
    assert.throws(() => createTokenCache({ maxTtlSeconds: -1 }), (e: unknown) => e instanceof ConfigurationError && e.setting === 'tokenCache.maxTtlSeconds');
  });
});
