import type { Agent as HttpAgent, ServerResponse } from 'node:http';
import type { Dispatcher } from 'undici';
import { checkDuration, checkInteger } from '../../../core/kernel/settings.js';
import { createPendingRequestIds, type PendingRequestIds } from '../../../core/mcp/pending-request-ids.js';
import { createSessionRegistry, type BoundSession } from '../../../core/session/session-registry.js';
import type { SessionSealer } from '../../../core/session/session-seal.js';
import { requestIdOf } from '../../../core/wire/jsonrpc.js';
import { httpHandler, type GuardedRequest, type HttpHandlerContext } from '../../../http/http-handler.js';
import { requestSessionId } from '../../../http/request-headers.js';
import { passSessionGate, refuseSession } from '../../../http/session-gate.js';
import { writePendingIdRefusal } from '../../../http/write-response.js';
import type { UpstreamCredentials } from '../../upstream-auth/upstream-credentials.js';
import { createUpstreamDispatcher } from '../upstream-dispatcher.js';
import {
  checkUpstreamName,
  DEFAULT_MAX_RESPONSE_BYTES,
  DEFAULT_MAX_SESSIONS,
  DEFAULT_MAX_SESSIONS_PER_CALLER,
  DEFAULT_SESSION_IDLE_TIMEOUT_MS,
  DEFAULT_UPSTREAM_CONNECT_TIMEOUT_MS,
  DEFAULT_UPSTREAM_IDLE_TIMEOUT_MS,
  MAX_UPSTREAM_IDLE_TIMEOUT_MS,
  type Upstream,
  type UpstreamHooks,
} from '../upstream.js';
import { FAILURES } from './exchange-failure.js';
import { writeGatewayError } from '../gateway-error.js';
import { parseUpstreamUrl } from './upstream-url.js';

// Apart, so that a configuration is read without loading the proxy; named here as before.
export { parseUpstreamUrl } from './upstream-url.js';
import { ExchangeList } from './exchange-list.js';
import { HttpExchange, type HttpUpstreamSettings, type SealedSessionInUse } from './http-exchange.js';
import { checkIdentityHeaders, type IdentityHeaderNames } from './identity-headers.js';
import { isSessionInitialize, LazyForwarding } from './lazy-forwarding.js';
import { LazySessions, type LazySessionBounds } from './lazy-sessions.js';
import { SHUTDOWN_SESSION_ENDS_TIMEOUT_MS, UpstreamSessionEnds } from './upstream-session-ends.js';


/** Options of {@link createUpstreamProxy}. */
export interface UpstreamProxyOptions extends UpstreamHooks {
  /** The upstream's name behind the gateway's endpoint (letters, digits, `-` and single `_`, at most 64, starting with a letter). Default `default`. */
  name?: string;
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
   * progress), and its caller's next request gets 404 and starts a new session. Default 10 000 (`DEFAULT_MAX_SESSIONS`).
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
   * `maxSessionsPerCaller` and `sessionIdleTimeoutMs` do not apply (except to the sessions the gateway opens before
   * the upstream's, see `serverInfo`, which are in memory); the upstream ends its own sessions. A request
   * whose id does not open, or opens for another caller, gets the same 404 as an unknown session and is not
   * forwarded. Default none: the upstream's session ids pass through, bound to their callers in this process.
   */
  sessionSealer?: SessionSealer;
  /**
   * With credentials that have a caller flow (connected accounts): the gateway's `serverInfo`, and the gateway then
   * answers `initialize` itself for a user who has not connected yet, opening the upstream's session once they have
   * (see `lazy-sessions.ts`). Default none: `initialize` needs the credentials like any request (a server set's
   * member, whose set answers `initialize` itself).
   */
  serverInfo?: { readonly name: string; readonly version: string };
}


/**
 * Forwards each request to the HTTP upstream, after the session gate: one object per upstream, its per-request
 * work in {@link HttpExchange}.
 */
class HttpUpstreamForwarder {
  /** Set by close(): a request that arrives afterwards (a keep-alive client during shutdown) gets 503, not a pool error. */
  closed = false;
  // Ids of the requests each session has in progress; with sealed ids, by the upstream's session id.
  private readonly pendingIds: PendingRequestIds = createPendingRequestIds();
  /** With credentials the caller acts for: sessions the gateway opened before the upstream's. */
  private readonly lazy: LazyForwarding | undefined;
  /** Their store, and what ends the upstream's sessions opened for those the gateway forgets. */
  private readonly lazySessions: LazySessions | undefined;
  private readonly sessionEnds: UpstreamSessionEnds | undefined;

  constructor(
    readonly settings: HttpUpstreamSettings,
    private readonly onSessionRefused: UpstreamHooks['onSessionRefused'],
    lazyBounds: LazySessionBounds,
    serverInfo: { readonly name: string; readonly version: string } | undefined,
  ) {
    const credentials = settings.credentials;
    if (credentials?.flow && serverInfo) {
      const ends = (this.sessionEnds = new UpstreamSessionEnds(settings, credentials));
      // Unsealed, a session the gateway opened sits in the gate's registry too: forgotten here, it is forgotten there.
      this.lazySessions = new LazySessions({ ...lazyBounds, onUpstreamForgotten: (session) => ends.end(session), onForgotten: (id) => settings.sessions.forget(id, false) });
      this.lazy = new LazyForwarding(settings, credentials, credentials.flow, this.lazySessions, serverInfo, onSessionRefused);
    }
  }

  /**
   * Shutdown: nothing more is forwarded or swept; the upstream sessions the gateway opened are ended there, and the
   * promise, when there is one, settles once they are or shutdown's time for them is up
   * (`SHUTDOWN_SESSION_ENDS_TIMEOUT_MS`, 5 s in all).
   */
  close(): Promise<void> | undefined {
    this.closed = true;
    const { lazySessions, sessionEnds } = this;
    if (!lazySessions || !sessionEnds) return undefined;
    // One bound for both steps: the openings in progress hand over what they open before the ends close.
    const deadline = Date.now() + SHUTDOWN_SESSION_ENDS_TIMEOUT_MS;
    return lazySessions.close(SHUTDOWN_SESSION_ENDS_TIMEOUT_MS).then(() => sessionEnds.close(Math.max(0, deadline - Date.now())));
  }

  /** The gate's registry forgot `id` (evicted, expired): a session the gateway opened is forgotten in its own store too. */
  gateForgot(id: string): void {
    if (this.lazySessions && LazySessions.isLazyId(id)) this.lazySessions.drop(id);
  }

  forward(req: GuardedRequest, res: ServerResponse, context: HttpHandlerContext): Promise<void> {
    // After close(): 503 before any session is looked up or opened, since close() forgot them all and a 404 would
    // send the client to start a new one here.
    if (this.closed) {
      this.settings.onUpstreamError?.(req, { reason: 'gateway_shutdown', status: 503 });
      writeGatewayError(res, 503, requestIdOf(req.body), FAILURES.shutdown.message);
      return Promise.resolve();
    }
    const sessionId = requestSessionId(req, context.protocolVersion);
    if (this.lazy && sessionId === undefined && isSessionInitialize(req)) return this.lazy.initialize(req, res, context, (authorization) => this.exchange(req, res, context, null, undefined, undefined, authorization));
    if (this.settings.sealer) return this.forwardSealed(req, res, context, sessionId, this.settings.sealer);
    if (sessionId === undefined) return this.exchange(req, res, context, null, undefined, undefined);
    const session = passSessionGate(this.settings.sessions, sessionId, req, res, context.auth, this.onSessionRefused);
    if (session === undefined) return Promise.resolve();
    return this.exchange(req, res, context, session, undefined, sessionId);
  }

  /** With sealed session ids: the id a request names is opened, not looked up, and forwarded as the upstream's. */
  private async forwardSealed(req: GuardedRequest, res: ServerResponse, context: HttpHandlerContext, sessionId: string | undefined, sealer: SessionSealer): Promise<void> {
    if (sessionId === undefined) return this.exchange(req, res, context, null, undefined, undefined);
    const opened = await sealer.open(sessionId, context.auth);
    if ('refused' in opened) {
      refuseSession(req, res, { reason: opened.refused, sessionId }, context.auth, this.onSessionRefused);
      return;
    }
    // The client left while the id was being opened: nothing to forward for it.
    if (context.signal.aborted) return;
    const sealed: SealedSessionInUse = { sealed: sessionId, session: opened.session };
    return this.exchange(req, res, context, null, sealed, opened.session.upstreamSessionId);
  }

  /**
   * Claims the request's JSON-RPC id within its session (a reused id in progress gets 400, too many 429), then
   * runs the exchange. `sessionId` is the upstream's id of the session, when the request names one; `authorization`
   * the value the credentials gave for this exchange already, if they were asked.
   */
  private exchange(req: GuardedRequest, res: ServerResponse, context: HttpHandlerContext, session: BoundSession | null, sealed: SealedSessionInUse | undefined, sessionId: string | undefined, authorization?: string): Promise<void> {
    let releaseId: (() => void) | undefined;
    const message = req.body;
    if (sessionId !== undefined && req.method === 'POST' && message !== undefined && 'id' in message && 'method' in message) {
      const claimed = this.pendingIds.claim(sessionId, message.id);
      if (typeof claimed !== 'function') {
        writePendingIdRefusal(res, claimed, message.id);
        return Promise.resolve();
      }
      releaseId = claimed;
    }
    if (this.lazy && LazySessions.isLazyId(sessionId)) return this.lazy.forward(req, res, context, { session, sealed, clientId: sessionId!, releaseId });
    return new HttpExchange(this.settings, req, res, context.auth, session, sealed, sessionId, releaseId, context.clientCapabilities, undefined, authorization).run();
  }
}

/**
 * Makes the guard a gateway: an `McpHttpHandler` that forwards each authorized request (POST, GET,
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
 * The returned upstream is named (`name`, default `default`) and implements the upstream contract (`Upstream`,
 * `upstream.ts`).
 *
 * @throws ConfigurationError when `upstream` is not an absolute http(s) URL or an option is out of range.
 * @example
 * const upstream = createUpstreamProxy({ upstream: 'http://127.0.0.1:3001/mcp', identityHeaders: { subject: 'X-MCP-Subject' } });
 * mcpOAuthGuard({ ...loadOptionsFromEnv(), handler: upstream });
 */
export function createUpstreamProxy(options: UpstreamProxyOptions): Upstream {
  const upstream = parseUpstreamUrl(options?.upstream);
  // Reached only with options: without them the line above has thrown a ConfigurationError (for JavaScript callers).
  const name = checkUpstreamName(options.name, 'name');
  const connectTimeoutMs = checkDuration(options.connectTimeoutMs, 'connectTimeoutMs', DEFAULT_UPSTREAM_CONNECT_TIMEOUT_MS);
  const maxSessions = checkInteger(options.maxSessions, 'maxSessions', DEFAULT_MAX_SESSIONS);
  const sessionIdleTimeoutMs = checkDuration(options.sessionIdleTimeoutMs, 'sessionIdleTimeoutMs', DEFAULT_SESSION_IDLE_TIMEOUT_MS);
  const maxSessionsPerCaller = checkInteger(options.maxSessionsPerCaller, 'maxSessionsPerCaller', DEFAULT_MAX_SESSIONS_PER_CALLER);
  // Set once the forwarder exists; the registry forgets nothing before.
  let gateForgot: ((id: string) => void) | undefined;
  const sessions = createSessionRegistry({
    maxSessions,
    maxSessionsPerCaller,
    idleTimeoutMs: sessionIdleTimeoutMs,
    ...(options.now ? { now: options.now } : {}),
    // A session the gateway opened before the upstream's, evicted here, is ended at once, its upstream session too:
    // its client gets 404 from here on, so nothing would use it until its own expiry.
    onForget: (session) => gateForgot?.(session.id),
  });
  // Pooled connections: an MCP session makes many short POSTs, and reconnecting for each costs a round trip.
  const ownDispatcher = options.dispatcher === undefined;
  const settings: HttpUpstreamSettings = {
    upstream,
    // Only a name given: the one upstream of a gateway without a configuration file keeps its spans as they were.
    spanName: options.name === undefined ? undefined : name,
    origin: upstream.origin,
    path: `${upstream.pathname}${upstream.search}`,
    dispatcher: options.dispatcher ?? createUpstreamDispatcher(connectTimeoutMs, options.agent),
    connectTimeoutMs,
    idleTimeoutMs: checkInteger(options.idleTimeoutMs, 'idleTimeoutMs', DEFAULT_UPSTREAM_IDLE_TIMEOUT_MS, { max: MAX_UPSTREAM_IDLE_TIMEOUT_MS }),
    maxResponseBytes: checkInteger(options.maxResponseBytes, 'maxResponseBytes', DEFAULT_MAX_RESPONSE_BYTES),
    identity: checkIdentityHeaders(options.identityHeaders, 'identityHeaders'),
    credentials: options.credentials,
    sealer: options.sessionSealer,
    sessions,
    exchanges: new ExchangeList(),
    onUpstreamError: options.onUpstreamError,
    onAnsweredInstead: options.onAnsweredInstead,
    onExchangeEnd: options.onExchangeEnd,
  };
  // Sessions the gateway opens before the upstream's are bounded as the others are, even with sealed ids: they are in memory.
  const lazyBounds: LazySessionBounds = { maxSessions, maxSessionsPerCaller, idleTimeoutMs: sessionIdleTimeoutMs, now: options.now };
  const forwarder = new HttpUpstreamForwarder(settings, options.onSessionRefused, lazyBounds, options.serverInfo);
  gateForgot = (id) => forwarder.gateForgot(id);
  const exchanges = settings.exchanges;
  return {
    ...httpHandler((req, res, context) => forwarder.forward(req, res, context)),
    name,
    transport: 'http',
    get inFlight() {
      return exchanges.size;
    },
    get sessions() {
      return settings.sealer ? undefined : sessions.size;
    },
    endStreams(which) {
      for (const exchange of exchanges.toArray()) if (which === 'all' || exchange.isGet) exchange.end();
    },
    close() {
      const ending = forwarder.close();
      for (const exchange of exchanges.toArray()) exchange.end();
      sessions.clear();
      const destroy = (): void => {
        if (ownDispatcher) void settings.dispatcher.destroy().catch(() => undefined);
      };
      // The pool goes once the upstream sessions the gateway opened are ended: their DELETEs use it.
      if (!ending) return destroy();
      return ending.then(destroy);
    },
  };
}
