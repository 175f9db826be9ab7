import type { ChildProcess } from 'node:child_process';
import type { JsonRpcNotification, JsonRpcRequest, JsonRpcResponse } from '../../../core/wire/jsonrpc.js';
import { ChildLineProtocol } from './child-line-protocol.js';
import { createLineSplitter } from './line-splitter.js';
import { readLoggedLines } from './logged-lines.js';
import type { ChildEndReason, PendingRequest, RequestSink, StdioChild, StdioChildOptions } from './stdio-child-contract.js';

/** Whether children get a process group of their own, so stopping one stops what it started (not on Windows). */
export const CHILD_PROCESS_GROUPS = process.platform !== 'win32';

/**
 * One running stdio MCP server process: its lifecycle (stop with SIGTERM then SIGKILL, exit, a line past the
 * limit) and its pipes (stdin written one message a line, stdout split into lines for the
 * {@link ChildLineProtocol}, stderr to the log). The JSON-RPC itself is the protocol's.
 */
export class StdioChildProcess implements StdioChild {
  readonly pid: number | undefined;
  /** Resolves once the child exited (or could not be started). */
  readonly ended: Promise<void>;
  private running = true;
  private endReason: ChildEndReason | undefined = undefined;
  /** Set once 'exit' or 'error' ended the child: the other one then says nothing new. */
  private finished = false;
  private holds = 0;
  private killTimer: NodeJS.Timeout | undefined = undefined;
  private resolveEnded!: () => void;
  private readonly protocol: ChildLineProtocol;
  private readonly maxStdinBytes: number;

  constructor(
    private readonly proc: ChildProcess,
    private readonly options: StdioChildOptions,
  ) {
    this.ended = new Promise<void>((resolve) => (this.resolveEnded = resolve));
    this.maxStdinBytes = options.maxStdinBytes ?? Number.POSITIVE_INFINITY;
    this.protocol = new ChildLineProtocol(options, (message) => this.writeLine(message));
    const pid = (this.pid = proc.pid);
    const { label, log } = options;
    if (pid !== undefined) log({ event: 'upstream_started', session: label, pid });
    proc.once('exit', (exitCode, signalName) => {
      // Without a pid it never started, and 'error' says why.
      if (this.finished || pid === undefined) return;
      this.finished = true;
      this.end('upstream_exited', exitCode, signalName);
    });
    proc.once('error', (error: NodeJS.ErrnoException) => {
      // On a running child an 'error' is a failed kill, and its 'exit' still follows.
      if (this.finished || pid !== undefined) return;
      this.finished = true;
      this.end('upstream_spawn_failed', null, null, error.code);
    });
    // EPIPE on a child that exited: its 'exit' reports it.
    proc.stdin!.on('error', () => {});
    const stdout = createLineSplitter(options.maxLineBytes, {
      line: (line) => this.protocol.readLine(line),
      oversized: () => {
        this.endReason ??= 'upstream_line_too_large';
        void this.stop();
      },
    });
    proc.stdout!.on('data', (chunk: Buffer) => {
      if (this.running) stdout.push(chunk);
    });
    proc.stdout!.on('end', () => stdout.end());
    proc.stdout!.on('error', () => {});
    readLoggedLines(proc.stderr!, (line) => log({ event: 'upstream_stderr', session: label, line }));
  }

  /** False once it exited or is being stopped. */
  get alive(): boolean {
    return this.running;
  }

  get pending(): number {
    return this.protocol.pending;
  }

  get inputFull(): boolean {
    return (this.proc.stdin?.writableLength ?? 0) > this.maxStdinBytes;
  }

  request(message: JsonRpcRequest, sink: RequestSink): PendingRequest | undefined {
    if (!this.running) return undefined;
    return this.protocol.request(message, sink);
  }

  notify(message: JsonRpcNotification): boolean {
    return this.protocol.notify(message);
  }

  answer(message: JsonRpcResponse): boolean {
    return this.protocol.answer(message);
  }

  hold(): () => void {
    this.holds++;
    this.proc.stdout?.pause();
    let held = true;
    return () => {
      if (!held) return;
      held = false;
      if (--this.holds === 0) this.proc.stdout?.resume();
    };
  }

  stop(): Promise<void> {
    if (!this.running) return this.ended;
    this.running = false;
    this.endReason ??= 'upstream_stopped';
    // The MCP stdio way first (stdin closed), then the signals.
    this.proc.stdin?.end();
    this.signal('SIGTERM');
    this.killTimer = setTimeout(() => this.signal('SIGKILL'), this.options.stopTimeoutMs);
    return this.ended;
  }

  private writeLine(message: unknown): boolean {
    const stdin = this.proc.stdin;
    if (!this.running || !stdin || stdin.destroyed || stdin.writableEnded) return false;
    stdin.write(`${JSON.stringify(message)}\n`);
    return true;
  }

  private signal(name: NodeJS.Signals): void {
    if (this.pid === undefined) return;
    try {
      if (CHILD_PROCESS_GROUPS) process.kill(-this.pid, name);
      else this.proc.kill(name);
    } catch {
      // Already gone.
    }
  }

  /** The child is gone: its requests fail, the log says why, and `onEnd` is told. */
  private end(reason: ChildEndReason, exitCode: number | null, signalName: string | null, code?: string): void {
    this.running = false;
    const why = this.endReason ?? reason;
    this.endReason = why;
    clearTimeout(this.killTimer);
    this.killTimer = undefined;
    // What the child started must not outlive it.
    this.signal('SIGKILL');
    this.protocol.failAll(why);
    const pid = this.pid;
    this.options.log({ event: 'upstream_exit', session: this.options.label, ...(pid !== undefined ? { pid } : {}), reason: why, exitCode, signal: signalName, ...(code ? { code } : {}) });
    try {
      this.options.onEnd(why);
    } finally {
      this.resolveEnded();
    }
  }
}
