// `npm test`: the type check and the whole suite, side by side (the type check uses one core while most test files
// wait on sockets and child processes). The unit layer, the in-process layer and the program layer run in a few
// processes each (their shards), every other file in a process of its own (test/suite-files.ts says which and why),
// two at a time: the machines have two cores, and three at a time made the shards and the slowest files overrun
// their time limits on a busy machine. test/run-in-order.ts starts them in the order given here (`node --test` would
// sort them by path): the shards first, then test/suite-files.ts's slowest, so that the run does not end on a long
// one alone. Exits non-zero when either fails.
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { inProcessShardEntries, processPerFileTests, programShardEntries, slowestFirst, TEST_DIR, testProcessFlags, unitShardEntries } from './suite-files.js';

const require = createRequire(import.meta.url);

/** Runs a command with the terminal's output; resolves to its exit code. */
function run(command: string, args: string[]): Promise<number> {
  return new Promise((resolve) => {
    const child = spawn(command, args, { stdio: 'inherit' });
    child.on('error', () => resolve(1));
    child.on('exit', (code, signal) => resolve(code ?? (signal ? 1 : 0)));
  });
}

const typecheck = run(process.execPath, [require.resolve('typescript/bin/tsc'), '-p', 'tsconfig.json', '--noEmit']);
const tests = run(process.execPath, [
  ...testProcessFlags(), join(TEST_DIR, 'run-in-order.ts'),
  ...unitShardEntries(), ...inProcessShardEntries(), ...programShardEntries(), ...slowestFirst(processPerFileTests()),
]);
const [typecheckCode, testCode] = await Promise.all([typecheck, tests]);
if (typecheckCode !== 0) console.error('npm test: the type check failed (npm run typecheck shows it alone)');
process.exitCode = typecheckCode !== 0 ? typecheckCode : testCode;
