import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { AuthInfo } from '../../../src/core/kernel/auth-info.js';
import { compilePolicy } from '../../../src/core/policy/compile-policy.js';
import { compileCondition, type CompiledCondition } from '../../../src/core/policy/policy-condition.js';
import { compilePolicySet } from '../../../src/core/policy/policy-set.js';

/** A caller as the verifier makes one: frozen claims, kept for every request of the token. */
function caller(groups: string[], frozen = true): AuthInfo {
  const extra = { sub: 'u', claims: { sub: 'u', groups }, tokenType: 'jwt' as const };
  return { token: 't', clientId: 'c', scopes: Object.freeze(['mcp']) as string[], extra: frozen ? Object.freeze(extra) : extra };
}

/** Counts the runs of the compiled condition of `source` (compiled conditions are shared by source). */
function counted(source: string): { runs: () => number } {
  const condition = compileCondition(source) as CompiledCondition & { evaluate: CompiledCondition['evaluate'] };
  const original = condition.evaluate.bind(condition);
  let runs = 0;
  condition.evaluate = (auth, request) => {
    runs++;
    return original(auth, request);
  };
  return { runs: () => runs };
}

const names = ['read_a', 'write_b', 'read_c', 'delete_d'];
const list = { tools: names.map((name) => ({ name })) };
const listed = (policy: ReturnType<typeof compilePolicy>, auth: AuthInfo): string[] => (policy.filterListResult('tools/list', list, auth).tools as { name: string }[]).map((t) => t.name);

test('a condition reading only the name runs once per caller and item, not once per list', () => {
  const source = "mcp.name.startsWith('read_') || 'writers' in claims.groups";
  const runs = counted(source);
  const policy = compilePolicy({ tools: { '*': { when: source } } });
  const reader = caller(['staff']);
  assert.deepEqual(listed(policy, reader), ['read_a', 'read_c']);
  assert.equal(runs.runs(), 4);
  assert.deepEqual(listed(policy, reader), ['read_a', 'read_c']);
  assert.equal(runs.runs(), 4, 'the second list runs no condition');
  // Another caller (another verified token) has outcomes of their own.
  assert.deepEqual(listed(policy, caller(['writers'])), names);
  assert.equal(runs.runs(), 8);
  // A call always runs its condition: names a caller sends are never remembered.
  assert.equal(policy.authorize({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'write_b' } }, reader).allowed, false);
  assert.equal(runs.runs(), 9);
});

test('a caller whose claims are not frozen is decided afresh on every list', () => {
  const source = "mcp.name.endsWith('_a') && 'staff' in claims.groups";
  const runs = counted(source);
  const policy = compilePolicy({ tools: { '*': { when: source } } });
  const auth = caller(['staff'], false);
  assert.deepEqual(listed(policy, auth), ['read_a']);
  assert.deepEqual(listed(policy, auth), ['read_a']);
  assert.equal(runs.runs(), 8);
});

test('the same caller and item name on two servers are two outcomes, each remembered (the condition reads server)', () => {
  const source = "server == 'alpha' && mcp.name != 'read_c'";
  const runs = counted(source);
  const policy = compilePolicySet({
    servers: [
      { name: 'alpha', policy: { tools: { '*': { when: source } } } },
      { name: 'beta', policy: { tools: { '*': { when: source } } } },
    ],
  });
  const auth = caller([]);
  const items = (server: string): string[] => names.map((name) => `${server}__${name}`);
  const filtered = (server: string): string[] =>
    (policy.filterListResult('tools/list', { tools: items(server).map((name) => ({ name })) }, auth).tools as { name: string }[]).map((t) => t.name);
  assert.deepEqual(filtered('alpha'), ['alpha__read_a', 'alpha__write_b', 'alpha__delete_d']);
  assert.deepEqual(filtered('beta'), []);
  const first = runs.runs();
  assert.deepEqual(filtered('alpha'), ['alpha__read_a', 'alpha__write_b', 'alpha__delete_d']);
  assert.deepEqual(filtered('beta'), []);
  assert.equal(runs.runs(), first);
});
