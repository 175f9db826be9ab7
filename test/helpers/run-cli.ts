import { spawn, type ChildProcess } from './child-process.js';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository's root, where the CLI runs (relative paths in settings start there). */
export const REPOSITORY_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const CLI = resolve(REPOSITORY_ROOT, 'src/gateway/cli.ts');

/** How a CLI run ended. */
export interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** How {@link runCommand} runs a program. */
export interface RunOptions {
  /** Working directory. Default this process's. */
  cwd?: string;
  /** The whole environment. Default this process's. */
  env?: NodeJS.ProcessEnv;
  /** Written to standard input at once, which is then closed. Default none (standard input ignored). */
  input?: string;
  /** Killed, and the run rejected with what it printed, after this long. Default 60 000 ms. */
  timeoutMs?: number;
  /** In a process group of its own, killed as a group (a shell and the npm it starts). Default false. */
  detached?: boolean;
}

/**
 * Runs `program` with `args` until it exits: its exit code and everything it printed on each stream (read to their
 * end: a child's last bytes may still be in the pipe when it exits).
 */
export function runCommand(program: string, args: readonly string[], options: RunOptions = {}): Promise<CliRun> {
  const { cwd, env, input, timeoutMs = 60_000, detached = false } = options;
  return new Promise((resolveRun, reject) => {
    const child = spawn(program, args, { cwd, env, detached, stdio: [input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'] });
    if (input !== undefined) child.stdin!.end(input);
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
    const timer = setTimeout(() => {
      killProcess(child, 'SIGKILL', detached);
      reject(new Error(`${[program, ...args].join(' ')} did not exit within ${timeoutMs} ms; stdout: ${stdout} stderr: ${stderr}`));
    }, timeoutMs);
    child.once('close', (code) => {
      clearTimeout(timer);
      resolveRun({ code, stdout, stderr });
    });
  });
}

/** Runs a TypeScript file of the repository (an example, a script) through tsx, as `npm run` does; see {@link runCommand}. */
export function runScript(script: string, args: readonly string[] = [], options: RunOptions = {}): Promise<CliRun> {
  return runCommand(process.execPath, ['--import', 'tsx', script, ...args], options);
}

/** A program that stays up (a server), once it has said it is ready. */
export interface StartedProcess {
  readonly child: ChildProcess;
  /** Everything printed so far, stdout and stderr as they came. */
  output(): string;
  /** What it printed on stdout so far. */
  stdout(): string;
  /** What it printed on stderr so far. */
  stderr(): string;
  /** SIGTERM, then waits for it to exit and its output to be read to the end. */
  stop(): Promise<void>;
}

/**
 * Starts a TypeScript file of the repository through tsx and resolves once its output (stdout and stderr as they
 * came) includes `ready`, or matches it (a RegExp without the g flag); rejects with what it printed, and stops it,
 * if it exits first or is not ready within `timeoutMs` (default 30 000).
 */
export async function startScript(script: string, args: readonly string[], ready: string | RegExp, options: Omit<RunOptions, 'input' | 'detached'> = {}): Promise<StartedProcess> {
  const { cwd, env, timeoutMs = 30_000 } = options;
  const child = spawn(process.execPath, ['--import', 'tsx', script, ...args], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<void>((resolveExit) => child.once('close', () => resolveExit()));
  const stop = async (): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    await exited;
  };
  try {
    await new Promise<void>((resolveReady, reject) => {
      const timer = setTimeout(() => reject(new Error(`${script} was not ready within ${timeoutMs} ms: ${output}`)), timeoutMs);
      const collect = (chunk: Buffer): void => {
        output += chunk.toString();
        if (typeof ready === 'string' ? output.includes(ready) : ready.test(output)) {
          clearTimeout(timer);
          resolveReady();
        }
      };
      child.stdout.on('data', collect);
      child.stderr.on('data', collect);
      void exited.then(() => {
        clearTimeout(timer);
        reject(new Error(`${script} exited with code ${child.exitCode ?? child.signalCode} before it was ready: ${output}`));
      });
    });
  } catch (error) {
    await stop();
    throw error;
  }
  return { child, output: () => output, stdout: () => stdout, stderr: () => stderr, stop };
}

/**
 * Runs the real `mcp-oauth-guard` CLI (through tsx, as the built bin would run) until it exits, with a clean
 * environment: `PATH` and `env` only, and `input` on standard input (none by default). Killed, and the test
 * failed, after `timeoutMs`.
 */
export function runGatewayCli(args: readonly string[], env: Record<string, string> = {}, timeoutMs = 30_000, input?: string): Promise<CliRun> {
  return runScript(CLI, args, { cwd: REPOSITORY_ROOT, env: { PATH: process.env.PATH ?? '', ...env }, timeoutMs, ...(input === undefined ? {} : { input }) });
}

/** Sends `signal` to a child, or to its whole process group when it was started `detached`; nothing if it is gone. */
export function killProcess(child: ChildProcess, signal: NodeJS.Signals, group: boolean): void {
  try {
    if (group && child.pid !== undefined) process.kill(-child.pid, signal);
    else child.kill(signal);
  } catch {
    // already gone
  }
}
