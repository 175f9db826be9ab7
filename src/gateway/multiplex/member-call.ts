import { randomBytes } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import type { AuthInfo } from '../../core/kernel/auth-info.js';
import { isStatelessRevision } from '../../core/mcp/protocol-version.js';
import type { JsonRpcId, JsonRpcMessage, JsonRpcResponse } from '../../core/wire/jsonrpc.js';
import type { GuardedRequest, HttpHandlerContext } from '../../http/http-handler.js';
import { JSON_MEDIA_TYPE, MCP_POST_ACCEPT } from '../../http/media-type.js';
import { isFlowAnswer } from '../upstream-auth/flow-answer-mark.js';
import { findResponse } from '../upstream/answer-response.js';
import type { Upstream } from '../upstream/upstream.js';
import { CapturedResponse } from './captured-response.js';

/** One message the server set sends one of its servers for itself. */
export interface MemberRequest {
  /** The message, with the server's own names. */
  readonly message: JsonRpcMessage;
  /** The caller it is sent for: the server's credentials and identity headers are those of this caller. */
  readonly auth: AuthInfo;
  /** The protocol revision the client speaks. */
  readonly protocolVersion: string | undefined;
  /** The server's own session id, when the message belongs to one. */
  readonly sessionId?: string;
  /** HTTP method: POST (default) or DELETE (ends `sessionId`). */
  readonly method?: 'POST' | 'DELETE';
  /** Client headers passed on as a client's would be (`accept-language`, `user-agent`, `mcp-param-*`…). */
  readonly headers?: IncomingHttpHeaders;
  /** Ends the exchange: the server sees its client leave. */
  readonly signal: AbortSignal;
  /** Most bytes of the answer read. */
  readonly maxBytes: number;
}

/** What a server answered a {@link MemberRequest}. */
export interface MemberAnswer {
  /** The HTTP status of its answer (the gateway's own 502/504 when the server could not be reached). */
  readonly status: number;
  /** The session id its answer carries (an `initialize` answer's). */
  readonly sessionId: string | undefined;
  /** Its JSON-RPC response to the message, when it gave one. */
  readonly response: JsonRpcResponse | undefined;
  /** Whether the answer was cut off: past `maxBytes`, or the signal ended it. */
  readonly cut: boolean;
  /** The answer's body, as text (empty when cut), made when first read. */
  readonly text: string;
  /** The answer's body, as bytes (empty when cut). */
  readonly bytes: Buffer;
  /** The answer's `Content-Type`. */
  readonly contentType: string | undefined;
  /**
   * Whether the gateway answered in the server's place for this caller (the connect flow of connected accounts): the
   * server was not asked, and the answer is this caller's alone.
   */
  readonly byGateway: boolean;
}

const EMPTY = Buffer.alloc(0);

/** Tells this process's own request ids apart from any other's. */
const OWN_ID_PREFIX = `mcp-oauth-guard-${randomBytes(6).toString('base64url')}-`;
let ownIds = 0;

/**
 * An id for a request the server set sends a server for itself (a list page, `server/discover`): within a client's
 * session with that server, the client's own requests are in flight too, and an id must never be in flight twice
 * in one session (JSON-RPC; the answers would be confused).
 */
export function ownRequestId(): string {
  ownIds = (ownIds + 1) % Number.MAX_SAFE_INTEGER;
  return `${OWN_ID_PREFIX}${ownIds}`;
}

/** A response handed to a member's handler must not be filtered there: the server set's own answer is. */
const unfiltered: HttpHandlerContext['filterResponse'] = (_request, response) => response;

/**
 * Sends `request` to `member` through its own request handler, as a client's request would be, and reads the
 * answer (JSON, or the event stream of a POST, up to the response to the message). Never rejects: a failure reads
 * as the gateway's own error status, as a client would have got.
 *
 * @example
 * const answer = await callMember(notes, { message: { jsonrpc: '2.0', id: 1, method: 'tools/list' }, auth, protocolVersion, signal, maxBytes });
 * if (answer.response && 'result' in answer.response) use(answer.response.result);
 */
export async function callMember(member: Upstream, request: MemberRequest): Promise<MemberAnswer> {
  const method = request.method ?? 'POST';
  const headers: IncomingHttpHeaders = { ...request.headers, accept: MCP_POST_ACCEPT };
  if (method === 'POST') headers['content-type'] = JSON_MEDIA_TYPE;
  if (request.protocolVersion !== undefined) headers['mcp-protocol-version'] = request.protocolVersion;
  // 2026-07-28 servers refuse a request whose Mcp-Method does not mirror its body: the set writes the body, so the header too.
  if (method === 'POST' && 'method' in request.message && isStatelessRevision(request.protocolVersion)) headers['mcp-method'] = request.message.method;
  if (request.sessionId !== undefined) headers['mcp-session-id'] = request.sessionId;
  else delete headers['mcp-session-id'];
  const req = { method, headers, auth: request.auth, ...(method === 'POST' ? { body: request.message } : {}) } as unknown as GuardedRequest;
  const captured = new CapturedResponse(request.maxBytes);
  const stop = (): void => void captured.destroy();
  if (request.signal.aborted) stop();
  else request.signal.addEventListener('abort', stop, { once: true });
  try {
    const context: HttpHandlerContext = { auth: request.auth, signal: request.signal, filterResponse: unfiltered, ...(request.protocolVersion !== undefined ? { protocolVersion: request.protocolVersion } : {}) };
    await member.handle(req, captured.asServerResponse(req), context);
    await captured.done;
  } catch {
    // A handler that throws answered nothing usable.
    captured.destroy();
  } finally {
    request.signal.removeEventListener('abort', stop);
  }
  const id = 'id' in request.message ? request.message.id : undefined;
  const cut = captured.destroyed || captured.tooLarge;
  const bytes = cut ? EMPTY : captured.body();
  const contentType = captured.header('content-type');
  let response: JsonRpcResponse | undefined | null = null;
  let text: string | undefined;
  const textOf = (): string => (text ??= bytes.toString('utf8'));
  return {
    status: captured.statusCode,
    sessionId: captured.header('mcp-session-id'),
    // Parsed when asked: a list whose bytes did not change is reused without parsing it.
    get response() {
      if (response === null) response = cut || id === undefined || id === null ? undefined : findResponse(contentType, textOf(), id);
      return response;
    },
    cut,
    // As text only when read: a list page that did not change is compared as bytes and never decoded.
    get text() {
      return textOf();
    },
    bytes,
    contentType,
    byGateway: isFlowAnswer(captured.asServerResponse()),
  };
}
