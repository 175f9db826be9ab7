// The cache of compiled policy conditions, shared by every policy of the process: bounded in entries and in
// estimated bytes (each condition's source and its planned program), most recently used kept, so that policies
// reloaded over time, each with conditions of its own, never grow it past its bounds.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { compilePolicy } from '../../../src/core/policy/compile-policy.js';
import {
  COMPILED_CONDITION_NODE_BYTES,
  MAX_COMPILED_CONDITION_BYTES,
  compileCondition,
  compiledConditionCache,
} from '../../../src/core/policy/policy-condition.js';

/** A condition near the node limit (about 1000 nodes), distinct by `tag`. */
const large = (tag: string): string => Array.from({ length: 99 }, (_, j) => `(int(claims.n_${tag}) + ${j}) * 2 > ${j}`).join(' && ');

describe('the compiled-condition cache', () => {
  test('each condition is charged its source and an estimate of its program; the total stays within the byte bound', { timeout: 60_000 }, () => {
    const before = compiledConditionCache().bytes;
    compileCondition(large('first'));
    const one = compiledConditionCache().bytes - before;
    assert.ok(one > 900 * COMPILED_CONDITION_NODE_BYTES, `a condition of about 1000 nodes charged ${one} bytes`);
    const fits = Math.floor(MAX_COMPILED_CONDITION_BYTES / one);
    for (let i = 0; i < fits + 20; i++) {
      compileCondition(large(`fill${i}`));
      assert.ok(compiledConditionCache().bytes <= MAX_COMPILED_CONDITION_BYTES, `${compiledConditionCache().bytes} bytes after ${i + 1}`);
    }
    assert.ok(compiledConditionCache().size <= fits);
  });

  test('the most recently used are kept: a policy reloaded again and again keeps sharing its conditions, those of old policies go', { timeout: 60_000 }, () => {
    const inForce = 'claims.sub == "kept"';
    const kept = compileCondition(inForce);
    const dropped = compileCondition('claims.sub == "dropped"');
    let reloads = 0;
    // Each reload compiles a policy of its own conditions, and the policy in force again (its rules meet its condition).
    while (reloads * 4 * 300_000 < 2 * MAX_COMPILED_CONDITION_BYTES) {
      reloads++;
      const tools = Object.fromEntries([0, 1, 2, 3].map((j) => [`t${j}`, { when: large(`r${reloads}_${j}`) }]));
      compilePolicy({ tools: { ...tools, current: { when: inForce } } });
      assert.ok(compiledConditionCache().bytes <= MAX_COMPILED_CONDITION_BYTES);
    }
    assert.equal(compileCondition(inForce), kept, 'the condition in use was kept, one compiled copy for every policy');
    assert.notEqual(compileCondition('claims.sub == "dropped"'), dropped, 'a condition no policy used since was evicted');
  });
});
