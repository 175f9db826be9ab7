import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { AuthInfo } from '../../../src/core/kernel/auth-info.js';
import { ConfigurationError } from '../../../src/core/kernel/errors.js';
import { createTokenCache } from '../../../src/core/token/token-cache.js';

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
    cache.set('short', info('short'), { ttlSeconds: 5 });
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
    assert.throws(() => createTokenCache({ maxBytes: 0 }), (e: unknown) => e instanceof ConfigurationError && e.setting === 'tokenCache.maxBytes');
    assert.throws(() => createTokenCache({ maxBytes: 1.5 }), (e: unknown) => e instanceof ConfigurationError && e.setting === 'tokenCache.maxBytes');
  });

  it('stays within maxBytes, evicting the least recently used first', () => {
    const cache = createTokenCache({ maxBytes: 10_000 });
    cache.set('a', info('a'), { bytes: 4_000 });
    cache.set('b', info('b'), { bytes: 4_000 });
    cache.get('a');
    cache.set('c', info('c'), { bytes: 4_000 });
    assert.equal(cache.bytes, 8_000);
    assert.ok(cache.get('a'), 'a was used after b');
    assert.equal(cache.get('b'), undefined, 'b was the least recently used');
    assert.ok(cache.get('c'));
    cache.set('big', info('big'), { bytes: 9_000 });
    assert.equal(cache.size, 1, 'room for the large entry was made by evicting both');
    assert.equal(cache.bytes, 9_000);
  });

  it('keeps no entry larger than maxBytes on its own, and replacing an entry recounts its bytes', () => {
    const cache = createTokenCache({ maxBytes: 1_000 });
    cache.set('a', info('a'), { bytes: 600 });
    cache.set('huge', info('huge'), { bytes: 1_001 });
    assert.equal(cache.get('huge'), undefined);
    assert.ok(cache.get('a'), 'an oversized entry evicts nothing');
    cache.set('a', info('a'), { bytes: 300 });
    assert.equal(cache.bytes, 300);
    assert.equal(cache.size, 1);
    cache.clear();
    assert.equal(cache.bytes, 0);
  });

  it('releases the bytes of expired entries when they are looked up', () => {
    const clock = manualClock();
    const cache = createTokenCache({ now: clock.now, maxTtlSeconds: 10 });
    cache.set('a', info('a'), { bytes: 500 });
    clock.advance(10_000);
    assert.equal(cache.get('a'), undefined);
    assert.equal(cache.bytes, 0);
  });

  it('keeps entry and byte counts exact through a long run of mixed operations', () => {
    const cache = createTokenCache({ maxEntries: 50, maxBytes: 20_000 });
    const sizes = new Map<string, number>();
    let seed = 7;
    const random = (n: number): number => (seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648) % n;
    for (let i = 0; i < 5_000; i++) {
      const key = `k${random(200)}`;
      if (random(3) === 0) {
        cache.get(key);
      } else {
        const bytes = 100 + random(1_500);
        cache.set(key, info(key), { bytes });
        sizes.set(key, bytes);
      }
      assert.ok(cache.size <= 50 && cache.bytes <= 20_000, `bounds hold at step ${i}`);
    }
    let held = 0;
    for (const [key, bytes] of sizes) if (cache.get(key) !== undefined) held += bytes;
    assert.equal(cache.bytes, held, 'the byte count is the sum of what is held');
  });
});
