import assert from 'node:assert/strict';
import { test } from 'node:test';
import { compileScopeHierarchy } from '../../../src/core/policy/scope-hierarchy.js';

test('a scope implies the scopes below it, transitively', () => {
  const expand = compileScopeHierarchy({ 'notes:admin': ['notes:write'], 'notes:write': ['notes:read'] });
  assert.deepEqual([...expand(['notes:admin'])].sort(), ['notes:admin', 'notes:read', 'notes:write']);
  assert.deepEqual([...expand(['notes:read'])], ['notes:read']);
});

test('a cycle in the hierarchy makes its scopes equivalent and terminates', () => {
  const expand = compileScopeHierarchy({ a: ['b'], b: ['c'], c: ['a'] });
  assert.deepEqual([...expand(['b'])].sort(), ['a', 'b', 'c']);
});

test('without a hierarchy the effective scopes are the granted ones', () => {
  assert.deepEqual([...compileScopeHierarchy()(['x', 'y'])], ['x', 'y']);
});

test('a "__proto__" key parsed from JSON is an ordinary scope', () => {
  const expand = compileScopeHierarchy(JSON.parse('{"__proto__": ["notes:read"]}'));
  assert.deepEqual([...expand(['__proto__'])].sort(), ['__proto__', 'notes:read']);
  assert.deepEqual([...expand(['toString'])], ['toString']);
});
