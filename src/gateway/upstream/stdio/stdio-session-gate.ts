import type { ServerResponse } from 'node:http';
import { jsonRpcError, requestIdOf } from '../../../core/wire/jsonrpc.js';
import type { BoundSession } from '../../../core/session/session-registry.js';
import type { GuardedRequest, HttpHandlerContext } from '../../../http/http-handler.js';
import { requestSessionId } from '../../../http/request-headers.js';
import { writeJson } from '../../../http/write-response.js';
import { SESSION_NOT_FOUND_JSONRPC_CODE, type SessionRefusal } from '../http/upstream-proxy.js';
import type { StdioSession } from './stdio-session.js';
import type { StdioUpstreamOptions } from './stdio-upstream.js';
import type { StdioUpstreamState } from './stdio-upstream-state.js';

/**
 * The stdio upstream's "unknown session → 404" gate: the session a request names (none under 2026-07-28), or
 * null when it names none; undefined once a session it may not use (unknown, ended, or another caller's) was
 * refused with 404.
 */
export function namedStdioSession(
  upstream: Pick<StdioUpstreamState, 'pool' | 'refuseSession'>,
  req: GuardedRequest,
  res: ServerResponse,
  context: HttpHandlerContext,
): BoundSession<StdioSession> | null | undefined {
  const sessionId = requestSessionId(req, context.protocolVersion);
  if (sessionId === undefined) return null;
  const found = upstream.pool.lookup(sessionId, context.auth);
  if ('session' in found) return found.session;
  upstream.refuseSession(req, res, { reason: found.refused, sessionId });
  return undefined;
}

/** Answers 404 `Session not found` to a request naming a session it may not use, after telling `onSessionRefused`. */
export function refuseStdioSession(onSessionRefused: StdioUpstreamOptions['onSessionRefused'], req: GuardedRequest, res: ServerResponse, refusal: SessionRefusal): void {
  try {
    onSessionRefused?.(req, refusal);
  } catch {
    // Logging must never break serving.
  }
  // One answer for every refusal: whether the session exists, and whose it is, stays unknown to the caller.
  writeJson(res, 404, jsonRpcError(requestIdOf(req.body), SESSION_NOT_FOUND_JSONRPC_CODE, 'Session not found'));
}
