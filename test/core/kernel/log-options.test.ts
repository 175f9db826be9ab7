import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { writeWarningToStderr } from '../../../src/core/kernel/log-line.js';
import { warningSink, type GuardLogger } from '../../../src/core/kernel/log-options.js';

describe('warningSink', () => {
  test("the logger's warn, else stderr; nothing below level warn", () => {
    const lines: string[] = [];
    const logger: GuardLogger = { info: () => assert.fail('a warning is no info line'), warn: (line) => lines.push(line) };
    warningSink({ logger, logLevel: 'warn' })('a');
    warningSink({ logger })('b');
    warningSink({ logger, logLevel: 'off' })('c');
    assert.deepEqual(lines, ['a', 'b']);
    assert.equal(warningSink({}), writeWarningToStderr);
    assert.equal(warningSink(undefined), writeWarningToStderr);
    assert.equal(warningSink({ logger: {} as GuardLogger }), writeWarningToStderr, 'a logger without warn, not checked yet, counts as none');
    assert.notEqual(warningSink({ logLevel: 'off' }), writeWarningToStderr);
  });
});
