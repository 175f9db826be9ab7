/**
 * The options of the stdio upstream, apart from the upstream itself: `stdio-upstream.ts` and the state its
 * requests share (`stdio-upstream-state.ts`) both read them.
 */
import type { SessionSealer } from '../../../core/session/session-seal.js';
import type { UpstreamHooks } from '../upstream.js';
import type { ChildLogEvent } from './stdio-child-contract.js';
import type { StdioStartOutcomes } from './stdio-start-outcome.js';

/**
 * Options of `createStdioUpstream`, with the hooks of the upstream contract it reports to (`UpstreamHooks`,
 * `upstream.ts`) but `onExchangeEnd`: the stdio upstream does not time its exchanges for metrics.
 */
export interface StdioUpstreamOptions extends Pick<UpstreamHooks, 'onUpstreamError' | 'onSessionRefused'> {
  /** The upstream's name behind the gateway's endpoint (see `checkUpstreamName`). Default `default`. */
  name?: string;
  /** Program of the stdio MCP server, e.g. `python3`; looked up on the child's `PATH` unless it has a `/`. */
  command: string;
  /** Its arguments. Default none. */
  args?: readonly string[];
  /** Its working directory. Default: the gateway's. */
  cwd?: string;
  /**
   * The child's whole environment. Default: `PATH`, `HOME` and `LANG` from the gateway's (see
   * `childEnvironment`); nothing else, so none of the gateway's settings or secrets reach it.
   */
  env?: Readonly<Record<string, string>>;
  /** Adds `MCP_CALLER_SUBJECT` and `MCP_CALLER_CLIENT_ID` of the caller the child serves to its environment. Never the token. Default false. */
  identityEnv?: boolean;
  /** Most children running at once; past it, a new session gets 429. Default 32. */
  maxProcesses?: number;
  /** Most children one caller (issuer, subject, client) holds; past it, 429. Default 4. */
  maxProcessesPerCaller?: number;
  /** A child with no request or stream in progress for this long is stopped, in milliseconds. Default 600 000 (10 minutes). */
  processIdleTimeoutMs?: number;
  /**
   * Time a request may wait for the child's next message about it, in milliseconds; then 504 (or the end of
   * its event stream) and the child is told the request is cancelled. Default 300 000, at most 86 400 000 (a day).
   */
  idleTimeoutMs?: number;
  /** Time between SIGTERM and SIGKILL when a child is stopped, in milliseconds. Default 5 000. */
  stopTimeoutMs?: number;
  /** Largest line (one JSON-RPC message) a child may write on stdout, in bytes; a longer one ends the child. Default 4 194 304 (4 MiB). */
  maxLineBytes?: number;
  /**
   * Most bytes written to a child's stdin that it has not read yet, in bytes. Past it the session's next client
   * message gets 503 with `Retry-After` (a child that stops reading must not make the gateway hold what clients
   * send it); the child is not stopped, and the client may retry once it reads again. Default 4 194 304 (4 MiB).
   */
  maxStdinBytes?: number;
  /**
   * Most bytes of event-stream events one session keeps so that a client whose stream broke can resume it
   * with `Last-Event-ID` (2025 revisions; see `createSessionEventStreams`); the oldest are forgotten first.
   * 0 turns resumable streams off: no event ids, and a closed stream cancels its request. Default 1 048 576 (1 MiB).
   */
  replayBufferBytes?: number;
  /**
   * How long, in milliseconds, events are kept for a resume, and how long a request whose client lost its
   * stream keeps running for the client to resume it; then it is cancelled. Default 60 000.
   */
  replayWindowMs?: number;
  /** Clock for idle expiry, in milliseconds. Default `Date.now`. */
  now?: () => number;
  /**
   * Receives the children's log events (started, exited and why, stderr lines, stdout lines that are not
   * JSON), each with the session id. Default: one JSON line each on stderr.
   */
  log?: (event: ChildLogEvent) => void;
  /**
   * Seals the session ids given to clients (`MCP_AUTH_SESSION_SECRET`, see `createSessionSealer`) with the id of
   * this upstream instance: a process lives in the gateway that started it, so only that gateway opens the id, and
   * any other (another replica, or this one after a restart) answers 404 like an unknown session, and the client
   * starts a new one. Default none: the session ids are the gateway's own, known to this process only.
   */
  sessionSealer?: SessionSealer;
  /** Told how each session process's start went (it answered, or ended before it did), for readiness. */
  stdioStarts?: Pick<StdioStartOutcomes, 'watch'>;
}
