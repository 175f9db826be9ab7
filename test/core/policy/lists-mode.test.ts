import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConfigurationError } from '../../../src/core/kernel/errors.js';
import { LISTS_MODES, resolveListsMode } from '../../../src/core/policy/lists-mode.js';

test('lists is filtered when unset, and takes filtered or all', () => {
  assert.equal(resolveListsMode(undefined, 'options.lists'), 'filtered');
  assert.equal(resolveListsMode('filtered', 'options.lists'), 'filtered');
  assert.equal(resolveListsMode('all', 'options.lists'), 'all');
  assert.deepEqual(LISTS_MODES, ['filtered', 'all']);
});

test('any other value is a configuration error naming the setting, the values and what they do', () => {
  for (const bad of ['All', 'everything', '', 1, true, null]) {
    assert.throws(
      () => resolveListsMode(bad, 'MCP_AUTH_LISTS'),
      (error: unknown) =>
        error instanceof ConfigurationError &&
        error.setting === 'MCP_AUTH_LISTS' &&
        error.message.includes('must be one of filtered, all') &&
        error.message.includes('enforces on call'),
      String(bad),
    );
  }
});
