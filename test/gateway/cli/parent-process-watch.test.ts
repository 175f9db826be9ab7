// The gateway command's watch of its parent, with real processes: a parent that exits leaves its child adopted by
// another process, and the watch notices; a parent that stays does not set it off.
import assert from 'node:assert/strict';
import { spawn } from '../../helpers/child-process.js';
import { once } from 'node:events';
import { resolve } from 'node:path';
import { describe, test } from 'node:test';
import { startedByPackageManager } from '../../../src/gateway/cli/parent-process-watch.js';
import { REPOSITORY_ROOT } from '../../helpers/run-cli.js';

const WATCH = resolve(REPOSITORY_ROOT, 'src/gateway/cli/parent-process-watch.ts');

/**
 * A child that watches its parent (checks every 50 ms) and prints `gone <old parent>` when it is adopted, then
 * exits; it prints `still <parent>` and exits after `lifetimeMs` otherwise.
 */
const WATCHER = `
const { watchParentProcess } = await import(${JSON.stringify(WATCH)});
const parent = process.ppid;
const watch = watchParentProcess((was) => { console.log('gone', was, process.ppid); process.exit(0); }, undefined, 50);
console.log('watching', parent);
process.stderr.write('ready\\n');
setTimeout(() => { watch.stop(); console.log('still', process.ppid); }, Number(process.argv[1]));
`;

/** The lines a process printed until it exited, with a bound on the time. */
async function linesUntilExit(child: ReturnType<typeof spawn>, ms: number): Promise<string[]> {
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const timer = setTimeout(() => child.kill('SIGKILL'), ms);
  await once(child, 'close');
  clearTimeout(timer);
  return output.trim().split('\n');
}

describe('the parent process watch', () => {
  test('a parent that exits: the watch reports it once, with the pid of the parent that was', { skip: process.platform === 'win32' ? 'POSIX process adoption' : false }, async () => {
    // The parent starts the watcher (whose stdout is the test's pipe) and exits once it watches (says so on stderr).
    const parentScript = `
const { spawn } = require('node:child_process');
const watcher = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', ${JSON.stringify(WATCHER)}, '10000'], { stdio: ['ignore', 'inherit', 'pipe'] });
watcher.stderr.once('data', () => process.exit(0));
`;
    const parent = spawn(process.execPath, ['-e', parentScript], { cwd: REPOSITORY_ROOT, stdio: ['ignore', 'pipe', 'inherit'] });
    const lines = await linesUntilExit(parent, 20_000);
    assert.deepEqual(lines[0]?.split(' ').slice(0, 2), ['watching', String(parent.pid)], lines.join('\n'));
    const gone = lines.find((line) => line.startsWith('gone'))?.split(' ');
    assert.ok(gone, `the watch reported the parent's exit:\n${lines.join('\n')}`);
    assert.equal(gone[1], String(parent.pid), 'with the pid of the parent that was');
    assert.notEqual(gone[2], String(parent.pid), 'the process has another parent now');
    assert.equal(lines.filter((line) => line.startsWith('gone')).length, 1);
  });

  test('a parent that stays: the watch says nothing', async () => {
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', WATCHER, '600'], { cwd: REPOSITORY_ROOT, stdio: ['ignore', 'pipe', 'ignore'] });
    const lines = await linesUntilExit(child, 20_000);
    assert.deepEqual(lines, [`watching ${process.pid}`, `still ${process.pid}`]);
  });

  test('only a process a package manager started is watched: npm sets npm_lifecycle_event for npx, npm exec and npm run', () => {
    assert.equal(startedByPackageManager({ npm_lifecycle_event: 'npx' }), true);
    assert.equal(startedByPackageManager({ npm_lifecycle_event: 'start' }), true);
    assert.equal(startedByPackageManager({}), false);
    assert.equal(startedByPackageManager({ npm_lifecycle_event: '' }), false);
  });
});
