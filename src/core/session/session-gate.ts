import type { AuthInfo } from '../kernel/auth-info.js';
import { JsonRpcErrorCode, jsonRpcError, type JsonRpcErrorResponse, type JsonRpcId } from '../wire/jsonrpc.js';
import type { BoundSession, SessionRefusalReason, SessionRegistry } from './session-registry.js';
import type { SealedSessionRefusalReason } from './session-seal.js';

/**
 * JSON-RPC code of the 404 `Session not found` answer, as the MCP SDKs answer it (an implementation-defined
 * server error, JSON-RPC 2.0 §5.1).
 */
export const SESSION_NOT_FOUND_JSONRPC_CODE = JsonRpcErrorCode.SessionNotFound;

/** A request refused because of the session it named. Never carries the token. */
export interface SessionRefusal {
  /** Why, for logs; the caller is told none of it (see `sessionNotFoundAnswer`). */
  reason: SealedSessionRefusalReason;
  /** The `Mcp-Session-Id` the request carried. */
  sessionId: string;
}

/** The answer to a request refused because of the session it named. */
export interface SessionNotFoundAnswer {
  readonly status: 404;
  readonly body: JsonRpcErrorResponse;
}

/**
 * The one answer to every session refusal, whatever its reason: 404 with JSON-RPC -32001 `Session not found`
 * and the request's id. A session id is never authentication (MCP security best practices, "Session
 * hijacking"): one answer for an unknown, expired, foreign or unopenable session keeps another user's session
 * from being revealed, and a conforming client starts a new session on 404 (MCP `basic/transports`, "Session
 * Management").
 *
 * @param id - The refused request's JSON-RPC id; `null` for a notification, a response or no body.
 * @example
 * sessionNotFoundAnswer(7);
 * // { status: 404, body: { jsonrpc: '2.0', id: 7, error: { code: -32001, message: 'Session not found' } } }
 */
export function sessionNotFoundAnswer(id: JsonRpcId | null): SessionNotFoundAnswer {
  return { status: 404, body: jsonRpcError(id, SESSION_NOT_FOUND_JSONRPC_CODE, 'Session not found') };
}

/**
 * The session gate's decision for a request naming `sessionId`: the session, when it exists and belongs to the
 * caller of `auth` (issuer, subject and client), else the refusal to answer with {@link sessionNotFoundAnswer}.
 * Counts as use of the session. Every adapter that keeps sessions in a {@link SessionRegistry} asks this.
 *
 * @example
 * const passed = checkNamedSession(registry, sessionId, auth);
 * if ('reason' in passed) return refuse(passed); // 404, whatever the reason
 * passed.acquire();
 */
export function checkNamedSession<T>(registry: Pick<SessionRegistry<T>, 'lookup'>, sessionId: string, auth: AuthInfo): BoundSession<T> | SessionRefusal {
  const found = registry.lookup(sessionId, auth);
  return 'session' in found ? found.session : { reason: found.refused, sessionId };
}

export type { SessionRefusalReason, SealedSessionRefusalReason };
