import assert from 'node:assert/strict';
import { test } from 'node:test';
import { EXPOSED_NAME_SEPARATOR, exposedNameSplit, exposeName, splitExposedName } from '../../../src/core/mcp/exposed-names.js';

test('a tool or prompt is exposed as <server>__<name>', () => {
  assert.equal(EXPOSED_NAME_SEPARATOR, '__');
  assert.equal(exposeName('notes', 'add'), 'notes__add');
  assert.deepEqual(splitExposedName('notes__add'), { server: 'notes', name: 'add' });
});

test('names are split at the first __, so a local name may hold __ and reads back whole', () => {
  assert.equal(exposeName('x', 'a__b'), 'x__a__b');
  assert.deepEqual(splitExposedName('x__a__b'), { server: 'x', name: 'a__b' });
  assert.deepEqual(splitExposedName('py____'), { server: 'py', name: '__' });
  assert.deepEqual(splitExposedName('py___a'), { server: 'py', name: '_a' });
  for (const [server, name] of [['notes', 'add'], ['py-tools', 'run__fast'], ['a_b', '_x'], ['s', '*']] as const) {
    assert.deepEqual(splitExposedName(exposeName(server, name)), { server, name });
  }
});

test('a name without a separator, or with an empty side, is no exposed name', () => {
  for (const name of ['add', '', '_', '__', '__add', 'notes__', 'notes_add']) {
    assert.equal(splitExposedName(name), undefined, name);
    assert.equal(exposedNameSplit(name), -1, name);
  }
  assert.equal(exposedNameSplit('notes__add'), 5);
});
