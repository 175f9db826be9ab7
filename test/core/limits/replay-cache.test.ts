// The in-memory DPoP replay cache: one claim per jti while it lives, bounded in entries, and each caller bounded
// to its share, so that no caller fills it for the others.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ConfigurationError } from '../../../src/core/kernel/errors.js';
import { createMemoryReplayCache, DEFAULT_REPLAY_CACHE_MAX_ENTRIES, DEFAULT_REPLAY_CACHE_MAX_ENTRIES_PER_CALLER, ReplayShareExceededError } from '../../../src/core/limits/replay-cache.js';

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

  it('refuses a maxEntries or maxEntriesPerCaller that is not a positive whole number', () => {
    for (const value of [0, -1, 1.5, Number.NaN]) {
      assert.throws(() => createMemoryReplayCache({ maxEntries: value }), (e: unknown) => e instanceof ConfigurationError && e.setting === 'maxEntries');
      assert.throws(() => createMemoryReplayCache({ maxEntriesPerCaller: value }), (e: unknown) => e instanceof ConfigurationError && e.setting === 'maxEntriesPerCaller');
    }
  });
});

describe('createMemoryReplayCache: each caller its share', () => {
  /** Claims without a caller (no share) until the cache is half full, where the shares start to count. */
  const fillToPressure = (cache: { claim(jti: string, expiresAtMs: number): boolean }, maxEntries: number): void => {
    for (let i = 0; i < Math.ceil(maxEntries / 2); i++) assert.equal(cache.claim(`filler-${i}`, 1e15), true);
  };
  const shareExceeded = (maxPerCaller: number, retryAfterMs: number) => (e: unknown) =>
    e instanceof ReplayShareExceededError && e.maxPerCaller === maxPerCaller && e.retryAfterMs === retryAfterMs;

  it('a caller holding its share of live claims is refused, with the time until its oldest expires; the others are not', () => {
    let at = 0;
    const cache = createMemoryReplayCache({ maxEntries: 100, maxEntriesPerCaller: 3, now: () => at });
    fillToPressure(cache, 100);
    for (let i = 0; i < 3; i++) assert.equal(cache.claim(`m${i}`, 60_000 + i, 'mallory'), true);
    assert.throws(() => cache.claim('m3', 60_000, 'mallory'), shareExceeded(3, 60_000));
    assert.equal(cache.claim('m0', 60_000, 'mallory'), false, 'a replay is a replay, whatever the share');
    assert.equal(cache.claim('a0', 60_000, 'alice'), true, 'another caller is served');
    assert.equal(cache.size, 54, 'the refused claim was not kept');
    at = 60_000;
    assert.equal(cache.claim('m3', 120_000, 'mallory'), true, "the oldest expired: room for one");
    assert.throws(() => cache.claim('m4', 120_000, 'mallory'), shareExceeded(3, 1));
  });

  it('counts only live claims, whatever order their expiries come in', () => {
    let at = 0;
    const cache = createMemoryReplayCache({ maxEntries: 100, maxEntriesPerCaller: 2, now: () => at });
    fillToPressure(cache, 100);
    assert.equal(cache.claim('late', 70_000, 'eve'), true);
    assert.equal(cache.claim('early', 5_000, 'eve'), true);
    assert.throws(() => cache.claim('x', 70_000, 'eve'), shareExceeded(2, 5_000));
    at = 5_000;
    // 'early' expired although 'late', claimed first, lives on.
    assert.equal(cache.claim('x', 70_000, 'eve'), true);
  });

  it("one caller's flood fills at most half the cache, and never makes another caller's claim fail", () => {
    let at = 0;
    const cache = createMemoryReplayCache({ maxEntries: 10, maxEntriesPerCaller: 4, now: () => at });
    let refused = 0;
    for (let i = 0; i < 1000; i++) {
      try {
        cache.claim(`flood-${i}`, 70_000, 'mallory');
      } catch (error) {
        assert.ok(error instanceof ReplayShareExceededError);
        refused++;
      }
    }
    // Unlimited below half full (5 of 10), then past its share of 4.
    assert.equal(refused, 995);
    assert.equal(cache.size, 5);
    // Every other caller within its share is served, to the last entry: none gets a full cache from the flood.
    for (const caller of ['alice', 'bob', 'carol', 'dave', 'erin']) assert.equal(cache.claim(`${caller}-1`, 70_000, caller), true);
    assert.equal(cache.size, 10);
  });

  it('a caller whose claims all expired starts afresh, and forgetting an old claim never drops its new share', () => {
    let at = 0;
    const cache = createMemoryReplayCache({ maxEntries: 100, maxEntriesPerCaller: 2, now: () => at });
    fillToPressure(cache, 100); // live claims at the front: the sweep stops there
    assert.equal(cache.claim('a', 10_000, 'carol'), true);
    at = 20_000;
    // carol's only claim expired but is still held behind the live one; her share is empty.
    assert.equal(cache.claim('b', 80_000, 'carol'), true);
    assert.equal(cache.claim('a', 80_000, 'carol'), true, 'an expired jti can be claimed again');
    assert.throws(() => cache.claim('c', 80_000, 'carol'), shareExceeded(2, 60_000));
  });

  it('a single busy caller is not limited while the cache is less than half full', () => {
    const cache = createMemoryReplayCache({ maxEntries: 100, maxEntriesPerCaller: 1 });
    for (let i = 0; i < 50; i++) assert.equal(cache.claim(`busy-${i}`, Date.now() + 60_000, 'busy'), true);
    assert.throws(() => cache.claim('busy-50', Date.now() + 60_000, 'busy'), ReplayShareExceededError);
    assert.equal(cache.claim('other', Date.now() + 60_000, 'other'), true);
  });

  it('claims without a caller count against no share; the default share is 1 % of maxEntries, at least one', () => {
    const cache = createMemoryReplayCache({ maxEntries: 5 });
    for (let i = 0; i < 5; i++) assert.equal(cache.claim(`n${i}`, Date.now() + 60_000), true);
    assert.equal(DEFAULT_REPLAY_CACHE_MAX_ENTRIES_PER_CALLER, DEFAULT_REPLAY_CACHE_MAX_ENTRIES / 100);
    const small = createMemoryReplayCache({ maxEntries: 250 });
    fillToPressure(small, 250);
    assert.equal(small.claim('s1', Date.now() + 60_000, 'dave'), true);
    assert.equal(small.claim('s2', Date.now() + 60_000, 'dave'), true);
    assert.throws(() => small.claim('s3', Date.now() + 60_000, 'dave'), ReplayShareExceededError);
    const tiny = createMemoryReplayCache({ maxEntries: 3 });
    assert.equal(tiny.claim('t1', Date.now() + 60_000, 'dave'), true);
    assert.equal(tiny.claim('t2', Date.now() + 60_000, 'dave'), true, 'less than half full');
    assert.throws(() => tiny.claim('t3', Date.now() + 60_000, 'dave'), ReplayShareExceededError);
  });
});
