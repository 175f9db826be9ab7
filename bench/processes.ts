/**
 * The benchmark's child processes: every one is tracked and ended on the way out, errors and signals
 * included, and optionally pinned to one CPU with `taskset` (all its threads: the affinity is set before
 * the program starts, and threads inherit it).
 */
import { execFileSync, fork, spawn, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { delimiter, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ServerCommand, ServerReport } from './scenario.js';

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');

const children = new Set<ChildProcess>();
const exitHooks: Array<() => void> = [];

function track(child: ChildProcess): ChildProcess {
  children.add(child);
  child.once('exit', () => children.delete(child));
  return child;
}

/** Runs `hook` on the way out, however the script ends (e.g. to remove a temporary directory). */
export function onExit(hook: () => void): void {
  exitHooks.push(hook);
}

function runExitHooks(): void {
  for (const hook of exitHooks.splice(0)) {
    try {
      hook();
    } catch {
      // Best effort on the way out.
    }
  }
}

/** Kills every child at once (no graceful stop). */
export function killAll(): void {
  for (const child of children) child.kill('SIGKILL');
}

process.once('exit', () => {
  killAll();
  runExitHooks();
});
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    killAll();
    runExitHooks();
    process.exit(130);
  });
}

/** Full path of `command` on PATH (or in one of `extra` directories), or undefined. */
export function which(command: string, extra: readonly string[] = []): string | undefined {
  for (const dir of [...(process.env.PATH ?? '').split(delimiter), ...extra]) {
    if (dir === '') continue;
    const path = join(dir, command);
    if (existsSync(path)) return path;
  }
  return undefined;
}

const TASKSET = which('taskset');

/** Whether processes can be pinned, or why not. */
export function pinning(): { ok: true } | { ok: false; why: string } {
  if (process.platform !== 'linux') return { ok: false, why: 'not Linux' };
  if (TASKSET === undefined) return { ok: false, why: 'taskset (util-linux) is not on PATH' };
  return { ok: true };
}

/** Options of {@link startScript}. */
export interface StartOptions {
  /** Node options before the script. */
  execArgv?: string[];
  /** The script is plain JavaScript at this absolute path: run it without tsx. */
  compiled?: string;
  /** Pin the process (every thread) to this CPU. */
  cpu?: number;
  /** Where the child's stdout goes. Default: this process's stdout. */
  stdout?: 'inherit' | 'ignore';
}

/**
 * Starts `bench/<script>` with tsx (or the compiled copy `options.compiled` with plain node) and an IPC
 * channel, pinned to `options.cpu` when given.
 */
export function startScript(script: string, args: string[], options: StartOptions = {}): ChildProcess {
  const nodeArgs = [...(options.compiled === undefined ? ['--import', 'tsx'] : []), ...(options.execArgv ?? [])];
  const pinned = options.cpu !== undefined && TASKSET !== undefined;
  // fork runs `execPath ...execArgv script ...args`; with taskset as execPath, taskset execs node itself,
  // which keeps the pid, the environment and the IPC descriptor.
  const child = fork(options.compiled ?? join(ROOT, 'bench', script), args, {
    cwd: ROOT,
    ...(pinned ? { execPath: TASKSET, execArgv: ['--cpu-list', String(options.cpu), process.execPath, ...nodeArgs] } : { execArgv: nodeArgs }),
    stdio: ['ignore', options.stdout ?? 'inherit', 'inherit', 'ipc'],
  });
  return track(child);
}

/** Starts a program (no IPC), pinned to `cpu` when given. */
export function startProgram(program: string, args: string[], cpu: number | undefined, options: SpawnOptions = {}): ChildProcess {
  const child =
    cpu !== undefined && TASKSET !== undefined
      ? spawn(TASKSET, ['--cpu-list', String(cpu), program, ...args], { stdio: ['ignore', 'inherit', 'inherit'], ...options })
      : spawn(program, args, { stdio: ['ignore', 'inherit', 'inherit'], ...options });
  return track(child);
}

/** Waits for the first message `pick` accepts; rejects if the child exits or reports an error first. */
export function waitFor<M extends { type: string }, T>(child: ChildProcess, what: string, pick: (m: M) => T | undefined, timeoutMs = 120_000): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const cleanup = (): void => {
      clearTimeout(timer);
      child.off('message', onMessage);
      child.off('exit', onExit);
    };
    const onMessage = (message: M): void => {
      if (message.type === 'error') {
        cleanup();
        reject(new Error(`${what}: ${(message as unknown as { message: string }).message}`));
        return;
      }
      const value = pick(message);
      if (value === undefined) return;
      cleanup();
      resolve(value);
    };
    const onExit = (code: number | null, signal: string | null): void => {
      cleanup();
      reject(new Error(`${what}: the process exited (${signal ?? code})`));
    };
    const timer = setTimeout(() => {
      cleanup();
      reject(new Error(`${what}: no answer after ${timeoutMs} ms`));
    }, timeoutMs);
    child.on('message', onMessage);
    child.once('exit', onExit);
  });
}

/**
 * Stops every child: those with an IPC channel are sent `{ type: 'stop' }` (they exit by themselves, so that
 * `--cpu-prof` writes its profile), others get SIGTERM; whatever is still there after 5 s gets SIGKILL.
 */
export async function stopAll(): Promise<void> {
  const exits = [...children].map(
    (child) =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        const timer = setTimeout(() => {
          child.kill('SIGKILL');
        }, 5_000);
        child.once('exit', () => {
          clearTimeout(timer);
          resolve();
        });
        if (child.connected) child.send({ type: 'stop' });
        else child.kill('SIGTERM');
      }),
  );
  await Promise.all(exits);
}

/** Runs `program` to completion and returns its stdout (throws on failure). */
export function run(program: string, args: string[], timeoutMs: number, env: NodeJS.ProcessEnv = process.env): string {
  return execFileSync(program, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: timeoutMs, env });
}

const CLOCK_TICKS = (() => {
  try {
    return Number(run('getconf', ['CLK_TCK'], 5_000).trim()) || 100;
  } catch {
    return 100;
  }
})();

/** CPU time (user + system, every thread) of process `pid` so far, in microseconds; undefined off Linux. */
export function processCpuMicros(pid: number | undefined): number | undefined {
  if (pid === undefined) return undefined;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name (which may hold spaces), from field 3 on: utime is 14, stime 15.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1_000_000) / CLOCK_TICKS;
  } catch {
    return undefined;
  }
}

/** Busy and total time of one CPU so far, in clock ticks (`/proc/stat`); undefined off Linux. */
export function cpuTimes(cpu: number): { busy: number; total: number } | undefined {
  try {
    const line = readFileSync('/proc/stat', 'utf8')
      .split('\n')
      .find((l) => l.startsWith(`cpu${cpu} `));
    if (line === undefined) return undefined;
    const v = line.trim().split(/\s+/).slice(1).map(Number);
    const total = v.slice(0, 8).reduce((a, b) => a + b, 0);
    const idle = (v[3] ?? 0) + (v[4] ?? 0);
    return { busy: total - idle, total };
  } catch {
    return undefined;
  }
}

/** Asks a benchmark server (`server.ts`, `conditions-server.ts`) over IPC; the report `pick` accepts, within 10 s. */
export function askServer<T>(child: ChildProcess, command: ServerCommand, what: string, pick: (m: ServerReport) => T | undefined): Promise<T> {
  const answer = waitFor<ServerReport, T>(child, what, pick, 10_000);
  child.send(command);
  return answer;
}

/** A benchmark server's CPU time so far (`process.cpuUsage()`: user and system, every thread), in µs. */
export function serverCpuUsage(child: ChildProcess): Promise<NodeJS.CpuUsage> {
  return askServer(child, { type: 'cpu' }, 'server CPU usage', (m) => (m.type === 'cpu' ? m.usage : undefined));
}
