// Which test files `npm test` and `npm run test:quick` run, and in which processes, decided in one place. Every
// test file is in exactly one group (test/package/suite-files.test.ts proves it). Loading a file's modules (tsx's
// transform and the gateway's modules) costs about three seconds of processor time per process, often more than
// the file's own tests: so files share processes wherever nothing of one can change what another sees.
//
// The unit layer is every test file under test/core and test/package that starts no program (none imports
// test/helpers/child-process.ts): no child process, no authorization server (test/core verifies tokens against an
// in-process loopback issuer at most). `npm run test:quick` runs its files in one process (test/quick.ts), imported
// one after the other; `npm test` in a few, its shards (test/unit-<n>.ts).
//
// The in-process layer is every other test file that starts no program either, directly or through a test helper
// (its servers, issuers and clients all live in the test's own process), and that measures or fakes nothing
// process-wide (the heap, V8 flags, the clock, the environment, the working folder, the console, the standard
// streams, the lingering-connection count). Its files run a few processes, its shards (test/in-process-<n>.ts),
// each importing its files one after the other.
//
// The program layer is every other file that starts a program (the gateway's command, an example, an authorization
// server, Redis, nginx, a browser) and touches nothing process-wide either: its tests wait mostly on their children,
// which they end, as they close their servers and remove their folders, whether they pass or fail. Its files run
// in shards too (test/programs-<n>.ts). Each kind of shard takes its files in turn, so that the slow ones of a
// folder spread out. Shards are kept small (a shard's load costs as much as a file's own process: a few more of
// them cost seconds) so that each stays well within the runner's time limit for one file on a busy machine: the
// unit layer in one process and the in-process layer in four overran it while the type check and other work shared
// the two cores.
//
// Every other file runs in a process of its own: those that touch something process-wide, the SDK adapters' files,
// and the slowest program-starting files (each 20 s or more, nearly all of it in the programs they start: one
// process each costs them little, and in a shard they would crowd it toward its time limit).
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

/** The test folder. */
export const TEST_DIR = dirname(fileURLToPath(import.meta.url));

/**
 * The Node flags of every test process `npm test` starts (node:test's runner passes its own on to the processes it
 * starts): tsx, and a message for a failing `assert.ok` that has none, made without re-reading the test's source
 * (helpers/cheap-assert-messages.ts says why).
 */
export function testProcessFlags(): string[] {
  return ['--import', 'tsx', '--import', pathToFileURL(join(TEST_DIR, 'helpers', 'cheap-assert-messages.ts')).href];
}
/** The folders of the unit layer. */
const UNIT_FOLDERS = ['core', 'package'];
/** The one helper through which a test starts a program. */
const CHILD_PROCESS_HELPER = join(TEST_DIR, 'helpers', 'child-process.ts');
/** The examples, which tests import as they are; one of them may start a program (a browser). */
const EXAMPLES_DIR = join(TEST_DIR, '..', 'examples');
/**
 * What a file names when its tests measure, fake or set something its whole process shares, so that another
 * file's leftovers would change what it sees, or it theirs: the heap (through V8 flags), the clock, the count of
 * lingering connections, the environment, the working folder, the console and the standard streams (another
 * file's server may still log while it listens).
 */
const PROCESS_WIDE = [
  /node:v8/,
  /mock\.timers/,
  /Date\.now = /,
  /lingeringConnections/,
  /process\.env\.\w+ = /,
  /process\.chdir\(/,
  /console\.\w+ = /,
  /process\.std(?:out|err)\.write = /,
];

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
  return inStableOrder(testFilesUnder(TEST_DIR).filter((file) => !unit.has(file) && !keepsOwnProcess(file) && !startsAProgramThrough(file)));
}

/** The program layer's files (absolute paths), in a stable order: see the top of this file. */
export function programLayerFiles(): string[] {
  const unit = new Set(unitLayerFiles());
  return inStableOrder(testFilesUnder(TEST_DIR).filter((file) => !unit.has(file) && !keepsOwnProcess(file) && startsAProgramThrough(file) && !SLOWEST_FILES.includes(relative(TEST_DIR, file))));
}

/** Whether `file`, outside the unit layer, keeps a process of its own whatever it starts. */
function keepsOwnProcess(file: string): boolean {
  // The SDK adapters' files keep a process each: one of them once stalled a shared process under heavy load, cause
  // not found, and they are few.
  return isUnder(join(TEST_DIR, 'sdk'), file) || !touchesNothingProcessWide(file);
}

/** The two kinds of shard: the entry files' name, and the layer each takes its files from. */
const SHARD_KINDS = [
  { name: 'unit', files: unitLayerFiles },
  { name: 'in-process', files: inProcessLayerFiles },
  { name: 'programs', files: programLayerFiles },
] as const;

type ShardKind = (typeof SHARD_KINDS)[number]['name'];

/** The entry files (absolute paths) of one kind of shard, in order: test/<kind>-1.ts, -2.ts, …. */
function shardEntries(kind: ShardKind): string[] {
  const pattern = new RegExp(`^${kind}-(\\d+)\\.ts$`);
  const number = (name: string): number => Number(pattern.exec(name)![1]);
  return readdirSync(TEST_DIR).filter((name) => pattern.test(name)).sort((a, b) => number(a) - number(b)).map((name) => join(TEST_DIR, name));
}

/** The unit layer's shard entry files (absolute paths), in order: test/unit-1.ts, -2.ts, …. */
export function unitShardEntries(): string[] {
  return shardEntries('unit');
}

/** The in-process layer's shard entry files (absolute paths), in order: test/in-process-1.ts, -2.ts, …. */
export function inProcessShardEntries(): string[] {
  return shardEntries('in-process');
}

/** The program layer's shard entry files (absolute paths), in order: test/programs-1.ts, -2.ts, …. */
export function programShardEntries(): string[] {
  return shardEntries('programs');
}

/** The files the shard `entry` (of {@link unitShardEntries}, {@link inProcessShardEntries} or {@link programShardEntries}) imports: every n-th of its layer. */
export function shardFiles(entry: string): string[] {
  for (const kind of SHARD_KINDS) {
    const entries = shardEntries(kind.name);
    const index = entries.indexOf(entry);
    if (index >= 0) return kind.files().filter((_, i) => i % entries.length === index);
  }
  throw new Error(`${relative(TEST_DIR, entry)} is not a shard entry`);
}

/**
 * The files that take longest (each 20 s or more of a run on two cores, most of it spent starting the gateway's
 * command, examples or an authorization server as programs), slowest first. `npm test` starts them early so that
 * none of them is left running alone at the end; those of the program layer keep a process of their own (see the
 * top of this file). A file missing here joins a shard of its layer, or starts later.
 */
const SLOWEST_FILES = [
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
    const index = SLOWEST_FILES.indexOf(relative(TEST_DIR, file));
    return index < 0 ? SLOWEST_FILES.length : index;
  };
  return files.map((file, position) => ({ file, position })).sort((a, b) => rank(a.file) - rank(b.file) || a.position - b.position).map(({ file }) => file);
}

/** Every other test file (absolute paths), each run in a process of its own, in a stable order. */
export function processPerFileTests(): string[] {
  const grouped = new Set([...unitLayerFiles(), ...inProcessLayerFiles(), ...programLayerFiles()]);
  return inStableOrder(testFilesUnder(TEST_DIR).filter((file) => !grouped.has(file)));
}
