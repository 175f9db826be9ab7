/**
 * What a started stdio child is and takes: its options, its requests' sinks, why it ends, what it logs. A leaf
 * module, so that the child (`stdio-child.ts`), its process (`stdio-child-process.ts`) and its JSON-RPC
 * (`child-line-protocol.ts`) share these types without importing each other.
 */
import type { JsonRpcMessage, JsonRpcNotification, JsonRpcRequest, JsonRpcResponse } from '../../../core/wire/jsonrpc.js';

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
  /** The server the child is, behind an endpoint with several (a configuration file's `servers`). */
  server?: string;
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
