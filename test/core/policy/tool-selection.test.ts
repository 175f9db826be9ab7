import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConfigurationError } from '../../../src/core/kernel/errors.js';
import { compileToolSelection, unmatchedToolPatterns, type ToolSelectionDefinition } from '../../../src/core/policy/tool-selection.js';

const PATH = 'servers.py.tools';

function selected(definition: ToolSelectionDefinition | undefined, names: readonly string[]): string[] {
  const select = compileToolSelection(definition, PATH);
  return names.filter((name) => select(name));
}

function refusal(definition: unknown): ConfigurationError {
  try {
    compileToolSelection(definition as ToolSelectionDefinition, PATH);
  } catch (error) {
    assert.ok(error instanceof ConfigurationError, String(error));
    return error;
  }
  assert.fail('the selection was accepted');
}

const NAMES = ['notes_add', 'notes_delete', 'notes_delete_all', 'search', 'run.py', 'a+b', 'x*y', ''];

test('no selection, or an empty one, selects every tool', () => {
  assert.deepEqual(selected(undefined, NAMES), NAMES);
  assert.deepEqual(selected({}, NAMES), NAMES);
  assert.deepEqual(selected({ exclude: [] }, NAMES), NAMES);
});

test('include keeps only matching names; exclude then removes names', () => {
  assert.deepEqual(selected({ include: ['notes_*'] }, NAMES), ['notes_add', 'notes_delete', 'notes_delete_all']);
  assert.deepEqual(selected({ include: ['notes_*'], exclude: ['notes_delete*'] }, NAMES), ['notes_add']);
  assert.deepEqual(selected({ exclude: ['notes_*', 'search'] }, NAMES), ['run.py', 'a+b', 'x*y', '']);
  assert.deepEqual(selected({ include: ['search', 'run.py'] }, NAMES), ['search', 'run.py']);
  assert.deepEqual(selected({ include: [] }, NAMES), [], 'an empty include selects no tool');
});

test('* matches any run of characters, none included; every other character is literal', () => {
  assert.deepEqual(selected({ include: ['*'] }, NAMES), NAMES);
  assert.deepEqual(selected({ include: ['notes*add'] }, ['notes_add', 'notesadd', 'notes_add_x']), ['notes_add', 'notesadd']);
  assert.deepEqual(selected({ include: ['run.py'] }, ['run.py', 'runxpy']), ['run.py']);
  assert.deepEqual(selected({ include: ['a+b'] }, ['a+b', 'aab', 'ab']), ['a+b']);
  assert.deepEqual(selected({ include: ['(x|y)?[z]^$\\'] }, ['(x|y)?[z]^$\\', 'x', 'z']), ['(x|y)?[z]^$\\']);
  assert.deepEqual(selected({ include: ['*_add'] }, ['notes_add', 'notes_add\nx', 'x\nnotes_add']), ['notes_add', 'x\nnotes_add']);
  assert.deepEqual(selected({ include: ['a*'] }, ['a\nb']), ['a\nb'], '* spans line breaks too');
});

test('bad definitions fail naming the exact path', () => {
  assert.equal(refusal(['a']).setting, PATH);
  assert.equal(refusal(null).setting, PATH);
  assert.equal(refusal('notes_*').setting, PATH);
  const unknown = refusal({ include: ['a'], exlude: ['b'] });
  assert.equal(unknown.setting, PATH);
  assert.match(unknown.message, /unknown key "exlude"; expected only include, exclude/);
  assert.equal(refusal({ include: 'notes_*' }).setting, `${PATH}.include`);
  assert.equal(refusal({ exclude: { a: 1 } }).setting, `${PATH}.exclude`);
  const empty = refusal({ include: ['a', 'b', ''] });
  assert.equal(empty.setting, `${PATH}.include[2]`);
  assert.match(empty.message, /^servers\.py\.tools\.include\[2\]: expected a non-empty tool name pattern/);
  assert.equal(refusal({ exclude: ['a', 7] }).setting, `${PATH}.exclude[1]`);
  assert.equal(refusal({ include: [null] }).setting, `${PATH}.include[0]`);
});

test('patterns matching no tool are found, with the closest listed name when one is close', () => {
  assert.deepEqual(unmatchedToolPatterns({ include: ['get-*', 'nothing*'], exclude: ['get_env', 'echo'] }, ['get-env', 'echo'], 'servers.x.tools'), [
    { path: 'servers.x.tools.include[1]', pattern: 'nothing*' },
    { path: 'servers.x.tools.exclude[0]', pattern: 'get_env', closest: 'get-env' },
  ]);
  assert.deepEqual(unmatchedToolPatterns(undefined, ['a'], 'p'), []);
});
