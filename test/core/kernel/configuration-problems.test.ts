// Every bad setting at once: the collector keeps going past a ConfigurationError, and one error names them all.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { collectConfigurationProblems, ConfigurationProblems } from '../../../src/core/kernel/configuration-problems.js';
import { ConfigurationError } from '../../../src/core/kernel/errors.js';
import { parseIntegerSetting } from '../../../src/core/kernel/settings.js';

describe('ConfigurationError', () => {
  it('about one setting: "setting: detail", and that one problem', () => {
    const error = new ConfigurationError('PORT', 'must be a whole number from 0 to 65535 (got "x")');
    assert.equal(error.message, 'PORT: must be a whole number from 0 to 65535 (got "x")');
    assert.deepEqual(error.problems, [{ setting: 'PORT', detail: 'must be a whole number from 0 to 65535 (got "x")' }]);
  });

  it('of several problems: a count, then one line each (line breaks inside a detail flattened); setting is the first', () => {
    const error = ConfigurationError.of([
      { setting: 'PORT', detail: 'must be a whole number' },
      { setting: 'MCP_AUTH_ISSUER', detail: 'is required:\n  set it' },
    ]);
    assert.ok(error instanceof ConfigurationError);
    assert.equal(error.setting, 'PORT');
    assert.equal(error.message, '2 settings need fixing:\n  PORT: must be a whole number\n  MCP_AUTH_ISSUER: is required: set it');
    assert.deepEqual(error.problems.map((p) => p.setting), ['PORT', 'MCP_AUTH_ISSUER']);
    assert.ok(Object.isFrozen(error.problems));
  });

  it('of one problem is that problem\'s plain error; of none is a bug', () => {
    const error = ConfigurationError.of([{ setting: 'HOST', detail: 'is wrong' }]);
    assert.equal(error.message, 'HOST: is wrong');
    assert.throws(() => ConfigurationError.of([]), RangeError);
  });
});

describe('ConfigurationProblems', () => {
  it('check returns the value, or records the problem and returns undefined; throwIfAny names every one', () => {
    const problems = new ConfigurationProblems();
    assert.equal(problems.check(() => parseIntegerSetting('8080', 'PORT', 0, 65_535)), 8080);
    assert.equal(problems.check(() => parseIntegerSetting('lots', 'MCP_AUTH_MAX_SESSIONS', 1, 10)), undefined);
    assert.equal(problems.check(() => parseIntegerSetting('-1', 'MCP_AUTH_CLOCK_TOLERANCE', 0, 300)), undefined);
    assert.equal(problems.count, 2);
    assert.throws(
      () => problems.throwIfAny(),
      (error: unknown) => {
        assert.ok(error instanceof ConfigurationError);
        assert.deepEqual(error.problems.map((p) => p.setting), ['MCP_AUTH_MAX_SESSIONS', 'MCP_AUTH_CLOCK_TOLERANCE']);
        assert.match(error.message, /^2 settings need fixing:\n {2}MCP_AUTH_MAX_SESSIONS: must be a whole number from 1 to 10 \(got "lots"\)\n {2}MCP_AUTH_CLOCK_TOLERANCE: /);
        return true;
      },
    );
  });

  it('nothing recorded: throwIfAny does nothing', () => {
    const problems = new ConfigurationProblems();
    problems.throwIfAny();
    assert.equal(problems.count, 0);
  });

  it('an error that lists several is taken apart; a second problem with the same setting is dropped', () => {
    const problems = new ConfigurationProblems();
    problems.check(() => {
      throw ConfigurationError.of([
        { setting: 'A', detail: 'first' },
        { setting: 'B', detail: 'second' },
      ]);
    });
    problems.add('A', 'a consequence of the first');
    assert.throws(() => problems.throwIfAny(), { message: '2 settings need fixing:\n  A: first\n  B: second' });
  });

  it('other errors are bugs, not settings: they propagate', () => {
    const problems = new ConfigurationProblems();
    assert.throws(() => problems.check(() => JSON.parse('{')), SyntaxError);
    assert.equal(problems.count, 0);
  });
});

describe('collectConfigurationProblems', () => {
  it('returns the loader\'s value when nothing is wrong', () => {
    assert.deepEqual(
      collectConfigurationProblems((problems) => ({ port: problems.check(() => parseIntegerSetting('1', 'PORT', 0, 9)) })),
      { port: 1 },
    );
  });

  it('lists what was recorded and what the loader threw itself, in that order', () => {
    assert.throws(
      () =>
        collectConfigurationProblems((problems) => {
          problems.add('A', 'is bad');
          throw new ConfigurationError('B', 'is bad too');
        }),
      (error: unknown) => error instanceof ConfigurationError && error.problems.map((p) => p.setting).join() === 'A,B',
    );
  });
});
