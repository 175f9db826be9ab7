import assert from 'node:assert/strict';
import { test } from 'node:test';
import { editedRules, MAX_EDITED_RULES } from '../../../src/gateway/policy/edited-rules.js';

test('a changed condition or scope list is named though every rule count stays the same', () => {
  const before = { requiredScopes: ['mcp'], tools: { whoami: { scopes: ['mcp'], when: "claims.department == 'ops'" }, add: ['notes:write'] } };
  const after = { requiredScopes: ['mcp'], tools: { whoami: { scopes: ['mcp'], when: "claims.department == 'dev'" }, add: ['notes:admin'] } };
  assert.deepEqual(editedRules(before, after), ['tools.whoami', 'tools.add']);
});

test('added and removed rules, top-level scopes and sections, and nothing for an identical policy', () => {
  assert.deepEqual(editedRules({ tools: { a: [] }, prompts: { p: ['x'] } }, { requiredScopes: ['mcp'], tools: { b: [] }, resources: { 'r://{id}': ['x'] } }), [
    'requiredScopes',
    'tools.a',
    'tools.b',
    'prompts.p',
    'resources.r://{id}',
  ]);
  const policy = { methods: { 'tools/call': ['mcp'] }, tools: { a: { scopes: ['x'], when: 'claims.admin' } } };
  assert.deepEqual(editedRules(policy, structuredClone(policy)), []);
});

test('at most the bound, whatever the size of the policy', () => {
  const many = Object.fromEntries(Array.from({ length: 500 }, (_, i) => [`t${i}`, ['x']]));
  assert.equal(editedRules({}, { tools: many }).length, MAX_EDITED_RULES);
});
