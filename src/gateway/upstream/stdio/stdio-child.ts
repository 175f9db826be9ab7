import { spawn, type ChildProcess } from 'node:child_process';
import type { JsonRpcId, JsonRpcMessage, JsonRpcNotification, JsonRpcRequest, JsonRpcResponse } from '../../../core/wire/jsonrpc.js';
import { jsonRpcError } from '../../../core/wire/jsonrpc.js';
import { createLineSplitter } from './line-splitter.js';

/** Why a child stopped serving, a stable code for logs and for the errors its requests get. */
export type ChildEndReason =
  /** It exited (or was killed) on its own. */
  | 'upstream_exited'
  /** It could not be started (the program is missing or not executable, the directory is missing, …). */
  | 'upstream_spawn_failed'
  /** It wrote a stdout line longer than the limit, so the gateway ended it. */
  | 'upstream_line_too_large'
  /** The gateway ended it: DELETE, idle timeout, or shutdown. */
  | 'upstream_stopped';

/** One line for the gateway's log about a child. Never a token. */
export interface ChildLogEvent {
  event: 'upstream_started' | 'upstream_stderr' | 'upstream_stdout_not_json' | 'upstream_unmatched_response' | 'upstream_exit';
  /** The session the child serves (a session id, or `caller` for the sessionless child of a caller). */
  session: string;
  pid?: number;
  /** The output line (truncated to 4 096 characters), for `upstream_stderr` and `upstream_stdout_not_json`. */
  line?: string;
  /** For `upstream_exit`. */
  reason?: ChildEndReason;
  exitCode?: number | null;
  signal?: string | null;
  /** Node's error code when the child could not be started, e.g. `ENOENT`. */
  code?: string;
}

/** Where the child's messages about one request go; see {@link StdioChild.request}. */
export interface RequestSink {
  /**
   * A notification about the request (progress, whose token names it), or a message routed to this request's
   * stream. Returns false when the stream cannot carry it (the client accepts JSON only, or is gone).
   */
  message(message: JsonRpcMessage): boolean;
  /** The response, with the client's id restored. Called once, last. */
  response(message: JsonRpcResponse): void;
  /** The child ended before answering. Called once, last. */
  fail(reason: ChildEndReason): void;
}

/** Options of {@link startStdioChild}. */
export interface StdioChildOptions {
  /** Program to run (looked up on `env.PATH` when it has no `/`). */
  command: string;
  args: readonly string[];
  /** Working directory. Default: the gateway's. */
  cwd?: string;
  /** The child's whole environment. */
  env: Readonly<Record<string, string>>;
  /** Largest stdout line (one JSON-RPC message), in bytes; a longer one ends the child. */
  maxLineBytes: number;
  /** Time between SIGTERM and SIGKILL when stopping, in milliseconds. */
  stopTimeoutMs: number;
  /**
   * Most bytes written to stdin that the child has not read yet (Node's queue above the pipe) before
   * {@link StdioChild.inputFull} says so; see there. Default unbounded.
   */
  maxStdinBytes?: number;
  /** Names the child in logs: its session id. */
  label: string;
  log(event: ChildLogEvent): void;
  /**
   * A request or notification from the child that answers no request of the gateway's (sampling, elicitation,
   * roots, logging, list changes), with a request's id already replaced by one the gateway chose. Returns
   * whether it reached a client; a request that did not is answered with an error at once, so the child does
   * not wait for an answer that cannot come.
   */
  onMessage(message: JsonRpcRequest | JsonRpcNotification): boolean;
  /** The child ended; its requests in flight have been failed. Called once. */
  onEnd(reason: ChildEndReason): void;
  /** The child answered a request of the gateway's for the first time: it runs and speaks JSON-RPC. Called at most once. */
  onAnswered?(): void;
}

/** A request of the gateway's in flight in a child; see {@link StdioChild.request}. */
export interface PendingRequest {
  /** The id the child sees. */
  readonly childId: number;
  /** Drops the sink: the child's late answer is discarded. With `cancel`, the child is told (`notifications/cancelled`). */
  abandon(cancel: boolean, reason?: string): void;
}

/** One stdio MCP server process, speaking newline-delimited JSON-RPC on stdin and stdout. */
export interface StdioChild {
  readonly pid: number | undefined;
  /** False once it exited or is being stopped. */
  readonly alive: boolean;
  /** Requests in flight. */
  readonly pending: number;
  /**
   * True while more than `maxStdinBytes` written to stdin wait for the child to read them: a child that stops
   * reading must not make the gateway hold whatever clients send it. Its own small writes (cancellations, errors
   * for requests of the child's) still go; the caller refuses the client's messages meanwhile.
   */
  readonly inputFull: boolean;
  /**
   * Sends a client request. Its id is replaced by one unique in this child (so two clients' requests with the
   * same id cannot collide) and a `_meta.progressToken` likewise; both are restored in what reaches the sink.
   * The message itself is not changed. Undefined when the child is not alive.
   */
  request(message: JsonRpcRequest, sink: RequestSink): PendingRequest | undefined;
  /**
   * Sends a client notification. A `notifications/cancelled` naming a request in flight is rewritten to the
   * child's id for it (the newest such request when several carry the same client id).
   */
  notify(message: JsonRpcNotification): boolean;
  /** Delivers a client's answer to a request of the child's, by the id the gateway gave it. False when unknown. */
  answer(message: JsonRpcResponse): boolean;
  /** Holds stdout until `release` is called (backpressure from a slow client). */
  hold(): () => void;
  /** Closes stdin and sends SIGTERM, then SIGKILL after `stopTimeoutMs`. Resolves once it exited. Idempotent. */
  stop(): Promise<void>;
  /** Resolves once the child exited (or could not be started). */
  readonly ended: Promise<void>;
}

/** Requests of the child's awaiting a client's answer; past it the oldest is answered with an error. */
const MAX_SERVER_REQUESTS = 256;
/** Longest output line logged, in characters; the rest is cut off. */
const MAX_LOGGED_LINE = 4096;

interface Pending {
  readonly originalId: JsonRpcId;
  readonly progressToken: unknown;
  sink: RequestSink | null;
}

/**
 * Starts one stdio MCP server. It gets its own process group (so stopping it stops what it started, such as
 * the server `npx` runs) and exactly the environment given. Its stdout is read as newline-delimited
 * JSON-RPC: responses go to the sink of the request they answer (matched by the child-unique id), progress
 * notifications to the request whose token they carry, everything else to `onMessage`. stdout lines that are
 * not JSON, and all of stderr, go to `log` only, never to a client.
 */
export function startStdioChild(options: StdioChildOptions): StdioChild {
  const { label, log } = options;
  const maxStdinBytes = options.maxStdinBytes ?? Number.POSITIVE_INFINITY;
  let proc: ChildProcess;
  let alive = true;
  let endReason: ChildEndReason | undefined;
  let nextId = 0;
  let nextServerId = 0;
  const pending = new Map<number, Pending>();
  // Requests of the child's, by the id the gateway gave the client: the child's own id.
  const serverRequests = new Map<number, JsonRpcId>();
  let holds = 0;
  let answeredOnce = false;
  let killTimer: NodeJS.Timeout | undefined;
  let resolveEnded!: () => void;
  const ended = new Promise<void>((resolve) => (resolveEnded = resolve));
  const group = process.platform !== 'win32';

  try {
    proc = spawn(options.command, [...options.args], {
      cwd: options.cwd,
      env: options.env,
      stdio: ['pipe', 'pipe', 'pipe'],
      detached: group,
      windowsHide: true,
    });
  } catch (error) {
    // Synchronous spawn failures (e.g. an argument with a NUL byte) are reported like asynchronous ones.
    alive = false;
    endReason = 'upstream_spawn_failed';
    queueMicrotask(() => {
      log({ event: 'upstream_exit', session: label, reason: 'upstream_spawn_failed', code: (error as NodeJS.ErrnoException).code ?? 'ERR_SPAWN' });
      options.onEnd('upstream_spawn_failed');
      resolveEnded();
    });
    return inertChild(ended);
  }
  const pid = proc.pid;
  if (pid !== undefined) log({ event: 'upstream_started', session: label, pid });

  function signal(name: NodeJS.Signals): void {
    if (pid === undefined) return;
    try {
      if (group) process.kill(-pid, name);
      else proc.kill(name);
    } catch {
      // Already gone.
    }
  }

  function writeLine(message: unknown): boolean {
    const stdin = proc.stdin;
    if (!alive || !stdin || stdin.destroyed || stdin.writableEnded) return false;
    stdin.write(`${JSON.stringify(message)}\n`);
    return true;
  }

  function end(reason: ChildEndReason, exitCode: number | null, signalName: string | null, code?: string): void {
    alive = false;
    const why = endReason ?? reason;
    endReason = why;
    clearTimeout(killTimer);
    killTimer = undefined;
    // What the child started must not outlive it.
    signal('SIGKILL');
    const sinks = [...pending.values()];
    pending.clear();
    serverRequests.clear();
    for (const entry of sinks) entry.sink?.fail(why);
    log({ event: 'upstream_exit', session: label, ...(pid !== undefined ? { pid } : {}), reason: why, exitCode, signal: signalName, ...(code ? { code } : {}) });
    try {
      options.onEnd(why);
    } finally {
      resolveEnded();
    }
  }

  let finished = false;
  proc.once('exit', (exitCode, signalName) => {
    // Without a pid it never started, and 'error' says why.
    if (finished || pid === undefined) return;
    finished = true;
    end('upstream_exited', exitCode, signalName);
  });
  proc.once('error', (error: NodeJS.ErrnoException) => {
    // On a running child an 'error' is a failed kill, and its 'exit' still follows.
    if (finished || pid !== undefined) return;
    finished = true;
    end('upstream_spawn_failed', null, null, error.code);
  });
  // EPIPE on a child that exited: its 'exit' reports it.
  proc.stdin!.on('error', () => {});

  const stdout = createLineSplitter(options.maxLineBytes, {
    line: onLine,
    oversized: () => {
      endReason ??= 'upstream_line_too_large';
      void stop();
    },
  });
  proc.stdout!.on('data', (chunk: Buffer) => {
    if (alive) stdout.push(chunk);
  });
  proc.stdout!.on('end', () => stdout.end());
  proc.stdout!.on('error', () => {});
  readLoggedLines(proc.stderr!, (line) => log({ event: 'upstream_stderr', session: label, line }));

  function onLine(line: string): void {
    if (line.trim() === '') return;
    let parsed: unknown;
    try {
      parsed = JSON.parse(line);
    } catch {
      log({ event: 'upstream_stdout_not_json', session: label, line: truncate(line) });
      return;
    }
    // A batch from a 2025-03-26 server: each element on its own.
    for (const item of Array.isArray(parsed) ? parsed : [parsed]) route(item, line);
  }

  function route(item: unknown, line: string): void {
    if (typeof item !== 'object' || item === null || Array.isArray(item)) {
      log({ event: 'upstream_stdout_not_json', session: label, line: truncate(line) });
      return;
    }
    const message = item as Record<string, unknown>;
    if (typeof message.method === 'string') {
      const id = message.id;
      if (typeof id === 'string' || typeof id === 'number') {
        fromChildRequest(message as unknown as JsonRpcRequest);
        return;
      }
      fromChildNotification(message as unknown as JsonRpcNotification);
      return;
    }
    const id = message.id;
    const entry = typeof id === 'number' ? pending.get(id) : undefined;
    if (entry === undefined || !('result' in message || 'error' in message)) {
      log({ event: 'upstream_unmatched_response', session: label, line: truncate(line) });
      return;
    }
    pending.delete(id as number);
    if (!answeredOnce) {
      answeredOnce = true;
      options.onAnswered?.();
    }
    entry.sink?.response({ ...message, id: entry.originalId } as JsonRpcResponse);
  }

  function fromChildRequest(request: JsonRpcRequest): void {
    const gatewayId = ++nextServerId;
    serverRequests.set(gatewayId, request.id);
    if (serverRequests.size > MAX_SERVER_REQUESTS) {
      const [oldest, childId] = serverRequests.entries().next().value as [number, JsonRpcId];
      serverRequests.delete(oldest);
      writeLine(jsonRpcError(childId, -32603, 'Internal error: the client did not answer in time'));
    }
    let delivered = false;
    try {
      delivered = options.onMessage({ ...request, id: gatewayId });
    } catch {
      delivered = false;
    }
    if (!delivered && serverRequests.delete(gatewayId)) {
      writeLine(jsonRpcError(request.id, -32603, 'Internal error: no client stream is open to carry this request'));
    }
  }

  function fromChildNotification(notification: JsonRpcNotification): void {
    if (notification.method === 'notifications/progress') {
      const token = notification.params?.progressToken;
      const entry = typeof token === 'number' ? pending.get(token) : undefined;
      if (entry !== undefined && entry.progressToken !== undefined) {
        entry.sink?.message({ ...notification, params: { ...notification.params, progressToken: entry.progressToken } });
        return;
      }
    }
    try {
      options.onMessage(notification);
    } catch {
      // A client stream that fails is the client's loss, never the child's.
    }
  }

  function stop(): Promise<void> {
    if (!alive) return ended;
    alive = false;
    endReason ??= 'upstream_stopped';
    // The MCP stdio way first (stdin closed), then the signals the issue asks for.
    proc.stdin?.end();
    signal('SIGTERM');
    killTimer = setTimeout(() => signal('SIGKILL'), options.stopTimeoutMs);
    return ended;
  }

  return {
    pid,
    get alive() {
      return alive;
    },
    get pending() {
      return pending.size;
    },
    get inputFull() {
      return (proc.stdin?.writableLength ?? 0) > maxStdinBytes;
    },
    request(message, sink) {
      if (!alive) return undefined;
      const childId = ++nextId;
      const meta = message.params?._meta;
      const progressToken = typeof meta === 'object' && meta !== null ? (meta as Record<string, unknown>).progressToken : undefined;
      const entry: Pending = { originalId: message.id, progressToken, sink };
      pending.set(childId, entry);
      // The progress token is the child id too: unique in this child, and it names the request.
      const params = progressToken === undefined ? message.params : { ...message.params, _meta: { ...(meta as object), progressToken: childId } };
      writeLine({ ...message, id: childId, ...(params !== undefined ? { params } : {}) });
      return {
        childId,
        abandon(cancel, reason) {
          if (entry.sink === null) return;
          entry.sink = null;
          if (cancel && pending.has(childId)) {
            writeLine({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: childId, ...(reason ? { reason } : {}) } });
          }
        },
      };
    },
    notify(message) {
      if (message.method === 'notifications/cancelled') {
        const requestId = message.params?.requestId;
        let childId: number | undefined;
        for (const [id, entry] of pending) if (entry.originalId === requestId) childId = id;
        if (childId === undefined) return true; // Nothing in flight by that id: nothing to cancel.
        return writeLine({ ...message, params: { ...message.params, requestId: childId } });
      }
      return writeLine(message);
    },
    answer(message) {
      const id = message.id;
      const childId = typeof id === 'number' ? serverRequests.get(id) : undefined;
      if (childId === undefined) return false;
      serverRequests.delete(id as number);
      return writeLine({ ...message, id: childId });
    },
    hold() {
      holds++;
      proc.stdout?.pause();
      let held = true;
      return () => {
        if (!held) return;
        held = false;
        if (--holds === 0) proc.stdout?.resume();
      };
    },
    stop,
    ended,
  };
}

/** A child that never started: every call fails. */
function inertChild(ended: Promise<void>): StdioChild {
  return {
    pid: undefined,
    alive: false,
    pending: 0,
    inputFull: false,
    request: () => undefined,
    notify: () => false,
    answer: () => false,
    hold: () => () => {},
    stop: () => ended,
    ended,
  };
}

/** Logs a stream line by line, each cut to {@link MAX_LOGGED_LINE}; a line with no end in sight is logged in pieces. */
function readLoggedLines(stream: NodeJS.ReadableStream, write: (line: string) => void): void {
  let partial = '';
  stream.setEncoding('utf8');
  stream.on('data', (chunk: string) => {
    partial += chunk;
    let nl: number;
    while ((nl = partial.indexOf('\n')) !== -1) {
      const line = partial.slice(0, nl).replace(/\r$/, '');
      partial = partial.slice(nl + 1);
      if (line !== '') write(truncate(line));
    }
    if (partial.length > MAX_LOGGED_LINE) {
      write(truncate(partial));
      partial = '';
    }
  });
  stream.on('end', () => {
    if (partial !== '') write(truncate(partial));
  });
  stream.on('error', () => {});
}

function truncate(line: string): string {
  return line.length > MAX_LOGGED_LINE ? `${line.slice(0, MAX_LOGGED_LINE)}…` : line;
}
