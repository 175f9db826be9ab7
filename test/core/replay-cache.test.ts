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

  it('holds at most maxEntries, dropping the oldest claims first', () => {
    const cache = createMemoryReplayCache({ maxEntries: 3, now: () => 0 });
    for (const jti of ['a', 'b', 'c', 'd']) assert.equal(cache.claim(jti, 10_000), true);
    assert.equal(cache.size, 3);
    assert.equal(cache.claim('d', 10_000), false);
    assert.equal(cache.claim('b', 10_000), false);
    // The oldest went first.
    assert.equal(cache.claim('a', 10_000), true);
  });

  it('refuses a maxEntries that is not a positive whole number', () => {
    for (const maxEntries of [0, -1, 1.5, Number.NaN]) {
      assert.throws(() => createMemoryReplayCache({ maxEntries }), ConfigurationError);
    }
  });
});
