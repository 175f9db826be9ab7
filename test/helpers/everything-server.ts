// `@modelcontextprotocol/server-everything` in Streamable HTTP mode as a real upstream for the interop tests:
// kept on 127.0.0.1 by a preload (it listens on every interface by itself), on a free port, each request it
// receives recorded as a JSON line when a record file is given.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from './child-process.js';
import { resolve } from 'node:path';
import { ROOT } from './stdio-gateway.js';

const PRELOAD = resolve(ROOT, 'test/helpers/everything-loopback-preload.mjs');
/** The package's entry point, also run in stdio mode by the stdio interop test. */
export const EVERYTHING = resolve(ROOT, 'node_modules/@modelcontextprotocol/server-everything/dist/index.js');

/** Rejects with `what` when `promise` has not settled within `ms`. */
export function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout;
  return Promise.race([
    promise.finally(() => clearTimeout(timer)),
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms`)), ms);
    }),
  ]);
}

/** A running server-everything. */
export interface EverythingServer {
  /** Its MCP endpoint, `http://127.0.0.1:<port>/mcp`. */
  readonly url: string;
  readonly child: ChildProcess;
  /** Kills it (SIGKILL: it keeps no state worth a graceful end). */
  stop(): void;
}

/**
 * Starts server-everything (streamable HTTP) and resolves once it listens, within 15 s: on `port` when given (a
 * restart on the port it had), else on a free one.
 */
export async function startEverythingServer(options: { recordFile?: string; port?: number } = {}): Promise<EverythingServer> {
  const child = spawn(process.execPath, ['--import', PRELOAD, EVERYTHING, 'streamableHttp'], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', PORT: String(options.port ?? 0), ...(options.recordFile ? { EVERYTHING_RECORD_FILE: options.recordFile } : {}) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const stop = (): void => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  };
  let output = '';
  try {
    const url = await withTimeout(
      new Promise<string>((resolvePromise, reject) => {
        child.stdout!.on('data', (chunk: Buffer) => {
          output += chunk.toString();
          const match = /EVERYTHING_PORT=(\d+) HOST=(\S+)/.exec(output);
          if (match) {
            assert.equal(match[2], '127.0.0.1', 'server-everything must listen on loopback only');
            resolvePromise(`http://127.0.0.1:${match[1]}/mcp`);
          }
        });
        child.stderr!.resume();
        child.once('exit', (code) => reject(new Error(`server-everything exited early (${code}): ${output}`)));
      }),
      15_000,
      'server-everything start',
    );
    return { url, child, stop };
  } catch (error) {
    stop();
    throw error;
  }
}
