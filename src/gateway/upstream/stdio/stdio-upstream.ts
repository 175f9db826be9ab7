// The stdio upstream, one concept a file (this folder):
// - stdio-upstream.ts: the options and the handler by HTTP method; stdio-upstream-state.ts: what every request shares.
// - serve-post.ts: a POST's checks; sessionless-post.ts: initialize and 2026-07-28 requests (no session named);
//   post-exchange.ts: one request's exchange with the child, JSON or event stream, timeouts, 502/504.
// - get-stream.ts: a session's GET stream; stream-resume.ts: a resume with Last-Event-ID.
// - session-for-get-or-delete.ts: GET and DELETE name a session (405 otherwise); session-id-sealing.ts: sealed ids.
//   A named session that is unknown or another caller's gets 404 from the one session gate (http/session-gate.ts).
// - stdio-session.ts: a session bound to its child; child-message-routing.ts: where the child's own messages go;
//   child-backpressure.ts: a slow client holds the child's output; stdio-answers.ts: the error codes and texts.
// - child-process-pool.ts: the processes and their bounds; stdio-child.ts: starting one;
//   stdio-child-process.ts: its stop and exit; child-line-protocol.ts: the JSON-RPC spoken on its stdin and stdout.
import type { ServerResponse } from 'node:http';
import { jsonRpcError, JsonRpcErrorCode } from '../../../core/wire/jsonrpc.js';
import { httpHandler, type GuardedRequest, type HttpHandlerContext } from '../../../http/http-handler.js';
import { writeJson } from '../../../http/write-response.js';
import type { SessionSealer } from '../../../core/session/session-seal.js';
import type { Upstream, UpstreamHooks } from '../upstream.js';
import { serveGet } from './get-stream.js';
import { servePost } from './serve-post.js';
import { sessionForGetOrDelete } from './session-for-get-or-delete.js';
import type { ChildLogEvent } from './stdio-child.js';
import type { StdioStartOutcomes } from './stdio-start-outcome.js';
import { StdioUpstreamState } from './stdio-upstream-state.js';

export { UPSTREAM_BUSY_JSONRPC_CODE } from './stdio-answers.js';

/**
 * Options of {@link createStdioUpstream}, with the hooks of the upstream contract it reports to (`UpstreamHooks`,
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

/**
 * The stdio upstream: an upstream of the gateway (`Upstream`, `upstream.ts`) reached over the stdio of the
 * processes it starts, with their count.
 */
export interface StdioUpstream extends Upstream {
  readonly transport: 'stdio';
  /** Children running, counting those being stopped. */
  readonly processes: number;
  /** Ends every exchange and stops every child; resolves once all children exited. */
  close(): Promise<void>;
}

/**
 * Makes a stdio MCP server (any program reading newline-delimited JSON-RPC on stdin and answering on stdout)
 * an upstream of the gateway: an `McpHttpHandler` for the request pipeline, which has already
 * authenticated, authorized and (for lists) arranged filtering of what it writes, exactly as for the HTTP
 * upstream proxy.
 *
 * - Processes: one per MCP session. A 2025 client's `initialize` starts one and gets the `Mcp-Session-Id`,
 *   bound to the caller (the project's session registry), so a request naming another caller's session gets
 *   404 like an unknown one. Requests without a session (2026-07-28, stateless) go to one child per caller; a
 *   2025 request without one that is not `initialize` gets 400.
 *   A process never serves anyone but the caller it was started for.
 * - Messages: each client request gets an id unique in its child (and its progress token likewise), so
 *   concurrent requests with equal ids cannot collide; the answer carries the client's id again. The answer
 *   is JSON unless the child sends something about the request first (progress, or a request of its own such
 *   as sampling or elicitation), which turns the answer into an event stream ending with the response. The
 *   child's other messages go to the one POST waiting on it, else to the session's GET stream, else to the
 *   newest waiting POST, connected streams first; a request of the child's that no connected stream can carry
 *   is answered with an error at once.
 *   The client's answers (POSTed responses) go back to the child that asked, with its own id.
 * - Lifecycle: DELETE stops the child (stdin closed and SIGTERM, SIGKILL after `stopTimeoutMs`). A child that
 *   exits fails its requests in flight with 502 (or an error event) and its session then answers 404. A
 *   request with no word from the child for `idleTimeoutMs` gets 504 and the child a `notifications/cancelled`,
 *   as does a request whose client went away.
 * - Bounds: `maxProcesses` and `maxProcessesPerCaller` refuse a new process with 429 and JSON-RPC
 *   {@link UPSTREAM_BUSY_JSONRPC_CODE}; no one's live process is ever stopped to make room. Idle children are
 *   stopped after `processIdleTimeoutMs`.
 *
 * The returned upstream is named (`name`, default `default`) and implements the upstream contract (`Upstream`,
 * `upstream.ts`), as the HTTP upstream (`createUpstreamProxy`) does.
 *
 * @throws ConfigurationError when `command` is missing, `name` is not a name, or an option is out of range.
 */
export function createStdioUpstream(options: StdioUpstreamOptions): StdioUpstream {
  const upstream = new StdioUpstreamState(options);
  const { pool, exchanges, sealing } = upstream;
  const dispatch = (req: GuardedRequest, res: ServerResponse, context: HttpHandlerContext): Promise<void> | void => dispatchByMethod(upstream, req, res, context);
  const handler = httpHandler(sealing ? (req, res, context) => sealing.unseal(req, res, context).then((serve) => (serve ? dispatch(req, res, context) : undefined)) : dispatch);

  // A gateway that dies without shutting down must not leave processes behind.
  const onExit = (): void => void pool.close();
  process.once('exit', onExit);

  let closing: Promise<void> | undefined;
  return {
    ...handler,
    name: upstream.name,
    transport: 'stdio',
    get inFlight() {
      return exchanges.size;
    },
    get processes() {
      return pool.running;
    },
    endStreams(which) {
      for (const exchange of [...exchanges]) {
        if (which === 'all' || exchange.isGet) exchange.end(503, 'Service unavailable: the gateway is shutting down');
      }
    },
    close() {
      closing ??= (async () => {
        process.off('exit', onExit);
        for (const exchange of [...exchanges]) exchange.end(503, 'Service unavailable: the gateway is shutting down');
        await pool.close();
      })();
      return closing;
    },
  };
}

function dispatchByMethod(upstream: StdioUpstreamState, req: GuardedRequest, res: ServerResponse, context: HttpHandlerContext): Promise<void> | void {
  switch (req.method) {
    case 'POST':
      return servePost(upstream, req, res, context);
    case 'GET':
      return serveGet(upstream, req, res, context);
    case 'DELETE':
      return serveDelete(upstream, req, res, context);
    default:
      writeJson(res, 405, jsonRpcError(null, JsonRpcErrorCode.InvalidRequest, 'Method not allowed'));
  }
}

/** DELETE ends the session it names and stops its process. */
function serveDelete(upstream: StdioUpstreamState, req: GuardedRequest, res: ServerResponse, context: HttpHandlerContext): void {
  const session = sessionForGetOrDelete(upstream, req, res, context);
  if (!session) return;
  upstream.pool.end(session.value.sessionId);
  res.writeHead(200, { 'Content-Length': '0' }).end();
}
