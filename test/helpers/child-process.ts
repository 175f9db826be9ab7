// The one place a test starts a program. A program the tests start may fall back to a default port (the
// gateway's PORT 8080, the notes example's 3000) when nothing names one, and that port may be taken where the
// tests run: so every child gets PORT set to a free port, probed at the moment it starts, unless the test names
// one itself. test/package/child-processes.test.ts keeps every other test file from importing node:child_process.
import * as nodeChildProcess from 'node:child_process';
import { promisify } from 'node:util';
import { Worker } from 'node:worker_threads';

export type { ChildProcess } from 'node:child_process';

/**
 * A free port has to be found synchronously (`spawn` returns its child at once), but binding is asynchronous:
 * a worker thread binds port 0 on 127.0.0.1, releases it and hands the port over a shared cell while this
 * thread waits. Cell 0 is the state (0 waiting, 1 found, 2 failed), cell 1 the port.
 */
const PROBE = `
const { parentPort, workerData: cell } = require('node:worker_threads');
const { createServer } = require('node:net');
const answer = (state, port) => { Atomics.store(cell, 1, port); Atomics.store(cell, 0, state); Atomics.notify(cell, 0); };
parentPort.on('message', () => {
  const server = createServer();
  server.once('error', () => answer(2, 0));
  server.listen(0, '127.0.0.1', () => { const { port } = server.address(); server.close(() => answer(1, port)); });
});`;

/** How long a probe may take before the child is refused, in ms. */
const PROBE_TIMEOUT_MS = 10_000;

class FreePortProbe {
  private worker: Worker | undefined;
  private readonly cell = new Int32Array(new SharedArrayBuffer(8));

  /** A TCP port free on 127.0.0.1 now, released again for the child to bind. */
  next(): number {
    if (!this.worker) {
      this.worker = new Worker(PROBE, { eval: true, workerData: this.cell });
      // It must never keep a test process alive.
      this.worker.unref();
    }
    Atomics.store(this.cell, 0, 0);
    this.worker.postMessage(0);
    Atomics.wait(this.cell, 0, 0, PROBE_TIMEOUT_MS);
    if (Atomics.load(this.cell, 0) !== 1) throw new Error('could not probe a free port for a child process');
    return Atomics.load(this.cell, 1);
  }
}

const probe = new FreePortProbe();

/**
 * The environment a child gets: `env` (this process's when undefined), with PORT a free port unless `env` names
 * one of its own. A PORT inherited from the shell the tests run in is replaced: it is no choice of the test's.
 */
export function withFreePort(env: NodeJS.ProcessEnv | undefined): NodeJS.ProcessEnv {
  const given = env?.PORT;
  const chosen = given !== undefined && given !== process.env.PORT ? given : String(probe.next());
  return { ...(env ?? process.env), PORT: chosen };
}

interface EnvOption {
  env?: NodeJS.ProcessEnv | undefined;
}

/** Splits `(command, args?, options?)` as node:child_process does, giving the options a free PORT. */
function withPort<Options extends EnvOption>(args: unknown, options: unknown): [readonly string[], Options] {
  const list = Array.isArray(args) ? (args as string[]) : [];
  const given = ((Array.isArray(args) ? options : args) ?? {}) as Options;
  return [list, { ...given, env: withFreePort(given.env) }];
}

/** `spawn` of node:child_process; the child gets a free PORT ({@link withFreePort}). */
export const spawn = ((command: string, args?: unknown, options?: unknown) => {
  const [list, settled] = withPort<nodeChildProcess.SpawnOptions>(args, options);
  return nodeChildProcess.spawn(command, list, settled);
}) as typeof nodeChildProcess.spawn;

/** `spawnSync` of node:child_process; the child gets a free PORT ({@link withFreePort}). */
export const spawnSync = ((command: string, args?: unknown, options?: unknown) => {
  const [list, settled] = withPort<nodeChildProcess.SpawnSyncOptions>(args, options);
  return nodeChildProcess.spawnSync(command, list, settled);
}) as typeof nodeChildProcess.spawnSync;

/** `execFileSync` of node:child_process; the child gets a free PORT ({@link withFreePort}). */
export const execFileSync = ((file: string, args?: unknown, options?: unknown) => {
  const [list, settled] = withPort<nodeChildProcess.ExecFileSyncOptions>(args, options);
  return nodeChildProcess.execFileSync(file, list, settled);
}) as typeof nodeChildProcess.execFileSync;

/**
 * `execFile` of node:child_process, with `args` and `options` given; the child gets a free PORT
 * ({@link withFreePort}). `promisify(execFile)` resolves with `{ stdout, stderr }`, as node's does.
 */
export const execFile = Object.assign(
  (file: string, args: readonly string[], options: nodeChildProcess.ExecFileOptions, callback?: (error: nodeChildProcess.ExecFileException | null, stdout: string | Buffer, stderr: string | Buffer) => void) =>
    nodeChildProcess.execFile(file, args, { ...options, env: withFreePort(options.env) }, callback),
  {
    [promisify.custom]: (file: string, args: readonly string[], options: nodeChildProcess.ExecFileOptions) => promisify(nodeChildProcess.execFile)(file, args, { ...options, env: withFreePort(options.env) }),
  },
) as unknown as typeof nodeChildProcess.execFile;
