import type { ServerResponse } from 'node:http';
import { jsonRpcError, JsonRpcErrorCode, requestIdOf } from '../../../core/wire/jsonrpc.js';
import type { BoundSession } from '../../../core/session/session-registry.js';
import type { GuardedRequest, HttpHandlerContext } from '../../../http/http-handler.js';
import { writeJson } from '../../../http/write-response.js';
import type { ChildRefusal } from './child-process-pool.js';
import { UPSTREAM_BUSY_JSONRPC_CODE } from '../upstream.js';
import type { StdioSession } from './stdio-session.js';
import type { StdioUpstreamState } from './stdio-upstream-state.js';

/**
 * The process a POST naming no session goes to. Under 2025 revisions, only an `initialize` may name none: it
 * opens a new session with a process of its own (the sealed id chosen for it, if any); anything else gets 400,
 * as the caller's sessionless process would serve it uninitialized (2025-11-25 streamable-http, "Session
 * Management"). A stateless (2026-07-28) request goes to the caller's sessionless process, started on first use.
 * Undefined once answered: 400 for a token naming nobody, 429 past a bound on processes.
 */
export function sessionForSessionlessPost(
  upstream: StdioUpstreamState,
  req: GuardedRequest,
  res: ServerResponse,
  context: HttpHandlerContext,
  stateless: boolean,
): BoundSession<StdioSession> | undefined {
  const message = req.body!;
  const isInitialize = !stateless && 'method' in message && message.method === 'initialize' && 'id' in message;
  if (!stateless && !isInitialize) {
    writeJson(res, 400, jsonRpcError(requestIdOf(message), JsonRpcErrorCode.InvalidRequest, 'Bad Request: Mcp-Session-Id header is required (start a session with initialize)'));
    return undefined;
  }
  const found = isInitialize ? upstream.pool.open(context.auth, upstream.sealing?.sessionIdFor(req)) : upstream.pool.forCaller(context.auth);
  if ('refused' in found) {
    refuseChild(upstream, req, res, found.refused);
    return undefined;
  }
  return found.session;
}

/** Answers a request for which no process could be had: 400 when the token names nobody, else 429. */
function refuseChild(upstream: StdioUpstreamState, req: GuardedRequest, res: ServerResponse, refusal: ChildRefusal): void {
  const id = requestIdOf(req.body);
  if (refusal === 'no_identity') {
    writeJson(res, 400, jsonRpcError(id, JsonRpcErrorCode.InvalidRequest, 'Bad Request: a stdio upstream process is started for one caller, and this token names none (no sub, no client_id)'));
    return;
  }
  upstream.reportFailure(req, res, 'upstream_busy', 429);
  const text =
    refusal === 'caller_process_limit'
      ? 'Too many upstream sessions for this caller: end one (DELETE) or retry after one has been idle long enough to be stopped'
      : 'Too many upstream sessions on this gateway: retry later';
  writeJson(res, 429, jsonRpcError(id, UPSTREAM_BUSY_JSONRPC_CODE, text), { 'Retry-After': '5' });
}
