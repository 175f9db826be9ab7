import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { ConfigurationError } from '../../../src/core/kernel/errors.js';
import { checkProgram, splitCommandLine } from '../../../src/gateway/config/command-line.js';

const S = 'MCP_AUTH_UPSTREAM_COMMAND';
const split = (text: string): string[] => splitCommandLine(text, S);
const refused = (text: string, pattern: RegExp): void => {
  assert.throws(() => split(text), (e: unknown) => e instanceof ConfigurationError && e.setting === S && pattern.test(e.message), text);
};

describe('splitCommandLine', () => {
  it('splits on blanks and keeps quoted words whole, as a POSIX shell would', () => {
    assert.deepEqual(split('python3 server.py'), ['python3', 'server.py']);
    assert.deepEqual(split('  node\t"my server.mjs"\n --greeting  \'hello, world\'  '), ['node', 'my server.mjs', '--greeting', 'hello, world']);
    assert.deepEqual(split(`--name="a b"c 'x'"y"z`), ['--name=a bc', 'xyz']);
    assert.deepEqual(split(`prog '' ""`), ['prog', '', '']);
  });

  it('backslashes escape outside quotes, and only " \\ $ ` inside double quotes; nothing is special in single quotes', () => {
    assert.deepEqual(split('prog a\\ b \\"q\\" \\$HOME'), ['prog', 'a b', '"q"', '$HOME']);
    assert.deepEqual(split('prog "a\\"b" "c\\\\d" "e\\nf" "\\$x"'), ['prog', 'a"b', 'c\\d', 'e\\nf', '$x']);
    assert.deepEqual(split(`prog 'a\\b "c" $d | e'`), ['prog', 'a\\b "c" $d | e']);
  });

  it('runs no shell: unquoted operators and variables are refused, quoted ones are literal', () => {
    refused('python3 server.py > log.txt', /unquoted ">".*no shell runs the command/);
    refused('a | b', /unquoted "\|"/);
    refused('a; rm -rf x', /unquoted ";"/);
    refused('a && b', /unquoted "&"/);
    refused('echo $SECRET', /unquoted "\$"/);
    refused('echo `id`', /unquoted "`"/);
    refused('a (b)', /unquoted "\("/);
    assert.deepEqual(split(`grep '$x|y' ">"`), ['grep', '$x|y', '>']);
  });

  it('refuses what it cannot split', () => {
    refused('', /is empty/);
    refused('   ', /is empty/);
    refused("'' arg", /is empty/);
    refused("prog 'open", /unterminated single quote/);
    refused('prog "open', /unterminated double quote/);
    refused('prog \\', /backslash that escapes nothing/);
  });
});

describe('checkProgram', () => {
  it('finds a bare name on the PATH given, and a path relative to the working directory', () => {
    const dir = mkdtempSync(join(tmpdir(), 'check-program-'));
    try {
      const script = join(dir, 'server.sh');
      writeFileSync(script, '#!/bin/sh\n');
      chmodSync(script, 0o755);
      writeFileSync(join(dir, 'data.txt'), '');
      checkProgram('server.sh', S, { cwd: '/', path: `/nonexistent:${dir}` });
      checkProgram('./server.sh', S, { cwd: dir, path: '' });
      checkProgram(script, S, { cwd: '/', path: '' });
      assert.throws(() => checkProgram('server.sh', S, { cwd: dir, path: '/nonexistent' }), /not on the PATH/);
      assert.throws(() => checkProgram('./data.txt', S, { cwd: dir, path: '' }), /not an executable file/);
      assert.throws(() => checkProgram('./missing', S, { cwd: dir, path: '' }), /not an executable file/);
      assert.throws(() => checkProgram(dir, S, { cwd: '/', path: '' }), /not an executable file/, 'a directory is not a program');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
