import type { ServerResponse } from 'node:http';
import { UNAVAILABLE_JSONRPC_CODE } from '../../../core/kernel/errors.js';
import { jsonRpcError, JsonRpcErrorCode, requestIdOf, type JsonRpcRequest, type JsonRpcResponse } from '../../../core/wire/jsonrpc.js';
import { acceptsClientResponses, isStatelessRevision } from '../../../core/mcp/protocol-version.js';
import type { GuardedRequest, HttpHandlerContext } from '../../../http/http-handler.js';
import { writeAccepted, writeJson, writePendingIdRefusal } from '../../../http/write-response.js';
import { PostExchange } from './post-exchange.js';
import { sessionForSessionlessPost } from './sessionless-post.js';
import { UPSTREAM_BUSY_JSONRPC_CODE } from '../upstream.js';
import type { StdioUpstreamState } from './stdio-upstream-state.js';

/** `Retry-After` when a child's stdin is full, in seconds: a child catches up in moments or is wedged. */
const STDIN_FULL_RETRY_AFTER_SECONDS = 1;
/** Requests one child may have in flight; past it, 429 (a client that never waits must not fill the gateway). */
const MAX_PENDING_PER_CHILD = 1024;

/**
 * A POST: finds its process (the session it names, see `StdioUpstreamState.namedSession`, else `sessionForSessionlessPost`),
 * refuses what the child cannot take now (stdin full: 503; too many requests in flight: 429; a request id the
 * session already has in progress), hands a client's answer or notification to the child (202), and runs a
 * request as a {@link PostExchange}.
 */
export function servePost(upstream: StdioUpstreamState, req: GuardedRequest, res: ServerResponse, context: HttpHandlerContext): Promise<void> | void {
  const message = req.body!;
  const stateless = isStatelessRevision(context.protocolVersion);
  if (!('method' in message) && !acceptsClientResponses(context.protocolVersion)) {
    // Refused before any process is looked for: there is no request of a child's it could answer.
    writeJson(res, 400, jsonRpcError(null, JsonRpcErrorCode.InvalidRequest, `Bad Request: a ${context.protocolVersion} client sends no JSON-RPC responses (the server sends it no requests)`));
    return;
  }
  const named = upstream.namedSession(req, res, context);
  if (named === undefined) return;
  const session = named ?? sessionForSessionlessPost(upstream, req, res, context, stateless);
  if (session === undefined) return;
  // Without a session named, a 2025 request got here only as the initialize that opened one.
  const opened = named === null && !stateless;
  const slot = session.value;
  if (slot.child.inputFull) {
    // Refused, not queued: waiting for 'drain' would hold the body and the connection instead of the bytes.
    upstream.reportFailure(req, res, 'upstream_busy', 503);
    writeJson(res, 503, jsonRpcError(requestIdOf(message), UNAVAILABLE_JSONRPC_CODE, 'Service unavailable: the upstream MCP server process is not reading its input; retry later'), {
      'Retry-After': String(STDIN_FULL_RETRY_AFTER_SECONDS),
    });
    return;
  }
  if (!('method' in message)) {
    // A client's answer to a request of the child's (sampling, elicitation, roots): back to that child.
    slot.child.answer(message as JsonRpcResponse);
    writeAccepted(res);
    return;
  }
  if (!('id' in message)) {
    slot.child.notify(message);
    writeAccepted(res);
    return;
  }
  if (slot.child.pending >= MAX_PENDING_PER_CHILD) {
    upstream.reportFailure(req, res, 'upstream_busy', 429);
    writeJson(res, 429, jsonRpcError(message.id, UPSTREAM_BUSY_JSONRPC_CODE, 'Too many requests in flight in this session: wait for some answers'), { 'Retry-After': '1' });
    return;
  }
  let releaseId: (() => void) | undefined;
  if (named !== null) {
    // The child never sees a clash (each request gets an id of its own there), but the client could not tell
    // the two answers apart, and MCP forbids reusing an id within a session.
    const claimed = upstream.pendingIds.claim(slot.sessionId, message.id);
    if (typeof claimed !== 'function') {
      writePendingIdRefusal(res, claimed, message.id);
      return;
    }
    releaseId = claimed;
  }
  // Only a stream of a session the client names can be resumed: a resume is a GET naming that session.
  const resumable = named !== null && upstream.replayBufferBytes > 0;
  return new PostExchange(upstream, req, res, context, session, message as JsonRpcRequest, opened, resumable, releaseId).run();
}
