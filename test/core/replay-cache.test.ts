// The in-memory DPoP replay cache: one claim per jti while it lives, bounded in entries.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ConfigurationError } from '../../src/core/errors.js';
import { createMemoryReplayCache } from '../../src/core/replay-cache.js';

describe('createMemoryReplayCache', () => {
  it('claims a jti once until it expires', () => {
    let now = 1_000_000;
    const cache = createMemoryReplayCache({ now: () => now });
    assert.equal(cache.claim('a', now + 60_000), true);
    assert.equal(cache.claim('a', now + 60_000), false);
    assert.equal(cache.claim('b', now + 60_000), true);
    now += 60_000;
    // Expired: the proof carrying it can no longer be accepted, so the identifier is free again.
    assert.equal(cache.claim('a', now + 60_000), true);
  });

  it('sweeps expired entries as it goes', () => {
    let now = 0;
    const cache = createMemoryReplayCache({ now: () => now });
    for (let i = 0; i < 100; i++) cache.claim(`old-${i}`, 1_000);
    assert.equal(cache.size, 100);
    now = 2_000;
    cache.claim('new', 5_000);
    assert.equal(cache.size, 1);
  });

  it('holds at most maxEntries, and when full of live claims refuses new ones rather than forget one', () => {
    let at = 0;
    const cache = createMemoryReplayCache({ maxEntries: 3, now: () => at });
    for (const jti of ['a', 'b', 'c']) assert.equal(cache.claim(jti, 10_000), true);
    assert.throws(() => cache.claim('d', 10_000), /live proofs/);
    assert.equal(cache.size, 3);
    assert.equal(cache.claim('a', 10_000), false, 'a flood cannot wash out a live claim');
    at = 10_000;
    assert.equal(cache.claim('d', 20_000), true, 'expired claims make room');
  });

  it('refuses a claim whose proof has already expired, so a late replay is not recorded anew', () => {
    let at = 5_000;
    const cache = createMemoryReplayCache({ now: () => at });
    assert.equal(cache.claim('late', 5_000), false);
    assert.equal(cache.claim('late', 4_999), false);
    at = 0;
    assert.equal(cache.claim('late', 5_000), true);
  });

  it('refuses a maxEntries that is not a positive whole number', () => {
    for (const maxEntries of [0, -1, 1.5, Number.NaN]) {
      assert.throws(() => createMemoryReplayCache({ maxEntries }), ConfigurationError);
    }
  });
});
