// Which test files `npm test` and `npm run test:quick` run, decided in one place.
//
// The unit layer is every test file under test/core and test/package that starts no program (none imports
// test/helpers/child-process.ts): no child process, no authorization server (test/core verifies tokens against an
// in-process loopback issuer at most). Its files run in one process, imported one after the other: a process per
// file costs more than the tests themselves.
//
// The in-process layer is every other test file that starts no program either, directly or through a test helper
// (its servers, issuers and clients all live in the test's own process), and that measures or fakes nothing
// process-wide (the heap, V8 flags, the clock, the environment, the console, the lingering-connection count). Its files run a
// few processes, its shards (test/in-process-<n>.ts), each importing its files one after the other: loading the
// gateway's modules once per shard, not once per file, saves minutes of processor time on two cores. The shards
// take the files in turn, so that the slow ones of a folder spread out, and each stays well within the runner's
// time limit for one file. Every other file runs in a process of its own.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The test folder. */
export const TEST_DIR = dirname(fileURLToPath(import.meta.url));
/** The folders of the unit layer. */
const UNIT_FOLDERS = ['core', 'package'];
/** The one helper through which a test starts a program. */
const CHILD_PROCESS_HELPER = join(TEST_DIR, 'helpers', 'child-process.ts');
/** The examples, which tests import as they are; one of them may start a program (a browser). */
const EXAMPLES_DIR = join(TEST_DIR, '..', 'examples');
/**
 * What a file names when its tests measure, fake or set something its whole process shares, so that another
 * file's leftovers would change what it sees, or it theirs: the heap (through V8 flags), the clock, the count of
 * lingering connections, the environment, the console (another file's server may still log while it listens).
 */
const PROCESS_WIDE = [/node:v8/, /mock\.timers/, /Date\.now = /, /lingeringConnections/, /process\.env\.\w+ = /, /console\.\w+ = /];

function testFilesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return testFilesUnder(path);
    return entry.name.endsWith('.test.ts') ? [path] : [];
  });
}

function inStableOrder(files: string[]): string[] {
  return files.sort((a, b) => relative(TEST_DIR, a).localeCompare(relative(TEST_DIR, b)));
}

function startsNoProgram(file: string): boolean {
  return !readFileSync(file, 'utf8').includes('helpers/child-process');
}

function isUnder(dir: string, path: string): boolean {
  return !relative(dir, path).startsWith('..');
}

/** The test and example files `file` imports by a relative path (the library's stdio upstream is the test's to stop). */
function testImportsOf(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  return [...text.matchAll(/from '(\.{1,2}\/[^']+)'/g)]
    .map((match) => resolve(dirname(file), match[1]!.replace(/\.js$/, '.ts')))
    .filter((path) => (isUnder(TEST_DIR, path) || isUnder(EXAMPLES_DIR, path)) && existsSync(path));
}

/** Whether `file`, or a test or example file it imports however deep, starts a program. */
function startsAProgramThrough(file: string, seen = new Set<string>()): boolean {
  if (seen.has(file)) return false;
  seen.add(file);
  if (file === CHILD_PROCESS_HELPER || (isUnder(EXAMPLES_DIR, file) && /node:child_process\b/.test(readFileSync(file, 'utf8')))) return true;
  return testImportsOf(file).some((imported) => startsAProgramThrough(imported, seen));
}

function touchesNothingProcessWide(file: string): boolean {
  const text = readFileSync(file, 'utf8');
  return !PROCESS_WIDE.some((pattern) => pattern.test(text));
}

/** The unit layer's files (absolute paths), in a stable order. */
export function unitLayerFiles(): string[] {
  return inStableOrder(UNIT_FOLDERS.flatMap((folder) => testFilesUnder(join(TEST_DIR, folder))).filter(startsNoProgram));
}

/** The in-process layer's files (absolute paths), in a stable order: see the top of this file. */
export function inProcessLayerFiles(): string[] {
  const unit = new Set(unitLayerFiles());
  // The SDK adapters' files keep a process each: one of them once stalled a shared process under heavy load, cause
  // not found, and they are few.
  const own = join(TEST_DIR, 'sdk');
  return inStableOrder(testFilesUnder(TEST_DIR).filter((file) => !unit.has(file) && !isUnder(own, file) && !startsAProgramThrough(file) && touchesNothingProcessWide(file)));
}

/** The in-process layer's shard entry files (absolute paths), in order: test/in-process-1.ts, -2.ts, …. */
export function inProcessShardEntries(): string[] {
  const entries = readdirSync(TEST_DIR).filter((name) => /^in-process-\d+\.ts$/.test(name));
  return entries.map((name) => join(TEST_DIR, name)).sort((a, b) => shardNumber(a) - shardNumber(b));
}

function shardNumber(entry: string): number {
  return Number(/in-process-(\d+)\.ts$/.exec(entry)![1]);
}

/** The files the shard `entry` (one of {@link inProcessShardEntries}) imports: every n-th of the layer. */
export function inProcessShardFiles(entry: string): string[] {
  const entries = inProcessShardEntries();
  const index = entries.indexOf(entry);
  if (index < 0) throw new Error(`${relative(TEST_DIR, entry)} is not a shard of the in-process layer`);
  return inProcessLayerFiles().filter((_, i) => i % entries.length === index);
}

/**
 * The files of a process of their own that take longest (each 20 s or more of a run on two cores, most of it spent
 * starting the gateway's command, examples or an authorization server as programs), slowest first. `npm test`
 * starts them first so that none of them is left running alone at the end. A file missing here only starts later.
 */
const SLOWEST_OWN_PROCESS_FILES = [
  'gateway/cli/connections-command.test.ts',
  'examples/dev-auth-server.test.ts',
  'gateway/cli/npx-signals.test.ts',
  'gateway/policy/policy-reload-cli.test.ts',
  'examples/readme-quick-start.test.ts',
  'gateway/pins/rug-pull.test.ts',
  'interop/connected-accounts.test.ts',
  'gateway/cli.test.ts',
  'gateway/cli-startup-report.test.ts',
  'gateway/cli/check-shared-store.test.ts',
  'examples/third-party-policies.test.ts',
  'docs/dockerfile.test.ts',
  'gateway/cli/check-command.test.ts',
  'gateway/rate-limiter-flood.test.ts',
  'integration/early-answer-clients.test.ts',
  'examples/notes-server-cli.test.ts',
  'interop/gateway-everything-stdio.test.ts',
  'docs/auth-server-commands.test.ts',
  'gateway/upstream/stdio/stdio-upstream-config.test.ts',
  'interop/connected-accounts-fleet.test.ts',
];

/** `files` (absolute paths) in the order `npm test` starts them: the slowest known first, then the others as given. */
export function slowestFirst(files: readonly string[]): string[] {
  const rank = (file: string): number => {
    const index = SLOWEST_OWN_PROCESS_FILES.indexOf(relative(TEST_DIR, file));
    return index < 0 ? SLOWEST_OWN_PROCESS_FILES.length : index;
  };
  return files.map((file, position) => ({ file, position })).sort((a, b) => rank(a.file) - rank(b.file) || a.position - b.position).map(({ file }) => file);
}

/** Every other test file (absolute paths), each run in a process of its own, in a stable order. */
export function processPerFileTests(): string[] {
  const grouped = new Set([...unitLayerFiles(), ...inProcessLayerFiles()]);
  return inStableOrder(testFilesUnder(TEST_DIR).filter((file) => !grouped.has(file)));
}
