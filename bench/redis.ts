/**
 * redis-server for the `gateway-shared-limits` target: the tests' server (a free loopback port, a temporary
 * directory, no persistence; `test/helpers/redis-server.ts`), pinned to the servers' CPU like every other server
 * of the gateway part, stopped with them and its directory removed on exit.
 *
 * When `redis-server` is not installed and the benchmark runs as root, Debian's `redis-server` is installed with
 * apt-get; otherwise the target is skipped with the reason.
 */
import type { ChildProcess } from 'node:child_process';
import { rmSync } from 'node:fs';
import { Redis } from 'ioredis';
import { startTestRedis } from '../test/helpers/redis-server.js';
import { onExit, processCpuMicros, startProgram } from './processes.js';
import { findServerProgram } from './server-program.js';

/** The redis-server binary (Debian's `redis-server` when it must be installed), its path and version; or why there is none. */
export function findRedisServer(log: (line: string) => void): { path: string; version: string } | { why: string } {
  return findServerProgram(
    {
      program: 'redis-server',
      pkg: 'redis-server',
      dirs: ['/usr/bin', '/usr/local/bin', '/usr/sbin'],
      versionArgs: ['--version'],
      // "Redis server v=7.0.15 sha=… malloc=… bits=64 build=…"
      version: ({ stdout }) => /v=(\S+)/.exec(stdout)?.[1] ?? stdout.trim(),
    },
    log,
  );
}

/** A redis-server of the benchmark. */
export interface BenchRedis {
  readonly url: string;
  /** Its temporary directory, removed on exit. */
  readonly dir: string;
  /** Its CPU time so far (user + system, µs); undefined off Linux. */
  cpuMicros(): number | undefined;
}

/** Starts `program` pinned to `cpu`; resolves once it accepts connections (the helper waits at most 10 s). */
export async function startBenchRedis(program: string, cpu: number | undefined): Promise<BenchRedis> {
  let child: ChildProcess | undefined;
  const redis = await startTestRedis({
    program,
    // taskset execs the server itself: the pid is the server's.
    launch: (file, args) => (child = startProgram(file, args, cpu, { stdio: ['ignore', 'pipe', 'inherit'] })),
  });
  onExit(() => rmSync(redis.dir, { recursive: true, force: true }));
  return { url: redis.url, dir: redis.dir, cpuMicros: () => processCpuMicros(child?.pid) };
}

/**
 * Commands the server at `url` has processed since it started (`INFO stats`, `total_commands_processed`): a run
 * against the gateway whose limit is kept there must add at least one per request, or the limit was not shared.
 */
export async function redisCommandsProcessed(url: string): Promise<number> {
  const client = new Redis(url, { lazyConnect: true, connectTimeout: 5_000, commandTimeout: 5_000, maxRetriesPerRequest: 0, retryStrategy: () => null });
  try {
    await client.connect();
    const info = await client.info('stats');
    const processed = /^total_commands_processed:(\d+)/m.exec(info)?.[1];
    if (processed === undefined) throw new Error(`no total_commands_processed in INFO stats of ${url}`);
    return Number(processed);
  } finally {
    client.disconnect();
  }
}
