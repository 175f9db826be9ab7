// An upstream's insufficient_scope challenge, read for a step-up: the scope it names, and nothing from other challenges.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { insufficientScopeChallenge } from '../../../src/gateway/upstream-auth/bearer-challenge.js';

test('reads the insufficient_scope challenge and its scope, quoted or not', () => {
  assert.deepEqual(insufficientScopeChallenge('Bearer error="insufficient_scope", scope="notes:read notes:write"'), { scope: 'notes:read notes:write' });
  assert.deepEqual(insufficientScopeChallenge('Bearer realm="x", scope=notes:write, error=insufficient_scope'), { scope: 'notes:write' });
  assert.deepEqual(insufficientScopeChallenge(['Bearer error="insufficient_scope"']), { scope: undefined });
  assert.deepEqual(insufficientScopeChallenge('DPoP error="insufficient_scope", scope="a"'), { scope: 'a' });
});

test('anything else is no step-up', () => {
  assert.equal(insufficientScopeChallenge(undefined), undefined);
  assert.equal(insufficientScopeChallenge('Bearer error="invalid_token"'), undefined);
  assert.equal(insufficientScopeChallenge('Basic realm="x", error="insufficient_scope"'), undefined);
  assert.equal(insufficientScopeChallenge(`Bearer error="insufficient_scope", scope="${'a'.repeat(5_000)}"`), undefined);
});
