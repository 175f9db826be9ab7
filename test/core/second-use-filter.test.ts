import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createSecondUseFilter } from '../../src/core/second-use-filter.js';
import { tokenDigest } from '../../src/core/token-digest.js';

const digests = (n: number, prefix: string): string[] => Array.from({ length: n }, (_, i) => tokenDigest(`${prefix}-${i}`));

describe('createSecondUseFilter', () => {
  it('says a key is new on its first use and seen on the next', () => {
    const filter = createSecondUseFilter(100);
    // Enough keys that half their tags have the high bit set: a tag compared as signed would never match.
    for (const key of digests(2_000, 'a')) {
      assert.equal(filter.seenBefore(key), false);
      assert.equal(filter.seenBefore(key), true);
      assert.equal(filter.seenBefore(key), true);
    }
  });

  it('remembers about as many recent keys as it was sized for, and forgets older ones', () => {
    const filter = createSecondUseFilter(1_000);
    const recent = digests(1_000, 'recent');
    for (const key of recent) filter.seenBefore(key);
    const remembered = recent.filter((key) => filter.seenBefore(key)).length;
    // 2 048 slots: the i-th key survives the later ones with probability e^-((1000 - i) / 2048), about 0.8 on average.
    assert.ok(remembered > 0.5 * recent.length && remembered < recent.length, `${remembered} of ${recent.length} remembered`);
    // 100 000 other keys leave each slot untouched with probability e^-49: nothing old survives.
    for (const key of digests(100_000, 'flood')) filter.seenBefore(key);
    assert.equal(recent.filter((key) => filter.seenBefore(key)).length, 0, 'a bounded table: the old keys are gone');
  });

  it('does not take distinct keys for one another', () => {
    const filter = createSecondUseFilter(1_000_000);
    const keys = digests(200_000, 'distinct');
    assert.equal(keys.filter((key) => filter.seenBefore(key)).length, 0);
  });
});
