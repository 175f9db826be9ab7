import type { ServerResponse } from 'node:http';
import { jsonRpcError, JsonRpcErrorCode } from '../../../core/wire/jsonrpc.js';
import type { BoundSession } from '../../../core/session/session-registry.js';
import type { GuardedRequest, HttpHandlerContext } from '../../../http/http-handler.js';
import { requestSessionId } from '../../../http/request-headers.js';
import { writeJson } from '../../../http/write-response.js';
import type { StdioSession } from './stdio-session.js';
import type { StdioUpstreamState } from './stdio-upstream-state.js';

/**
 * The session a GET or DELETE is about. Both are about a 2025 session: a request naming none (2026-07-28, or
 * sessionless) gets 405; one naming a session it may not use gets 404. Undefined once answered.
 */
export function sessionForGetOrDelete(upstream: StdioUpstreamState, req: GuardedRequest, res: ServerResponse, context: HttpHandlerContext): BoundSession<StdioSession> | undefined {
  if (requestSessionId(req, context.protocolVersion) === undefined) {
    res.setHeader('Allow', 'POST, OPTIONS');
    writeJson(res, 405, jsonRpcError(null, JsonRpcErrorCode.InvalidRequest, `Method not allowed: ${req.method} needs the Mcp-Session-Id of a session started with initialize`));
    return undefined;
  }
  return upstream.namedSession(req, res, context) ?? undefined;
}
