// `npm test` runs every test file exactly once: each is in one group of test/suite-files.ts, each shard's files are
// its layer split without loss or overlap, and what touches something process-wide never shares a process.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { test } from 'node:test';
import {
  inProcessLayerFiles,
  inProcessShardEntries,
  processPerFileTests,
  programLayerFiles,
  programShardEntries,
  shardFiles,
  slowestFirst,
  TEST_DIR,
  unitLayerFiles,
  unitShardEntries,
} from '../suite-files.js';

/** Every *.test.ts under the test folder, found here independently of test/suite-files.ts. */
function everyTestFile(dir = TEST_DIR): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return everyTestFile(path);
    return entry.name.endsWith('.test.ts') ? [path] : [];
  });
}

/** How many times each name occurs in `lists` together, for the names that occur other than once in `all`. */
function notExactlyOnce(all: readonly string[], lists: readonly (readonly string[])[]): string[] {
  const counts = new Map(all.map((file) => [file, 0]));
  for (const file of lists.flat()) counts.set(file, (counts.get(file) ?? 0) + 1);
  return [...counts].filter(([, count]) => count !== 1).map(([file, count]) => `${relative(TEST_DIR, file)} ×${count}`);
}

test('every test file is in exactly one group: the unit layer, the in-process layer, the program layer or a process of its own', () => {
  const all = everyTestFile();
  assert.ok(all.length > 100, 'the test files are found');
  assert.deepEqual(notExactlyOnce(all, [unitLayerFiles(), inProcessLayerFiles(), programLayerFiles(), processPerFileTests()]), []);
});

test("each layer's shards hold its files exactly once between them, and each shard some", () => {
  for (const [layer, entries] of [
    [unitLayerFiles(), unitShardEntries()],
    [inProcessLayerFiles(), inProcessShardEntries()],
    [programLayerFiles(), programShardEntries()],
  ] as const) {
    assert.ok(entries.length >= 2, 'a layer has shards');
    const shards = entries.map((entry) => shardFiles(entry));
    assert.deepEqual(notExactlyOnce(layer, shards), []);
    for (const [i, files] of shards.entries()) assert.ok(files.length > 0, `${relative(TEST_DIR, entries[i]!)} has files`);
  }
  assert.throws(() => shardFiles(join(TEST_DIR, 'quick.ts')), /not a shard entry/);
});

test('npm test starts every file or shard once, the files of a process of their own in the order of slowestFirst', () => {
  const own = processPerFileTests();
  const ordered = slowestFirst(own);
  assert.deepEqual([...ordered].sort(), [...own].sort());
  const runner = readFileSync(join(TEST_DIR, 'run.ts'), 'utf8');
  for (const name of ['unitShardEntries()', 'inProcessShardEntries()', 'programShardEntries()', 'slowestFirst(processPerFileTests())']) {
    assert.ok(runner.includes(name), `test/run.ts starts ${name}`);
  }
});

test('no shard holds a file that touches something process-wide, nor one of the SDK adapters', () => {
  const processWide = /node:v8|mock\.timers|Date\.now = |lingeringConnections|process\.env\.\w+ = |process\.chdir\(|console\.\w+ = |process\.std(?:out|err)\.write = /;
  const shared = [...inProcessLayerFiles(), ...programLayerFiles()];
  const offenders = shared.filter((file) => processWide.test(readFileSync(file, 'utf8')) || relative(TEST_DIR, file).startsWith('sdk/'));
  assert.deepEqual(offenders.map((file) => relative(TEST_DIR, file)), []);
  for (const file of ['examples/stdio-gateway-example.test.ts', 'gateway/cli/check-connected-accounts.test.ts', 'gateway/rate-limiter-flood.test.ts']) {
    assert.ok(processPerFileTests().includes(join(TEST_DIR, file)), `${file} keeps a process of its own`);
  }
});
