// A real redis-server for tests: started on a free loopback port in a temporary directory, with no persistence,
// and stopped (SIGTERM, then SIGKILL) by the test that started it.
import { spawn, type ChildProcess } from './child-process.js';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './free-port.js';
import { findOnPath } from './stdio-gateway.js';

/** The redis-server program, or undefined when it is not installed (CI installs the Debian package). */
export const REDIS_SERVER = findOnPath('redis-server');

/** A running redis-server. */
export interface TestRedis {
  readonly url: string;
  readonly port: number;
  /** Its working directory, removed by {@link removeTestRedis}. */
  readonly dir: string;
  /** Stops the server (the port stays reserved for {@link TestRedis.start}). */
  stop(): Promise<void>;
  /** Starts it again on the same port, empty. */
  start(): Promise<void>;
  /** Freezes the server (SIGSTOP): connections stay open and commands go unanswered, as on a stalled host. */
  pause(): void;
  /** Lets a paused server go on (SIGCONT); it then answers what it was sent. */
  resume(): void;
}

/** Options of {@link startTestRedis}. */
export interface StartTestRedisOptions {
  /** The redis-server program. Default {@link REDIS_SERVER}. */
  program?: string;
  /**
   * Starts `program` with `args`, its stdout piped (readiness is read from it). Default: `spawn`. The
   * benchmark passes its own, which pins the server to a CPU and stops it with its other processes.
   */
  launch?: (program: string, args: string[]) => ChildProcess;
  /** More redis-server arguments, e.g. `['--requirepass', 'secret']`. Default none. */
  args?: readonly string[];
}

/** Starts redis-server on 127.0.0.1 and waits until it accepts connections (at most 10 s). */
export async function startTestRedis(options: StartTestRedisOptions = {}): Promise<TestRedis> {
  const program = options.program ?? REDIS_SERVER;
  if (program === undefined) throw new Error('redis-server is not installed');
  const launch = options.launch ?? ((file: string, args: string[]) => spawn(file, args, { stdio: ['ignore', 'pipe', 'pipe'] }));
  const dir = mkdtempSync(join(tmpdir(), 'guard-redis-'));
  const port = await freePort();
  let child: ChildProcess | undefined;
  const start = async (): Promise<void> => {
    const proc = launch(program, ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--save', '', '--appendonly', 'no', ...(options.args ?? [])]);
    child = proc;
    let output = '';
    const ready = new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`redis-server did not start within 10 s: ${output}`)), 10_000);
      proc.stdout!.on('data', (chunk: Buffer) => {
        output += chunk.toString();
        if (output.includes('Ready to accept connections')) {
          clearTimeout(timer);
          resolve();
        }
      });
      proc.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`redis-server exited with ${code}: ${output}`));
      });
    });
    await ready;
  };
  const signal = (name: 'SIGSTOP' | 'SIGCONT'): void => {
    if (child === undefined || child.exitCode !== null || child.signalCode !== null) throw new Error('redis-server is not running');
    child.kill(name);
  };
  const stop = async (): Promise<void> => {
    const proc = child;
    child = undefined;
    // Already gone (exited, or killed by a signal): no exit event is coming.
    if (proc === undefined || proc.exitCode !== null || proc.signalCode !== null) return;
    const exited = once(proc, 'exit');
    // A paused server would not act on SIGTERM until continued.
    proc.kill('SIGCONT');
    proc.kill('SIGTERM');
    const timer = setTimeout(() => proc.kill('SIGKILL'), 5_000);
    await exited;
    clearTimeout(timer);
  };
  await start();
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    dir,
    start,
    pause: () => signal('SIGSTOP'),
    resume: () => signal('SIGCONT'),
    async stop() {
      await stop();
    },
  };
}

/** Stops the server and removes its directory. */
export async function removeTestRedis(redis: TestRedis | undefined): Promise<void> {
  await redis?.stop();
  if (redis) rmSync(redis.dir, { recursive: true, force: true });
}
