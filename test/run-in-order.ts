// The test runner of `npm test` (test/run.ts starts it): node:test's runner over the files named on its command line,
// in the order given. `node --test` sorts the files it is given by path before starting them (Node 20), so the
// order test/suite-files.ts chooses (the longest first, so that the run does not end on one of them alone) would be
// lost; `run({ files })` keeps it. Two files at a time, each within 120 s, as `--test-concurrency=2
// --test-timeout=120000` would; the report is the one `node --test` prints (spec on a terminal, TAP otherwise).
import { run } from 'node:test';
import { spec, tap } from 'node:test/reporters';

/** Files (or shards) running at once: the machines have two cores. */
const CONCURRENCY = 2;
/** Longest time one file (or shard) may take, in ms. */
const FILE_TIMEOUT_MS = 120_000;

const stream = run({ files: process.argv.slice(2), concurrency: CONCURRENCY, timeout: FILE_TIMEOUT_MS });
stream.on('test:fail', (data: { todo?: string | boolean }) => {
  if (data.todo === undefined || data.todo === false) process.exitCode = 1;
});
(process.stdout.isTTY ? stream.compose(new spec()) : stream.compose(tap)).pipe(process.stdout);
