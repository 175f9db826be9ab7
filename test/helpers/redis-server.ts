// A real redis-server for tests: started on a free loopback port in a temporary directory, with no persistence,
// and stopped (SIGTERM, then SIGKILL) by the test that started it.
import { spawn, type ChildProcess } from 'node:child_process';
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
}

/** Starts redis-server on 127.0.0.1 and waits until it accepts connections (at most 10 s). */
export async function startTestRedis(): Promise<TestRedis> {
  if (REDIS_SERVER === undefined) throw new Error('redis-server is not installed');
  const dir = mkdtempSync(join(tmpdir(), 'guard-redis-'));
  const port = await freePort();
  let child: ChildProcess | undefined;
  const start = async (): Promise<void> => {
    const proc = spawn(REDIS_SERVER, ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--save', '', '--appendonly', 'no'], { stdio: ['ignore', 'pipe', 'pipe'] });
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
  const stop = async (): Promise<void> => {
    const proc = child;
    child = undefined;
    if (proc === undefined || proc.exitCode !== null) return;
    const exited = once(proc, 'exit');
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
