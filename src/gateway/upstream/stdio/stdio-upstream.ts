// The stdio upstream, one concept a file (this folder):
// - stdio-upstream.ts: the handler by HTTP method; stdio-upstream-options.ts: its options;
//   stdio-upstream-state.ts: what every request shares.
// - serve-post.ts: a POST's checks; sessionless-post.ts: initialize and 2026-07-28 requests (no session named);
//   post-exchange.ts: one request's exchange with the child, JSON or event stream, timeouts, 502/504.
// - get-stream.ts: a session's GET stream; stream-resume.ts: a resume with Last-Event-ID.
// - session-for-get-or-delete.ts: GET and DELETE name a session (405 otherwise); session-id-sealing.ts: sealed ids.
//   A named session that is unknown or another caller's gets 404 from the one session gate (http/session-gate.ts).
// - stdio-session.ts: a session bound to its child; child-message-routing.ts: where the child's own messages go;
//   child-backpressure.ts: a slow client holds the child's output; stdio-answers.ts: the error codes and texts.
// - child-process-pool.ts: the processes and their bounds; stdio-child.ts: starting one;
//   stdio-child-contract.ts: what a child is and takes;
//   stdio-child-process.ts: its stop and exit; child-line-protocol.ts: the JSON-RPC spoken on its stdin and stdout.
import type { ServerResponse } from 'node:http';
import { jsonRpcError, JsonRpcErrorCode } from '../../../core/wire/jsonrpc.js';
import { httpHandler, type GuardedRequest, type HttpHandlerContext } from '../../../http/http-handler.js';
import { writeJson } from '../../../http/write-response.js';
import type { Upstream } from '../upstream.js';
import { GATEWAY_SHUTDOWN_MESSAGE } from '../gateway-error.js';
import { serveGet } from './get-stream.js';
import { servePost } from './serve-post.js';
import { sessionForGetOrDelete } from './session-for-get-or-delete.js';
import { StdioUpstreamState } from './stdio-upstream-state.js';
import type { StdioUpstreamOptions } from './stdio-upstream-options.js';

export { UPSTREAM_BUSY_JSONRPC_CODE } from '../upstream.js';
export type { StdioUpstreamOptions } from './stdio-upstream-options.js';

/**
 * The stdio upstream: an upstream of the gateway (`Upstream`, `upstream.ts`) reached over the stdio of the
 * processes it starts, with their count.
 */
export interface StdioUpstream extends Upstream {
  /** Always `stdio`: the gateway reaches it over the stdio of the processes it starts. */
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
        if (which === 'all' || exchange.isGet) exchange.end(503, GATEWAY_SHUTDOWN_MESSAGE);
      }
    },
    close() {
      closing ??= (async () => {
        process.off('exit', onExit);
        for (const exchange of [...exchanges]) exchange.end(503, GATEWAY_SHUTDOWN_MESSAGE);
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
