// No test depends on a fixed port being free. A program a test starts falls back to its default port (the
// gateway's PORT 8080, the notes example's 3000) when the test names none, and that port may be taken where the
// tests run. So every child process of the tests starts through test/helpers/child-process.ts, which always gives
// it PORT, a free port probed as it starts; this test keeps any other file from reaching node:child_process.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { once } from 'node:events';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';
import { execFileSync, spawnSync, withFreePort } from '../helpers/child-process.js';

const TEST = join(dirname(fileURLToPath(import.meta.url)), '..');
const HELPER = join(TEST, 'helpers', 'child-process.ts');
/**
 * Files that name node:child_process for a program that itself starts one, never for a child of the test: such a
 * grandchild is the test's business only through its parent, which the helper started.
 */
const GRANDCHILD_SCRIPTS = new Set([join(TEST, 'gateway', 'cli', 'parent-process-watch.test.ts')]);
/** The suite's runner (`npm test`): it starts the type check and the test runner, before any test runs. */
const SUITE_RUNNER = join(TEST, 'run.ts');

/** Every script below `dir`: what the tests run, and the programs they start. */
function scripts(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return scripts(path);
    return /\.(ts|mts|cts|js|mjs|cjs)$/.test(entry.name) ? [path] : [];
  });
}

test('only test/helpers/child-process.ts imports node:child_process: every child a test starts gets a free PORT', () => {
  const offenders = scripts(TEST)
    .filter((file) => file !== HELPER && file !== SUITE_RUNNER && !GRANDCHILD_SCRIPTS.has(file))
    .filter((file) => /["'`](node:)?child_process["'`]/.test(readFileSync(file, 'utf8')))
    .map((file) => relative(TEST, file));
  assert.deepEqual(offenders, [], 'start child processes with spawn, spawnSync, execFile or execFileSync from test/helpers/child-process.ts, not node:child_process');
});

/** The PORT a child was given, as it saw it. */
function portOfChild(env?: NodeJS.ProcessEnv): string {
  return execFileSync(process.execPath, ['-e', 'process.stdout.write(process.env.PORT ?? "")'], { encoding: 'utf8', ...(env ? { env } : {}) });
}

test('a child given no PORT gets a free one, a new one each time; a PORT the test names is kept', async () => {
  const first = portOfChild({ PATH: process.env.PATH ?? '' });
  const second = portOfChild();
  assert.match(first, /^[1-9]\d*$/);
  assert.notEqual(first, second);
  // Free: it can be bound at once.
  const server = createServer().listen(Number(first), '127.0.0.1');
  await once(server, 'listening');
  server.close();
  assert.equal(portOfChild({ PATH: process.env.PATH ?? '', PORT: '0' }), '0');
  const sync = spawnSync(process.execPath, ['-e', 'process.stdout.write(process.env.PORT)'], { encoding: 'utf8' });
  assert.match(sync.stdout, /^[1-9]\d*$/);
  // A PORT inherited from the shell the tests run in is no choice of the test's: it is replaced.
  const shells = process.env.PORT;
  process.env.PORT = '8080';
  try {
    assert.notEqual(withFreePort({ ...process.env }).PORT, '8080');
    assert.notEqual(withFreePort(undefined).PORT, '8080');
  } finally {
    if (shells === undefined) delete process.env.PORT;
    else process.env.PORT = shells;
  }
});
