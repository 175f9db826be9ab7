import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createSecondUseFilter } from '../../../src/core/limits/second-use-filter.js';
import { tokenDigest } from '../../../src/core/wire/token-digest.js';

const digests = (n: number, prefix: string): string[] => Array.from({ length: n }, (_, i) => tokenDigest(`${prefix}-${i}`));

describe('createSecondUseFilter', () => {
  it('says a key is new on its first use and seen on the next ones', () => {
    const filter = createSecondUseFilter(100);
    let newOnFirstUse = 0;
    const keys = digests(4_000, 'a');
    for (const key of keys) {
      if (!filter.seenBefore(key)) newOnFirstUse++;
      assert.equal(filter.seenBefore(key), true);
      assert.equal(filter.seenBefore(key), true);
    }
    // A Bloom filter's false positives: a few percent of new keys pass for seen, which only admits them early.
    assert.ok(newOnFirstUse > 0.95 * keys.length, `${newOnFirstUse} of ${keys.length} new on their first use`);
  });

  it('remembers every one of the last `keys` new keys, however they interleave', () => {
    const filter = createSecondUseFilter(5_000);
    const inUse = digests(5_000, 'in-use');
    // Keys used in turn: a table of one slot per key would let two of them evict each other for ever.
    const firstRound = inUse.filter((key) => !filter.seenBefore(key)).length;
    assert.ok(firstRound > 0.95 * inUse.length, `${firstRound} of ${inUse.length} new on the first round`);
    assert.equal(inUse.filter((key) => filter.seenBefore(key)).length, inUse.length, 'every one seen on the second');
  });

  it('forgets keys once two generations of new keys have passed: it is bounded', () => {
    const filter = createSecondUseFilter(1_000);
    const old = digests(1_000, 'old');
    for (const key of old) filter.seenBefore(key);
    for (const key of digests(2 * 1_024 + 1, 'newer')) filter.seenBefore(key);
    const stillSeen = old.filter((key) => filter.seenBefore(key)).length;
    assert.ok(stillSeen < 0.05 * old.length, `${stillSeen} of ${old.length} old keys still pass for seen (false positives only)`);
  });

  it('takes few distinct keys for one another, in the first generation and once both are full', () => {
    const filter = createSecondUseFilter(10_000);
    const first = digests(10_000, 'distinct');
    const falseSeen = first.filter((key) => filter.seenBefore(key)).length;
    assert.ok(falseSeen < 0.02 * first.length, `${falseSeen} of ${first.length} new keys passed for seen`);
    // Steady state: both generations full, as under an endless stream of new tokens.
    for (const key of digests(30_000, 'stream')) filter.seenBefore(key);
    const later = digests(10_000, 'later');
    const laterSeen = later.filter((key) => filter.seenBefore(key)).length;
    assert.ok(laterSeen < 0.08 * later.length, `${laterSeen} of ${later.length} new keys passed for seen`);
  });
});
