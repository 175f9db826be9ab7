import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { AuthInfo } from '../../../src/core/kernel/auth-info.js';
import { PolicyEvaluator } from '../../../src/core/policy/evaluate-policy.js';
import { readPolicy } from '../../../src/core/policy/read-policy.js';
import type { JsonRpcMessage } from '../../../src/core/wire/jsonrpc.js';

const auth: AuthInfo = { token: 't', clientId: 'client', scopes: ['a'], extra: { sub: 'alice', claims: {}, tokenType: 'jwt' } };
const call: JsonRpcMessage = { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'x' } };

test('decideRule: a static rule demands its scopes, a function rule what it returns (copied), a failing one is undecided and reported', () => {
  const returned = ['b'];
  const reported: string[] = [];
  const rules = readPolicy({ tools: { static: ['s'], fn: () => returned, bad: () => 'nope' as never } }, 'policy', undefined);
  const evaluator = new PolicyEvaluator(rules, (_error, path) => reported.push(path));
  assert.deepEqual(evaluator.decideRule(rules.tools.lookup('static')!, auth, call), ['s']);
  const out = evaluator.decideRule(rules.tools.lookup('fn')!, auth, call);
  assert.deepEqual(out, ['b']);
  assert.notEqual(out, returned);
  assert.equal(typeof evaluator.decideRule(rules.tools.lookup('bad')!, auth, call), 'symbol');
  assert.deepEqual(reported, ['policy.tools.bad']);
});

test('decideRule: a function rule given a synthetic request builds it only when called', () => {
  let seen: JsonRpcMessage | undefined;
  const rules = readPolicy({ prompts: { p: (_auth, message) => ((seen = message), []) } }, 'policy', undefined);
  const evaluator = new PolicyEvaluator(rules, undefined);
  const synthetic: JsonRpcMessage = { jsonrpc: '2.0', id: 0, method: 'prompts/get', params: { name: 'p' } };
  assert.deepEqual(evaluator.decideRule(rules.prompts.lookup('p')!, auth, () => synthetic), []);
  assert.equal(seen, synthetic);
});
