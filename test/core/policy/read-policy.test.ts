import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConfigurationError } from '../../../src/core/kernel/errors.js';
import { readPolicy } from '../../../src/core/policy/read-policy.js';

test('readPolicy: the compiled form holds every part, scopes frozen, offline_access never supported', () => {
  const definition = { requiredScopes: ['mcp', 'mcp'], methods: { 'tools/call': ['t', 'offline_access'] }, tools: { '*': ['r'] } };
  const rules = readPolicy(definition, 'policy', undefined);
  assert.equal(rules.definition, definition);
  assert.deepEqual(rules.base, ['mcp']);
  assert.ok(Object.isFrozen(rules.base));
  assert.deepEqual(rules.scopesSupported, ['mcp', 't', 'r']);
  assert.deepEqual(rules.tools.lookup('anything')?.scopes, ['r']);
  assert.equal(rules.prompts.lookup('p'), undefined);
});

test('readPolicy: one error names the first problem of every part, with the source appended', () => {
  assert.throws(
    () => readPolicy({ requiredScopes: 'mcp', tools: { a: 3 }, extra: 1 } as never, 'MCP_AUTH_POLICY', 'policy file p.json'),
    (error: unknown) => {
      assert.ok(error instanceof ConfigurationError);
      const { problems } = error as ConfigurationError;
      assert.equal(problems.length, 3);
      assert.ok(problems.every((p) => p.detail.endsWith('(in policy file p.json)')));
      assert.deepEqual(problems.map((p) => p.setting).sort(), ['MCP_AUTH_POLICY', 'MCP_AUTH_POLICY.requiredScopes', 'MCP_AUTH_POLICY.tools.a']);
      return true;
    },
  );
});
