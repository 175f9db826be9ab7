import type { Agent as HttpAgent, IncomingHttpHeaders, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import type { Dispatcher } from 'undici';
import { ConfigurationError } from '../../../core/kernel/errors.js';
import { jsonRpcError, requestIdOf, type JsonRpcId } from '../../../core/wire/jsonrpc.js';
import { printableOAuthErrorCode } from '../../../http/oauth-error-code.js';
import { EVENT_STREAM_MEDIA_TYPE, mediaType } from '../../../http/media-type.js';
import { createPendingRequestIds } from '../../../core/mcp/pending-request-ids.js';
import { checkDuration, checkInteger, parseUrlSetting } from '../../../core/kernel/settings.js';
import { CREDENTIAL_HEADERS } from '../../../http/credential-headers.js';
import { connectionHeaderNames, HOP_BY_HOP_HEADERS } from '../../../http/hop-by-hop-headers.js';
import { httpHandler, type GuardedRequest, type HttpHandlerContext, type McpHttpHandler } from '../../../http/http-handler.js';
import { requestSessionId } from '../../../http/request-headers.js';
import { NO_PROXY_BUFFERING, writePendingIdRefusal } from '../../../http/write-response.js';
import { createSessionRegistry, type BoundSession } from '../../../core/session/session-registry.js';
import type { OpenedSession, SealedSessionRefusalReason, SessionSealer } from '../../../core/session/session-seal.js';
import { AuthorizationServerUnavailableError } from '../../../core/kernel/errors.js';
import { callerIdentity } from '../caller-identity.js';
import type { UpstreamCredentials } from '../../upstream-auth/upstream-credentials.js';
import { UpstreamTokenRefusedError } from '../../upstream-auth/upstream-token-client.js';
import { endUpstreamSpan, startUpstreamSpan } from '../upstream-span.js';
import { createUpstreamDispatcher, isTimeout, mayRetry, nodeErrorCode, nodeStyleHeaders } from '../upstream-dispatcher.js';

export type { SessionRefusalReason } from '../../../core/session/session-registry.js';
export type { SealedSessionRefusalReason } from '../../../core/session/session-seal.js';

/**
 * Names of request headers that carry the caller's verified identity to the upstream server. Each is
 * set from the verified token, never from the client: a client-sent header of the same name is dropped
 * like every header outside the allow-list. All are off (unset) by default.
 *
 * Values are exact: plain visible ASCII (0x21–0x7E, inner spaces allowed) as it is, any other value as
 * `=?base64?<base64 of its UTF-8>?=` (MCP 2026-07-28's encoding for mirrored headers; a plain value of that
 * shape is encoded too), so distinct identities never read the same. Decode with `decodeMirroredHeaderValue`
 * (`mcp-oauth-guard/core`).
 */
export interface IdentityHeaderNames {
  /** Header for the token's subject (`sub`), e.g. `X-MCP-Subject`. */
  subject?: string;
  /** Header for the OAuth client id, e.g. `X-MCP-Client-Id`. */
  clientId?: string;
  /**
   * Header for the granted scopes, space-separated, e.g. `X-MCP-Scopes`: the scopes the policy decided on, which
   * are the token's valid scope tokens (RFC 6749 §3.3); an entry with a space, a non-ASCII character, `"` or `\`
   * is no scope and is left out of both.
   */
  scopes?: string;
  /**
   * Header for the token's issuer (`iss`), e.g. `X-MCP-Issuer`. With several trusted issuers a subject is unique
   * only within its issuer: an upstream that keys users must use issuer and subject together.
   */
  issuer?: string;
}

/** Options of {@link createUpstreamProxy}. */
export interface UpstreamProxyOptions {
  /** Absolute http(s) URL of the upstream MCP endpoint, e.g. `http://127.0.0.1:3001/mcp`. Every request goes to it. */
  upstream: string;
  /** Time allowed to resolve and connect (TCP and TLS) to the upstream, in milliseconds; then 504. Default 10 000. */
  connectTimeoutMs?: number;
  /**
   * Time allowed with no bytes from the upstream, in milliseconds: while waiting for the response
   * headers (then 504) and between chunks of a streamed body (then the stream is ended). Default 300 000, at
   * most 86 400 000 (a day), as `MCP_AUTH_UPSTREAM_IDLE_TIMEOUT_MS`.
   */
  idleTimeoutMs?: number;
  /**
   * Connection pool for upstream requests: an undici (7 or later) `Agent`, `Pool` or other `Dispatcher`, e.g.
   * `new Agent({ connect: { ca } })` for a private CA or a client certificate. Its own header and body timeouts are
   * replaced by `idleTimeoutMs` on each request; its connect timeout must bound its connection attempts (undici's
   * default is 10 s), as `connectTimeoutMs` ends the exchange but cannot stop an attempt the pool has started.
   * Default: a keep-alive pool owned by the proxy, connecting within `connectTimeoutMs` and destroyed by `close()`; a
   * given dispatcher is left open.
   */
  dispatcher?: Dispatcher;
  /**
   * @deprecated Give {@link UpstreamProxyOptions.dispatcher} instead. An `https.Agent`'s TLS options (`ca`, `cert`,
   * `key`, `pfx`, `passphrase`, `rejectUnauthorized`, `servername`, `minVersion`, …) are used for the upstream
   * connections; its other behaviour (a custom `createConnection`, socket limits) is not. Ignored with `dispatcher`.
   */
  agent?: HttpAgent;
  /** Identity headers to add to upstream requests. Default: none. */
  identityHeaders?: IdentityHeaderNames;
  /**
   * The gateway's own credentials for a protected upstream (`MCP_AUTH_UPSTREAM_AUTH`), sent as `Authorization`.
   * On an upstream 401 the request is sent once more with renewed credentials, when there are any. Default none:
   * no `Authorization` header, and an upstream 401 is a 502.
   */
  credentials?: UpstreamCredentials;
  /**
   * Largest non-streaming (`text/event-stream` excluded) upstream response body, in bytes. A larger declared
   * `Content-Length` gets 502; a body that grows past it is cut off. Default 67 108 864 (64 MiB).
   */
  maxResponseBytes?: number;
  /**
   * Most upstream sessions remembered (each bound to its caller, see {@link createUpstreamProxy}); when a new
   * one is issued at the limit, the least recently used is forgotten (preferring one with nothing in
   * progress), and its caller's next request gets 404 and starts a new session. Default 10 000.
   */
  maxSessions?: number;
  /**
   * Most upstream sessions one caller (issuer, subject, client) holds; one more forgets that caller's own
   * least recently used session, so one caller cannot push out everyone else's. Default 16.
   */
  maxSessionsPerCaller?: number;
  /**
   * A session with no request or stream in progress and no use for this long is forgotten, in milliseconds;
   * its caller's next request gets 404 and starts a new session. An open GET stream keeps the session in
   * use. Default 3 600 000 (1 hour).
   */
  sessionIdleTimeoutMs?: number;
  /** Clock for session idle expiry, in milliseconds, e.g. a fake one in tests. Default `Date.now`. */
  now?: () => number;
  /**
   * Seals the session ids given to clients (`MCP_AUTH_SESSION_SECRET`, see `createSessionSealer`), so that any
   * gateway with the same keys serves any session: the client gets a sealed id carrying the upstream's id and its
   * caller, which each request's id is opened to. Nothing is remembered per session, so `maxSessions`,
   * `maxSessionsPerCaller` and `sessionIdleTimeoutMs` do not apply; the upstream ends its own sessions. A request
   * whose id does not open, or opens for another caller, gets the same 404 as an unknown session and is not
   * forwarded. Default none: the upstream's session ids pass through, bound to their callers in this process.
   */
  sessionSealer?: SessionSealer;
  /**
   * Called when the upstream exchange fails (before or after the response started), for logs. Never given
   * upstream error text beyond Node's error code.
   */
  onUpstreamError?: (req: GuardedRequest, failure: UpstreamFailure) => void;
  /** Called when a request naming a session is refused with 404, for logs. Errors it throws are ignored. */
  onSessionRefused?: (req: GuardedRequest, refusal: SessionRefusal) => void;
  /**
   * Called when an upstream exchange ends, whatever the outcome, for metrics. Called on the request's path: keep
   * it cheap. Errors it throws are ignored. Default none.
   */
  onExchangeEnd?: (req: GuardedRequest, exchange: UpstreamExchange) => void;
}

/** One upstream exchange, as reported to {@link UpstreamProxyOptions.onExchangeEnd}. */
export interface UpstreamExchange {
  /** HTTP method sent upstream: POST, GET (a stream) or DELETE. */
  httpMethod: string;
  /** From sending the request to the end of the answer (of the stream, for event streams), in milliseconds. */
  durationMs: number;
  /** The upstream's HTTP status, when it answered. */
  status?: number;
  /**
   * `complete`: the upstream's answer was passed on whole; `client_closed`: the client went away first; else why
   * the exchange failed.
   */
  outcome: 'complete' | 'client_closed' | UpstreamFailureReason;
}

/** A request refused because of the session it named, as reported to {@link UpstreamProxyOptions.onSessionRefused}. */
export interface SessionRefusal {
  reason: SealedSessionRefusalReason;
  /** The `Mcp-Session-Id` the request carried. */
  sessionId: string;
}

/** Why an upstream exchange failed; a stable code for logs. */
export type UpstreamFailureReason =
  | 'upstream_unreachable'
  | 'upstream_connect_timeout'
  | 'upstream_timeout'
  | 'upstream_idle_timeout'
  | 'upstream_reset'
  | 'upstream_auth'
  // The upstream's authorization server refused the gateway a token (403), or could not be reached (503).
  | 'upstream_credentials_refused'
  | 'upstream_credentials_unavailable'
  | 'upstream_too_large'
  | 'upstream_session_conflict'
  // A new session's id could not be sealed (MCP_AUTH_SESSION_SECRET).
  | 'session_seal_failed'
  | 'upstream_unfilterable'
  | 'gateway_shutdown'
  // A stdio upstream's process: exited, could not be started, wrote an oversized line, was stopped, or a
  // bound on processes refused a new one (429).
  | 'upstream_exited'
  | 'upstream_spawn_failed'
  | 'upstream_line_too_large'
  | 'upstream_stopped'
  | 'upstream_busy';

/** A failed upstream exchange, as reported to {@link UpstreamProxyOptions.onUpstreamError}. */
export interface UpstreamFailure {
  reason: UpstreamFailureReason;
  /** HTTP status sent to the client, or undefined when the response had already started. */
  status?: number;
  /** Node's error code (e.g. `ECONNREFUSED`), when there was one. */
  code?: string;
}

/** The proxy handler, with what a graceful shutdown needs. */
export interface UpstreamProxy extends McpHttpHandler {
  /** Upstream exchanges in progress. */
  readonly inFlight: number;
  /** Upstream sessions remembered (bound to their callers), for the sessions gauge; absent when not tracked. */
  readonly sessions?: number;
  /**
   * Ends exchanges in progress: `'get'` ends only standalone GET streams (notification channels, which
   * never finish by themselves), `'all'` ends everything. Event streams are ended cleanly (the client may
   * resume with `Last-Event-ID`); other bodies are cut off.
   */
  endStreams(which: 'get' | 'all'): void;
  /** Ends everything and releases pooled upstream connections. */
  close(): void;
}

/** JSON-RPC code of the 502 and 504 bodies: the standard "Internal error" (JSON-RPC 2.0 §5.1), as the fault is server-side. */
export const GATEWAY_JSONRPC_CODE = -32603;

/** JSON-RPC code of the 404 `Session not found` body, as the MCP SDKs answer it. */
export const SESSION_NOT_FOUND_JSONRPC_CODE = -32001;

/** Default {@link UpstreamProxyOptions.connectTimeoutMs}, in milliseconds. */
export const DEFAULT_UPSTREAM_CONNECT_TIMEOUT_MS = 10_000;
/** Default {@link UpstreamProxyOptions.idleTimeoutMs}, in milliseconds (a stdio upstream's too). */
export const DEFAULT_UPSTREAM_IDLE_TIMEOUT_MS = 300_000;
/** Longest {@link UpstreamProxyOptions.idleTimeoutMs} (a stdio upstream's too), in milliseconds: a day. */
export const MAX_UPSTREAM_IDLE_TIMEOUT_MS = 86_400_000;
const DEFAULT_MAX_RESPONSE_BYTES = 64 * 1_048_576;
/** Default {@link UpstreamProxyOptions.maxSessions}. */
export const DEFAULT_MAX_SESSIONS = 10_000;
/** Default {@link UpstreamProxyOptions.maxSessionsPerCaller}. */
export const DEFAULT_MAX_SESSIONS_PER_CALLER = 16;
/** Default {@link UpstreamProxyOptions.sessionIdleTimeoutMs}, in milliseconds. */
export const DEFAULT_SESSION_IDLE_TIMEOUT_MS = 3_600_000;

/**
 * Request headers forwarded to the upstream, by lower-case name; `mcp-param-*` too. Everything else is
 * dropped: the credentials ({@link CREDENTIAL_HEADERS}; MCP forbids token passthrough), hop-by-hop headers, and
 * `Accept-Encoding` (so the upstream answers uncompressed and list results can be filtered).
 */
const FORWARDED_REQUEST_HEADERS = new Set([
  'accept',
  'accept-language',
  'content-type',
  'user-agent',
  'mcp-session-id',
  'mcp-protocol-version',
  'last-event-id',
  'mcp-method',
  'mcp-name',
]);

/**
 * Response headers never passed to the client: hop-by-hop (RFC 9110 §7.6.1), `Set-Cookie` (the gateway
 * drops cookies on the way in, so they could never come back; sessions use `Mcp-Session-Id`), CORS (the
 * guard owns it) and `WWW-Authenticate` (the upstream's challenges would send the client to the wrong
 * authorization server).
 */
const DROPPED_RESPONSE_HEADERS = new Set([...HOP_BY_HOP_HEADERS, 'proxy-authenticate', 'proxy-authorization', 'set-cookie', 'www-authenticate']);

// Names an identity header may not take: the client's credentials (never forwarded) and the framing of the request.
const RESERVED_IDENTITY_NAMES = new Set([...CREDENTIAL_HEADERS, ...HOP_BY_HOP_HEADERS, 'host', 'content-length', 'expect', 'forwarded']);

const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/** Whether `name` is a valid header field name (an RFC 9110 §5.1 token). */
export function isHeaderName(name: string): boolean {
  return HEADER_NAME.test(name);
}

interface Failure {
  reason: UpstreamFailureReason;
  /** Status for the client when nothing was sent yet. */
  status?: 403 | 502 | 503 | 504;
  message?: string;
  code?: string;
  /** `Retry-After` for the client, in seconds. */
  retryAfter?: string;
}

interface Exchange {
  readonly isGet: boolean;
  /** Ends the exchange: cleanly for event streams, by cutting the connection otherwise. */
  end(): void;
  /** Neighbours in {@link ExchangeList}; null when not in it. */
  prev: Exchange | null;
  next: Exchange | null;
}

/**
 * The exchanges in progress, as an intrusive doubly-linked list. Not a `Set`: adding and deleting one
 * short-lived entry per request in a long-lived `Set` measurably kept whole exchanges (request, response,
 * upstream request and answer) alive through young-generation GCs, so they were promoted and collected
 * by full GCs: about 7 KB promoted per request, and 50 µs more CPU per request in V8's GC threads.
 */
class ExchangeList {
  private head: Exchange | null = null;
  size = 0;

  add(exchange: Exchange): void {
    exchange.prev = null;
    exchange.next = this.head;
    if (this.head) this.head.prev = exchange;
    this.head = exchange;
    this.size++;
  }

  delete(exchange: Exchange): void {
    if (exchange.prev) exchange.prev.next = exchange.next;
    else if (this.head === exchange) this.head = exchange.next;
    else return; // not in the list
    if (exchange.next) exchange.next.prev = exchange.prev;
    exchange.prev = exchange.next = null;
    this.size--;
  }

  /** A copy, so that ending an exchange while iterating is safe. */
  toArray(): Exchange[] {
    const out: Exchange[] = [];
    for (let e = this.head; e; e = e.next) out.push(e);
    return out;
  }
}

/** Where an attempt's answer goes once the proxy has written the head: {@link Attempt.deliver}. */
interface AnswerSink {
  data(chunk: Buffer): void;
  end(): void;
  fail(error: Error & { code?: string }): void;
}

/**
 * One request sent upstream for an exchange. The body's events are held until the proxy is ready for them
 * ({@link Attempt.deliver}): with sealed sessions the head waits while the session id is sealed, the pool paused.
 */
class Attempt {
  /** undici's handle on the request, once it is on a connection. */
  controller: Dispatcher.DispatchController | undefined;
  /** Whether the exchange ended before the request reached a connection. */
  aborted = false;
  /** Whether the upstream's answer (a final status) started. */
  started = false;
  /** A failure of the answer before it was delivered. */
  failure: (Error & { code?: string }) | undefined;
  private sink: AnswerSink | undefined;
  private held: Buffer[] = [];
  private ended = false;

  data(chunk: Buffer): void {
    if (this.sink) this.sink.data(chunk);
    else this.held.push(chunk);
  }

  end(): void {
    if (this.sink) this.sink.end();
    else this.ended = true;
  }

  fail(error: Error & { code?: string }): void {
    if (this.sink) this.sink.fail(error);
    else this.failure ??= error;
  }

  /** Hands the answer to `sink`, what arrived so far first. */
  deliver(sink: AnswerSink): void {
    this.sink = sink;
    const held = this.held;
    this.held = [];
    for (const chunk of held) sink.data(chunk);
    if (this.failure) sink.fail(this.failure);
    else if (this.ended) sink.end();
  }

  /** Stops the request, wherever it is. */
  abort(): void {
    this.aborted = true;
    this.controller?.abort(new Error('exchange ended'));
  }
}


/**
 * Makes the guard a gateway: a {@link McpHttpHandler} that forwards each authorized request (POST, GET,
 * DELETE) to an upstream MCP server over Streamable HTTP and streams the answer back, Server-Sent Events
 * included, with backpressure both ways.
 *
 * - Request headers: an allow-list (`Content-Type`, `Accept`, `Accept-Language`, `User-Agent`,
 *   `Mcp-Session-Id`, `MCP-Protocol-Version`, `Last-Event-ID`, `Mcp-Method`, `Mcp-Name`, `Mcp-Param-*`);
 *   the client's `Authorization` and cookies never reach the upstream (MCP security best practices,
 *   "token passthrough"). The POST body is the message the guard parsed, re-serialized. The query string
 *   is not forwarded.
 * - Response headers: passed through except hop-by-hop, `Set-Cookie`, `Access-Control-*` and
 *   `WWW-Authenticate`.
 * - Failures: upstream unreachable → 502; no connection within `connectTimeoutMs` or no response headers
 *   within `idleTimeoutMs` → 504; upstream answering 401 or 407 (it wants credentials the gateway does not
 *   have) → 502. Bodies are JSON-RPC errors with {@link GATEWAY_JSONRPC_CODE} and the request's id; they
 *   never carry upstream error text. Once the response has started, a failure or idle timeout ends an event
 *   stream cleanly and cuts any other body.
 * - The client going away aborts the upstream request, and the upstream going away ends the client's answer.
 * - Sessions: a session id is never authentication (MCP security best practices, "Session hijacking"). When
 *   an upstream answer carries an `Mcp-Session-Id` the gateway has not seen (the `initialize` answer), the
 *   session is bound to the caller: the token's issuer, subject and client. A request naming a session that
 *   is another caller's, unknown (never issued, forgotten after `sessionIdleTimeoutMs` or past `maxSessions`,
 *   or issued before a restart), or named by a token with neither subject nor client id, gets 404 with the
 *   JSON-RPC error -32001 `Session not found` and is not forwarded; the same answer in every case, so the
 *   existence of another user's session is not revealed, and a conforming client starts a new session. A
 *   successful DELETE, or an upstream 404, forgets the session.
 * - Request ids: a POST whose JSON-RPC id is the id of a request of the same session still in progress (MCP
 *   forbids reusing one) gets 400 with JSON-RPC -32600 and is not forwarded; a session with 1 024 requests in
 *   progress gets 429 for the next one (see `createPendingRequestIds`). With sealed session ids this holds per
 *   gateway process.
 * - Resumed streams: a GET with `Last-Event-ID` may replay the answer to an earlier list request or
 *   `resources/read`; every answer in it goes through the caller's `filterResponse`, which recognises list and
 *   read answers by the shape of their result, whatever id they carry (fail closed).
 *
 * @throws ConfigurationError when `upstream` is not an absolute http(s) URL or an option is out of range.
 */
export function createUpstreamProxy(options: UpstreamProxyOptions): UpstreamProxy {
  const upstream = parseUpstreamUrl(options?.upstream);
  const connectTimeoutMs = checkDuration(options.connectTimeoutMs, 'connectTimeoutMs', DEFAULT_UPSTREAM_CONNECT_TIMEOUT_MS);
  const idleTimeoutMs = checkInteger(options.idleTimeoutMs, 'idleTimeoutMs', DEFAULT_UPSTREAM_IDLE_TIMEOUT_MS, { max: MAX_UPSTREAM_IDLE_TIMEOUT_MS });
  const maxResponseBytes = checkInteger(options.maxResponseBytes, 'maxResponseBytes', DEFAULT_MAX_RESPONSE_BYTES);
  const identity = checkIdentityHeaders(options.identityHeaders, 'identityHeaders');
  const sessions = createSessionRegistry({
    maxSessions: checkInteger(options.maxSessions, 'maxSessions', DEFAULT_MAX_SESSIONS),
    maxSessionsPerCaller: checkInteger(options.maxSessionsPerCaller, 'maxSessionsPerCaller', DEFAULT_MAX_SESSIONS_PER_CALLER),
    idleTimeoutMs: checkDuration(options.sessionIdleTimeoutMs, 'sessionIdleTimeoutMs', DEFAULT_SESSION_IDLE_TIMEOUT_MS),
    ...(options.now ? { now: options.now } : {}),
  });
  // Pooled connections: an MCP session makes many short POSTs, and reconnecting for each costs a round trip.
  const ownDispatcher = options.dispatcher === undefined;
  const dispatcher = options.dispatcher ?? createUpstreamDispatcher(connectTimeoutMs, options.agent);
  const origin = upstream.origin;
  const path = `${upstream.pathname}${upstream.search}`;
  const exchanges = new ExchangeList();
  // Set by close(): a request that arrives afterwards (a keep-alive client during shutdown) gets 503, not a pool error.
  let closed = false;
  const onUpstreamError = options.onUpstreamError;
  const onSessionRefused = options.onSessionRefused;
  const onExchangeEnd = options.onExchangeEnd;
  const credentials = options.credentials;
  const sealer = options.sessionSealer;
  // Ids of the requests each session has in progress; with sealed ids, by the upstream's session id.
  const pendingIds = createPendingRequestIds();

  /** Answers a refused session id with 404 and logs why. */
  function refuseSession(req: GuardedRequest, res: ServerResponse, refusal: SessionRefusal): void {
    try {
      onSessionRefused?.(req, refusal);
    } catch {
      // Logging must never break serving.
    }
    // One answer for every refusal: whether the session exists, and whose it is, stays unknown to the caller.
    writeJsonRpcError(res, 404, requestIdOf(req.body), SESSION_NOT_FOUND_JSONRPC_CODE, 'Session not found');
  }

  /**
   * Checks the session a request names. Returns the caller's session, `null` when the request names none,
   * or `undefined` after answering 404 (the request must not be forwarded).
   */
  function checkSession(req: GuardedRequest, res: ServerResponse, context: HttpHandlerContext): BoundSession | null | undefined {
    const sessionId = requestSessionId(req, context.protocolVersion);
    if (sessionId === undefined) return null;
    const found = sessions.lookup(sessionId, context.auth);
    if ('session' in found) return found.session;
    refuseSession(req, res, { reason: found.refused, sessionId });
    return undefined;
  }

  function forward(req: GuardedRequest, res: ServerResponse, context: HttpHandlerContext): Promise<void> {
    // After close() (a keep-alive client during shutdown): 503 before any session is looked up or opened, since
    // close() forgot them all and a 404 would send the client to start a new one here.
    if (closed) {
      onUpstreamError?.(req, { reason: 'gateway_shutdown', status: 503 });
      writeGatewayError(res, 503, requestIdOf(req.body), 'Service unavailable: the gateway is shutting down');
      return Promise.resolve();
    }
    if (sealer) return forwardSealed(req, res, context, sealer);
    const session = checkSession(req, res, context);
    if (session === undefined) return Promise.resolve();
    return exchange(req, res, context, session, undefined);
  }

  /** With sealed session ids: the id a request names is opened, not looked up, and forwarded as the upstream's. */
  async function forwardSealed(req: GuardedRequest, res: ServerResponse, context: HttpHandlerContext, sessionSealer: SessionSealer): Promise<void> {
    const sessionId = requestSessionId(req, context.protocolVersion);
    if (sessionId === undefined) return exchange(req, res, context, null, undefined);
    const opened = await sessionSealer.open(sessionId, context.auth);
    if ('refused' in opened) {
      refuseSession(req, res, { reason: opened.refused, sessionId });
      return;
    }
    // The client left while the id was being opened: nothing to forward for it.
    if (context.signal.aborted) return;
    return exchange(req, res, context, null, { sealed: sessionId, session: opened.session });
  }

  function exchange(req: GuardedRequest, res: ServerResponse, context: HttpHandlerContext, session: BoundSession | null, sealed: SealedSessionInUse | undefined): Promise<void> {
    // The upstream's own id for a sealed session; none when the request names no session (requestSessionId): an
    // id sent anyway under a stateless revision is ignored, not forwarded.
    const sessionId = sealed ? sealed.session.upstreamSessionId : session === null ? undefined : session.id;
    let releaseId: (() => void) | undefined;
    const message = req.body;
    if (sessionId !== undefined && req.method === 'POST' && message !== undefined && 'id' in message && 'method' in message) {
      const claimed = pendingIds.claim(sessionId, message.id);
      if (typeof claimed !== 'function') {
        writePendingIdRefusal(res, claimed, message.id);
        return Promise.resolve();
      }
      releaseId = claimed;
    }
    return new Promise<void>((resolve) => {
      const method = req.method ?? 'POST';
      const headers = forwardedHeaders(req.headers, identity, context, sessionId, method === 'POST');
      // The same object, under a name onResponse does not shadow: credentials are set on it.
      const requestHeaders = headers;
      let body: Buffer | undefined;
      if (method === 'POST') {
        body = Buffer.from(JSON.stringify(req.body));
        headers['content-type'] = 'application/json';
        headers['content-length'] = body.length;
      }
      const id = requestIdOf(req.body);
      // Both only when someone listens: no clock read and no span per request otherwise.
      const startedAt = onExchangeEnd ? performance.now() : 0;
      const span = startUpstreamSpan(upstream, method, req.body, headers);
      let settled = false;
      let isEventStream = false;
      // The attempt in progress (a retry or a renewed token starts another); undefined before the first.
      let attempt: Attempt | undefined;
      // The upstream's status, once its answer started; `complete` once all of it arrived.
      let upstreamStatus: number | undefined;
      let complete = false;
      let connectTimer: NodeJS.Timeout | undefined;
      let idleTimer: NodeJS.Timeout | undefined;
      let retried = false;
      let renewed = false;
      let clientGone = false;

      const exchange: Exchange = {
        isGet: method === 'GET',
        end: () => finish({ reason: 'gateway_shutdown', status: 503, message: 'Service unavailable: the gateway is shutting down' }),
        prev: null,
        next: null,
      };
      exchanges.add(exchange);
      // An exchange in progress (a GET stream above all) keeps its session from expiring.
      session?.acquire();

      /**
       * Ends the exchange once. `failure` undefined: the upstream answer is complete, or the client left.
       * With a status and nothing sent yet, the client gets that status and a JSON-RPC error; once the
       * response has started, an event stream is ended cleanly (the client may resume with Last-Event-ID)
       * and any other body is cut, since a truncated JSON body must not look complete.
       */
      function finish(failure: Failure | undefined): void {
        if (settled) return;
        settled = true;
        clearTimeout(connectTimer);
        clearTimeout(idleTimer);
        exchanges.delete(exchange);
        session?.release();
        releaseId?.();
        res.off('close', onClientClose);
        complete &&= failure === undefined;
        if (attempt && !complete) attempt.abort();
        if (failure) onUpstreamError?.(req, { reason: failure.reason, ...(res.headersSent ? {} : { status: failure.status }), ...(failure.code ? { code: failure.code } : {}) });
        if (span) endUpstreamSpan(span, upstreamStatus, failure?.reason);
        if (onExchangeEnd) {
          const outcome = failure?.reason ?? (clientGone ? 'client_closed' : 'complete');
          try {
            onExchangeEnd(req, { httpMethod: method, durationMs: performance.now() - startedAt, status: upstreamStatus, outcome });
          } catch {
            // Metrics must never break serving.
          }
        }
        if (!clientGone && !res.writableEnded) {
          if (complete) res.end();
          else if (!res.headersSent) writeGatewayError(res, failure?.status ?? 502, id, failure?.message ?? 'Bad gateway: the upstream MCP server closed the connection', failure?.retryAfter);
          else if (isEventStream) res.end();
          else res.destroy();
        }
        resolve();
      }

      function onClientClose(): void {
        // The client went away: stop the upstream work it asked for.
        if (res.writableFinished) return;
        clientGone = true;
        finish(undefined);
      }
      res.once('close', onClientClose);

      function resetIdle(): void {
        if (idleTimer) idleTimer.refresh();
        else idleTimer = setTimeout(onIdle, idleTimeoutMs);
      }
      function onIdle(): void {
        if (upstreamStatus === undefined) {
          finish({ reason: 'upstream_timeout', status: 504, message: 'Gateway timeout: the upstream MCP server did not answer in time' });
        } else {
          finish({ reason: 'upstream_idle_timeout' });
        }
      }

      function armConnectTimer(): void {
        clearTimeout(connectTimer);
        connectTimer = setTimeout(() => {
          finish({ reason: 'upstream_connect_timeout', status: 504, message: 'Gateway timeout: could not connect to the upstream MCP server in time' });
        }, connectTimeoutMs);
      }

      /**
       * Sends the request on the pool. Each attempt has its own handler, so that an abandoned attempt (retried,
       * or sent again with renewed credentials) can no longer touch the exchange.
       */
      function start(): void {
        const current = new Attempt();
        attempt = current;
        const handler: Dispatcher.DispatchHandler = {
          onRequestStart(controller) {
            current.controller = controller;
            if (current.aborted || settled) {
              controller.abort(new Error('exchange ended'));
              return;
            }
            // Connected (or a pooled connection, already open): from here on, silence is the upstream's.
            clearTimeout(connectTimer);
            resetIdle();
          },
          onResponseStart(controller, statusCode, headers) {
            // 1xx answers (103 Early Hints) are not the answer; undici itself refuses an unasked-for 100 Continue.
            if (statusCode < 200 || current !== attempt || settled) return;
            current.started = true;
            const incoming = nodeStyleHeaders(headers);
            if (sealer) sealIssuedSession(current, controller, statusCode, incoming, sealer);
            else onResponse(current, controller, statusCode, incoming);
          },
          onResponseData(_controller, chunk) {
            if (current === attempt) current.data(chunk);
          },
          onResponseEnd() {
            if (current === attempt) current.end();
          },
          onResponseError(_controller, error: Error & { code?: string }) {
            if (settled || current !== attempt) return;
            if (current.started) {
              current.fail(error);
              return;
            }
            if (!retried && mayRetry(method, error)) {
              retried = true;
              armConnectTimer();
              start();
              return;
            }
            if (isTimeout(error)) {
              finish({ reason: 'upstream_connect_timeout', status: 504, message: 'Gateway timeout: could not connect to the upstream MCP server in time' });
              return;
            }
            finish({ reason: 'upstream_unreachable', status: 502, message: 'Bad gateway: the upstream MCP server is unreachable', code: nodeErrorCode(error) });
          },
        };
        try {
          dispatcher.dispatch({ origin, path, method, headers: headers as Record<string, string>, body: body ?? null, headersTimeout: 0, bodyTimeout: 0 }, handler);
        } catch (error) {
          // undici's pools report every refusal through the handler; a dispatcher that throws instead sent nothing.
          finish({ reason: 'upstream_unreachable', status: 502, message: 'Bad gateway: the upstream MCP server is unreachable', code: nodeErrorCode(error as Error & { code?: string }) });
        }
      }

      /**
       * With sealed ids, the session id an answer carries is replaced before anything else looks at the answer:
       * by the id the client named, when the upstream repeats that session's id; by the upstream's id sealed for
       * this caller when it is new (the `initialize` answer); on an error answer, it is dropped. The answer waits
       * the moment sealing takes (its body is held by the attempt until then).
       */
      function sealIssuedSession(current: Attempt, controller: Dispatcher.DispatchController, status: number, incoming: IncomingHttpHeaders, sessionSealer: SessionSealer): void {
        const issued = incoming['mcp-session-id'];
        if (issued !== undefined && sealed && issued === sealed.session.upstreamSessionId) {
          incoming['mcp-session-id'] = sealed.sealed;
        } else if (issued !== undefined && (typeof issued !== 'string' || issued === '' || status < 200 || status >= 300)) {
          delete incoming['mcp-session-id'];
        }
        if (typeof issued !== 'string' || incoming['mcp-session-id'] !== issued) {
          onResponse(current, controller, status, incoming);
          return;
        }
        controller.pause();
        sessionSealer.seal(issued, context.auth).then(
          (value) => {
            if (settled || current !== attempt) return;
            if (current.failure) {
              finish({ reason: 'upstream_reset', code: nodeErrorCode(current.failure) });
              return;
            }
            // Sealed even for a token naming nobody (for its issuer): the upstream's id never reaches the client.
            incoming['mcp-session-id'] = value;
            // Resumed first: what arrives is held by the attempt until onResponse takes it, and a pause for
            // backpressure that onResponse sets must stand.
            controller.resume();
            onResponse(current, controller, status, incoming);
          },
          () => finish({ reason: 'session_seal_failed', status: 502, message: 'Bad gateway: the session could not be sealed' }),
        );
      }

      function onResponse(current: Attempt, controller: Dispatcher.DispatchController, status: number, incoming: IncomingHttpHeaders): void {
        upstreamStatus = status;
        resetIdle();
        if (status === 401 && credentials && !renewed) {
          // The upstream refused the gateway's token (expired early, revoked, rotated): renew it and send the
          // request once more. The body is the buffered message, so replaying it is safe.
          renewed = true;
          // The refusal's body is not wanted: its connection is closed rather than left to an unbounded body.
          attempt = undefined;
          current.abort();
          clearTimeout(idleTimer);
          idleTimer = undefined;
          const rejected = String(requestHeaders.authorization);
          credentials.renew(context.auth, rejected).then(
            (value) => {
              if (settled) return;
              if (value === undefined) {
                finish({ reason: 'upstream_auth', status: 502, message: 'Bad gateway: the upstream MCP server refused the gateway' });
                return;
              }
              requestHeaders.authorization = value;
              upstreamStatus = undefined;
              armConnectTimer();
              start();
            },
            (error: unknown) => finish(credentialFailure(error)),
          );
          return;
        }
        if (status === 401 || status === 407) {
          // The upstream wants credentials the gateway does not hold. Passing its 401 on would make the client
          // believe its own (valid) token was refused and start authorizing again, in a loop.
          finish({ reason: 'upstream_auth', status: 502, message: 'Bad gateway: the upstream MCP server refused the gateway' });
          return;
        }
        isEventStream = mediaType(incoming['content-type']) === EVENT_STREAM_MEDIA_TYPE;
        const declared = Number(incoming['content-length']);
        if (!isEventStream && Number.isFinite(declared) && declared > maxResponseBytes) {
          finish({ reason: 'upstream_too_large', status: 502, message: 'Bad gateway: the upstream response is too large' });
          return;
        }
        if (!trackSession(status, incoming)) {
          finish({ reason: 'upstream_session_conflict', status: 502, message: 'Bad gateway: the upstream MCP server issued a session id that is in use' });
          return;
        }
        // A resumed stream may replay the answer to an earlier list request or read: the pipeline filters every
        // event of a GET's stream by its shape (see `filterListResponse`), so it is not filtered a second time here.
        const headers = responseHeaders(incoming);
        if (isEventStream) headers[NO_PROXY_BUFFERING.name] = NO_PROXY_BUFFERING.value;
        res.writeHead(status, headers);
        // Event streams must reach the client event by event, not when a buffer fills.
        if (isEventStream) res.flushHeaders();

        let received = 0;
        current.deliver({
          data(chunk) {
            if (settled) return;
            resetIdle();
            if (!isEventStream) {
              received += chunk.length;
              if (received > maxResponseBytes) {
                finish({ reason: 'upstream_too_large' });
                return;
              }
            }
            const writable = res.write(chunk);
            if (!writable && !controller.paused) {
              // Backpressure: a slow client slows the upstream instead of filling the gateway's memory.
              controller.pause();
              res.once('drain', () => {
                // Bytes moving to the client count as activity: a slow reader is not an idle upstream.
                resetIdle();
                controller.resume();
              });
            }
          },
          end() {
            complete = true;
            finish(undefined);
          },
          fail(error) {
            finish({ reason: 'upstream_reset', code: nodeErrorCode(error) });
          },
        });
      }

      /**
       * Keeps the session registry in step with the upstream's answer. Returns false when the upstream issued
       * a session id bound to another caller (a broken or hostile upstream): that answer must not be passed on.
       */
      function trackSession(status: number, headers: IncomingHttpHeaders): boolean {
        // Sealed sessions are held by no one: their ids were sealed or replaced as the answer came in.
        if (sealer) return true;
        const ok = status >= 200 && status < 300;
        if (session && (status === 404 || (ok && method === 'DELETE'))) {
          // Ended, or unknown to the upstream (expired there, or the upstream restarted).
          sessions.forget(session.id);
          return true;
        }
        if (!ok) return true;
        const issued = headers['mcp-session-id'];
        if (typeof issued === 'string' && issued !== '' && issued !== session?.id) {
          // A token without identity is not bound; its later requests naming the session get 404.
          if (sessions.bind(issued, context.auth) === 'conflict') return false;
        }
        return true;
      }

      if (!credentials) {
        armConnectTimer();
        start();
        return;
      }
      // The token request has its own timeout (the authorization server's); the connect timer starts after it.
      credentials.authorization(context.auth).then(
        (value) => {
          if (settled) return;
          headers.authorization = value;
          armConnectTimer();
          start();
        },
        (error: unknown) => finish(credentialFailure(error)),
      );
    });
  }

  const handler = httpHandler(forward);
  return {
    ...handler,
    get inFlight() {
      return exchanges.size;
    },
    get sessions() {
      return sealer ? undefined : sessions.size;
    },
    endStreams(which) {
      for (const exchange of exchanges.toArray()) if (which === 'all' || exchange.isGet) exchange.end();
    },
    close() {
      closed = true;
      for (const exchange of exchanges.toArray()) exchange.end();
      sessions.clear();
      if (ownDispatcher) void dispatcher.destroy().catch(() => undefined);
    },
  };
}

/**
 * The upstream MCP endpoint: an absolute http(s) URL without credentials (they would be sent with every
 * request and show up in logs and process listings) or fragment.
 *
 * @throws ConfigurationError naming `setting`.
 */
export function parseUpstreamUrl(value: unknown, setting = 'upstream'): URL {
  if (typeof value !== 'string' || value.length === 0) {
    throw new ConfigurationError(setting, 'is required: set it to the URL of the upstream MCP endpoint, e.g. http://127.0.0.1:3001/mcp');
  }
  return parseUrlSetting(value, setting, { protocols: ['http:', 'https:'], example: 'http://127.0.0.1:3001/mcp' });
}

/**
 * Validates identity header names and returns them lower-cased. A name the client may send itself
 * (`Mcp-*`, the forwarded headers, `Authorization`, `Cookie`, …) is refused: the upstream could not tell the
 * gateway's value from the client's.
 *
 * @param setting - Reported in errors, e.g. `MCP_AUTH_IDENTITY_HEADERS`.
 * @throws ConfigurationError naming `setting`.
 */
export function checkIdentityHeaders(names: IdentityHeaderNames | undefined, setting: string): IdentityHeaderNames {
  if (names === undefined) return {};
  const out: IdentityHeaderNames = {};
  for (const key of ['subject', 'clientId', 'scopes', 'issuer'] as const) {
    const name = names[key];
    if (name === undefined) continue;
    const lower = typeof name === 'string' ? name.toLowerCase() : '';
    if (!isHeaderName(lower)) throw new ConfigurationError(setting, `${key}: "${String(name)}" is not a valid header name`);
    if (FORWARDED_REQUEST_HEADERS.has(lower) || lower.startsWith('mcp-') || RESERVED_IDENTITY_NAMES.has(lower)) {
      throw new ConfigurationError(setting, `${key}: "${name}" is reserved; choose a name such as X-MCP-Subject`);
    }
    out[key] = lower;
  }
  return out;
}

/** A sealed session id a request named, and what it opened to. */
interface SealedSessionInUse {
  /** The id as the client sent it, repeated when the upstream repeats the session's id. */
  readonly sealed: string;
  readonly session: OpenedSession;
}

/**
 * The headers sent upstream: the allow-listed ones, `sessionId` as `Mcp-Session-Id`, and the identity headers.
 * `Mcp-Method`, `Mcp-Name` and `Mcp-Param-*` mirror a body: they go on only with the body the guard checked them
 * against (`bodyChecked`, a POST), never on a GET or DELETE, where nothing was there to check them.
 */
function forwardedHeaders(incoming: IncomingHttpHeaders, identity: IdentityHeaderNames, context: HttpHandlerContext, sessionId: string | undefined, bodyChecked: boolean): OutgoingHttpHeaders {
  // Built without deleting from it: a delete turns the object into a slow dictionary for the pool to read.
  const out: OutgoingHttpHeaders = sessionId === undefined ? {} : { 'mcp-session-id': sessionId };
  for (const name in incoming) {
    if (name === 'mcp-session-id') continue;
    if (!bodyChecked && (name === 'mcp-method' || name === 'mcp-name' || name.startsWith('mcp-param-'))) continue;
    if (FORWARDED_REQUEST_HEADERS.has(name) || name.startsWith('mcp-param-')) {
      const value = incoming[name];
      if (value !== undefined) out[name] = value;
    }
  }
  if (identity.subject || identity.clientId || identity.scopes || identity.issuer) {
    const caller = callerIdentity(context.auth);
    if (identity.subject && caller.subject !== undefined) out[identity.subject] = caller.subject;
    if (identity.clientId && caller.clientId !== undefined) out[identity.clientId] = caller.clientId;
    if (identity.scopes) out[identity.scopes] = caller.scopes;
    if (identity.issuer && caller.issuer !== undefined) out[identity.issuer] = caller.issuer;
  }
  return out;
}

function responseHeaders(incoming: IncomingHttpHeaders): OutgoingHttpHeaders {
  const out: OutgoingHttpHeaders = {};
  // Headers named by Connection are hop-by-hop as well (RFC 9110 §7.6.1).
  const connection = connectionHeaderNames(incoming.connection);
  for (const name in incoming) {
    if (DROPPED_RESPONSE_HEADERS.has(name) || name.startsWith('access-control-') || connection.includes(name)) continue;
    const value = incoming[name];
    if (value !== undefined) out[name] = value;
  }
  return out;
}

function writeGatewayError(res: ServerResponse, status: 502 | 504 | number, id: JsonRpcId | null, message: string, retryAfter?: string): void {
  writeJsonRpcError(res, status, id, GATEWAY_JSONRPC_CODE, message, retryAfter);
}

function writeJsonRpcError(res: ServerResponse, status: number, id: JsonRpcId | null, code: number, message: string, retryAfter?: string): void {
  const text = JSON.stringify(jsonRpcError(id, code, message));
  res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text), ...(retryAfter ? { 'Retry-After': retryAfter } : {}) });
  res.end(text);
}

/**
 * Why the gateway has no credentials for the upstream, for the caller: the authorization server refusing (to
 * exchange this caller's token, or to serve the gateway's client) is 403, as this caller cannot reach the
 * upstream; the server unreachable is 503 with `Retry-After`. Neither carries the server's error text.
 */
function credentialFailure(error: unknown): Failure {
  if (error instanceof UpstreamTokenRefusedError) {
    return {
      reason: 'upstream_credentials_refused',
      status: 403,
      message: `Forbidden: the upstream MCP server's authorization server refused the gateway a token for this request (${printableOAuthErrorCode(error.error) ?? 'error not shown'})`,
    };
  }
  const retryAfter = error instanceof AuthorizationServerUnavailableError ? error.headers['Retry-After'] : undefined;
  return {
    reason: 'upstream_credentials_unavailable',
    status: 503,
    message: "Service unavailable: the upstream MCP server's authorization server could not be reached",
    retryAfter: retryAfter ?? '5',
  };
}


