// A handler's list items filtered once per caller while they stay the same: the same objects, in the same order,
// with the same names. A changed array, a replaced or renamed item, another caller or a function rule filters again.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { compilePolicy } from '../../../src/core/policy/compile-policy.js';
import type { AuthInfo } from '../../../src/core/kernel/auth-info.js';

/** A caller as the token verifier makes one: a frozen identity shared by its requests. */
function verified(sub: string, groups: string[]): AuthInfo {
  return { token: 't', clientId: 'c', scopes: Object.freeze(['mcp']) as string[], extra: Object.freeze({ sub, claims: Object.freeze({ sub, groups: Object.freeze(groups) }), tokenType: 'jwt' }) };
}
const names = (result: Record<string, unknown>): string[] => (result.tools as { name: string }[]).map((tool) => tool.name);

describe('reused list items', () => {
  const policy = compilePolicy({ tools: { '*': { when: "mcp.name.startsWith('pub_') || 'staff' in claims.groups" } } });
  const alice = verified('alice', ['staff']);
  const bob = verified('bob', []);

  test('the same items are filtered as last time for the same caller, and never as another caller’s', () => {
    const tools = [{ name: 'pub_a' }, { name: 'secret' }, { name: 'pub_b' }];
    const first = policy.filterListResult('tools/list', { tools }, bob);
    assert.deepEqual(names(first), ['pub_a', 'pub_b']);
    const again = policy.filterListResult('tools/list', { tools }, bob);
    assert.deepEqual(names(again), ['pub_a', 'pub_b']);
    assert.notEqual(again.tools, first.tools, 'a copy each time: no answer shares its array with another');
    assert.deepEqual(names(policy.filterListResult('tools/list', { tools }, alice)), ['pub_a', 'secret', 'pub_b']);
    assert.deepEqual(names(policy.filterListResult('tools/list', { tools }, bob)), ['pub_a', 'pub_b']);
  });

  test('an item renamed or replaced in place, or one added, is filtered again', () => {
    const tools: { name: string }[] = [{ name: 'pub_a' }, { name: 'pub_b' }];
    assert.deepEqual(names(policy.filterListResult('tools/list', { tools }, bob)), ['pub_a', 'pub_b']);
    tools[1]!.name = 'secret';
    assert.deepEqual(names(policy.filterListResult('tools/list', { tools }, bob)), ['pub_a'], 'renamed in place');
    tools[1] = { name: 'pub_c' };
    assert.deepEqual(names(policy.filterListResult('tools/list', { tools }, bob)), ['pub_a', 'pub_c'], 'replaced');
    tools.push({ name: 'hidden' });
    assert.deepEqual(names(policy.filterListResult('tools/list', { tools }, bob)), ['pub_a', 'pub_c'], 'added');
    tools.push({ name: 'pub_d' });
    assert.deepEqual(names(policy.filterListResult('tools/list', { tools }, bob)), ['pub_a', 'pub_c', 'pub_d']);
  });

  test('a caller with no verified identity, or a rule that is a function, is filtered every time', () => {
    let calls = 0;
    const counted = compilePolicy({ tools: { '*': () => (calls++, ['mcp']) } });
    const tools = [{ name: 'a' }, { name: 'b' }];
    counted.filterListResult('tools/list', { tools }, bob);
    counted.filterListResult('tools/list', { tools }, bob);
    assert.equal(calls, 4, 'the function decides each item of each list');
    // A custom verifier's caller, whose `extra` is not frozen: nothing says two requests are the same caller.
    const extra = { sub: 'x', claims: { sub: 'x', groups: [] as string[] }, tokenType: 'jwt' as const };
    const unverified: AuthInfo = { token: 't', clientId: 'c', scopes: ['mcp'], extra };
    const tools2 = [{ name: 'pub_a' }, { name: 'secret' }];
    assert.deepEqual(names(policy.filterListResult('tools/list', { tools: tools2 }, unverified)), ['pub_a']);
    extra.claims = { sub: 'x', groups: ['staff'] };
    assert.deepEqual(names(policy.filterListResult('tools/list', { tools: tools2 }, unverified)), ['pub_a', 'secret'], 'its claims read afresh');
  });
});
