import { AsyncLocalStorage } from 'node:async_hooks';
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  StreamableHTTPServerTransport,
  type EventStore,
  type StreamableHTTPServerTransportOptions,
} from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import type { AuthInfo } from '../core/kernel/auth-info.js';
import { ConfigurationError } from '../core/kernel/errors.js';
import { createPendingRequestIds, type PendingRequestIds } from '../core/mcp/pending-request-ids.js';
import { filterMessage, UNKNOWN_REQUEST } from '../core/policy/response-filter.js';
import type { ListedServerCatalog } from '../core/policy/read-server-catalog.js';
import { checkInteger, checkNumber } from '../core/kernel/settings.js';
import { createSessionRegistry, type BoundSession, type SessionRefusalReason, type SessionRegistry, type SessionReservation } from '../core/session/session-registry.js';
import { DEFAULT_MAX_SESSIONS, DEFAULT_MAX_SESSIONS_PER_CALLER, DEFAULT_SESSION_IDLE_TIMEOUT_MS } from '../core/session/session-defaults.js';
import type { SessionRefusal } from '../core/session/session-gate.js';
import { JsonRpcErrorCode, jsonRpcError, requestIdOf, type JsonRpcId, type JsonRpcMessage } from '../core/wire/jsonrpc.js';
import type { GuardedRequest, HttpHandlerContext, McpHttpHandler } from '../http/http-handler.js';
import { CREDENTIAL_HEADERS, isCredentialHeader } from '../http/credential-headers.js';
import { passSessionGate, type SessionRefusedHook } from '../http/session-gate.js';
import { writeJson, writePendingIdRefusal } from '../http/write-response.js';
import { listSdkServerOver } from './list-sdk-server.js';

/**
 * What the adapter needs of an MCP server: the SDK's `McpServer` and low-level `Server` both fit.
 * One instance serves one transport (the SDK refuses a second `connect`).
 */
export interface SdkServerLike {
  connect(transport: Transport): Promise<void>;
  close(): Promise<void>;
}

/**
 * Transport options passed through to the SDK's `StreamableHTTPServerTransport` (for example
 * `enableJsonResponse`, `eventStore`, `retryInterval`). Session handling and DNS-rebinding checks belong
 * to the adapter and the guard, so those options are not accepted here.
 */
export type SdkTransportOptions = Omit<
  StreamableHTTPServerTransportOptions,
  'sessionIdGenerator' | 'onsessioninitialized' | 'onsessionclosed' | 'enableDnsRebindingProtection' | 'allowedHosts' | 'allowedOrigins'
>;

export type { SessionRefusalReason } from '../core/session/session-registry.js';

/** Told to {@link SdkStreamableHttpHandlerOptions.onSessionRefused}. Never carries the token. */
export interface SessionRefusedEvent {
  reason: SessionRefusalReason;
  /** The session id the request named. */
  sessionId: string;
  /** Subject (`sub`) of the refused request's token, when it has one. */
  subject?: string;
  /** Client of the refused request's token. */
  clientId: string;
  httpMethod: string;
}

/** Options of {@link sdkStreamableHttpHandler}. */
export interface SdkStreamableHttpHandlerOptions {
  /**
   * Creates an MCP server (`new McpServer(...)` with its tools registered). Called once per request in
   * stateless mode and once per session in stateful mode, since an SDK server serves one transport.
   */
  createServer: () => SdkServerLike | Promise<SdkServerLike>;
  /**
   * Stateful mode: `initialize` creates a session (`Mcp-Session-Id`, MCP 2025-06-18/2025-11-25
   * `basic/transports` session management) that later requests, GET streams and DELETE use. Default
   * false: stateless, a fresh server and transport per request, and GET/DELETE answered 405 by the guard.
   */
  stateful?: boolean;
  /**
   * Generates session ids. They must be globally unique and unguessable (MCP `basic/transports`: "SHOULD
   * be globally unique and cryptographically secure"). Default `crypto.randomUUID`.
   */
  sessionIdGenerator?: () => string;
  /**
   * Most open sessions in all; at the limit, creating one closes the least recently used. Default 10 000
   * (`DEFAULT_MAX_SESSIONS`, the gateway's too).
   */
  maxSessions?: number;
  /**
   * Most open sessions per caller (issuer, subject and client of the token); at the limit, creating one
   * closes that caller's least recently used session, so one caller cannot crowd out the others. Default 16
   * (`DEFAULT_MAX_SESSIONS_PER_CALLER`, the gateway's too).
   */
  maxSessionsPerCaller?: number;
  /**
   * A session with no request in flight and no open stream for this long is closed, in milliseconds.
   * Default 3 600 000 (one hour, `DEFAULT_SESSION_IDLE_TIMEOUT_MS`, the gateway's too). `0` disables the idle
   * timeout.
   */
  sessionIdleTimeoutMs?: number;
  /** Passed to every SDK transport. */
  transportOptions?: SdkTransportOptions;
  /** Called when a request names a session it may not use (audit). Errors it throws are ignored. */
  onSessionRefused?: (event: SessionRefusedEvent) => void;
}

/** The handler returned by {@link sdkStreamableHttpHandler}. */
export interface SdkStreamableHttpHandler extends McpHttpHandler {
  /** Number of open sessions (always 0 when stateless). */
  readonly sessionCount: number;
  /** Closes every session and stops the idle timer. The handler stays usable. */
  close(): Promise<void>;
}

/** A request of a session whose response is not sent yet, the filter of the caller who sent it, and its id's claim. */
interface PendingRequest {
  readonly request: JsonRpcMessage;
  readonly filterResponse: HttpHandlerContext['filterResponse'];
  /** Gives the id back (see `createPendingRequestIds`). */
  readonly release: () => void;
}

/** What the adapter keeps with each session in the registry. */
interface SdkSession {
  readonly transport: StreamableHTTPServerTransport;
  /** Requests in progress, by JSON-RPC id (unique: a reused id is refused). See `filterOutgoing`. */
  readonly pending: Map<JsonRpcId, PendingRequest>;
  /** The filter of the session's latest request, for a response whose request is no longer known. */
  latest: HttpHandlerContext['filterResponse'] | undefined;
}

/**
 * The filter of the request being served that resumes a stream, for the event store's replay (see
 * `scopeEventStore`). Per request, not per session: two resumes of one session may carry different tokens, and a
 * resumed stream is served for as long as it lasts. Entered only for resuming GETs, off the hot path.
 */
const resumingRequest = new AsyncLocalStorage<HttpHandlerContext>();

type Session = BoundSession<SdkSession>;

/**
 * Serves an MCP server built with the official TypeScript SDK (1.x, `@modelcontextprotocol/sdk`) behind
 * `mcpOAuthGuard`, through the SDK's own `StreamableHTTPServerTransport`. The guard authenticates and
 * authorizes every request first and sets `req.auth`; the transport hands it to tool handlers as
 * `extra.authInfo`. List results are filtered by the guard on the way out.
 *
 * Stateless (default): each POST gets a new server and transport, closed when the answer is done.
 *
 * Stateful: sessions are kept in a bounded map (`maxSessions`, `maxSessionsPerCaller`, idle timeout) and
 * each is bound to the issuer, subject and client of the token that initialized it. A session id is never
 * authentication (MCP security best practices, "Session hijacking"): a request whose token belongs to
 * someone else gets the same 404 `Session not found` (JSON-RPC -32001) as an unknown id, so a session's
 * existence is not revealed to other users, and a client that switched accounts starts a new session as
 * the transport spec prescribes for 404. A token refresh or step-up keeps the session (same caller).
 * A request without `Mcp-Session-Id` other than `initialize` gets 400. DELETE ends the session.
 * A caller whose token has neither `sub` nor a client id cannot be told apart from other such callers, so
 * its `initialize` gets 400 (JSON-RPC -32000 `Bad Request: stateful sessions need an identified caller`)
 * and it never matches a session; stateless mode serves it normally. The per-caller and total limits
 * count sessions still being opened, so concurrent `initialize` calls cannot overshoot them: a caller
 * already opening `maxSessionsPerCaller` sessions at once gets 429 (JSON-RPC -32000) for the next one.
 *
 * The SDK never sees the `Authorization`, `Proxy-Authorization` and `Cookie` headers (they are removed
 * from the request once the guard has verified the caller), so `extra.requestInfo.headers` holds no
 * credentials. The token is still in `extra.authInfo.token`, as the SDK's `AuthInfo` shape requires.
 *
 * A request whose JSON-RPC id is in use by a request of the same session still in progress gets 400 with JSON-RPC
 * -32600 (MCP forbids reusing an id within a session; the SDK would move the id to the newer request's stream),
 * and a session with 1 024 requests in progress gets 429 for the next one (see `createPendingRequestIds`).
 *
 * Each response the SDK server sends is filtered for the caller before the SDK stores or writes it, by the shape
 * of its result, whatever request its id names now (see `response-filter.ts`). With an `eventStore` (resumable
 * streams), each list result is thus filtered for the caller before the SDK
 * stores it, so a `Last-Event-ID` replay shows no more than the live answer did, and filtered again as it is
 * replayed, with the policy and the token of the request that resumes the stream.
 *
 * The SDK transport's own DNS-rebinding checks are turned off: the guard validates `Origin` itself.
 *
 * `listCatalog` builds one server with `createServer` and lists what it registered, over an in-memory transport;
 * `mcpOAuthGuard` calls it once, at start-up, to log how its policy covers those tools, prompts and resources.
 *
 * @example
 * app.use(mcpOAuthGuard({ ...loadOptionsFromEnv(), handler: sdkStreamableHttpHandler({ createServer: buildServer }) }));
 * @throws ConfigurationError when an option is invalid.
 */
export function sdkStreamableHttpHandler(options: SdkStreamableHttpHandlerOptions): SdkStreamableHttpHandler {
  if (typeof options?.createServer !== 'function') {
    throw new ConfigurationError('options.createServer', 'is required: a function returning a new McpServer');
  }
  const stateful = options.stateful ?? false;
  const transportOptions: SdkTransportOptions = options.transportOptions ?? {};
  const sessions = new StatefulSdkSessions(options, transportOptions);
  const createServer = options.createServer;
  return {
    kind: 'http',
    supportsGet: stateful,
    supportsDelete: stateful,
    get sessionCount() {
      return sessions.size;
    },
    handle(req, res, context) {
      return stateful ? sessions.handle(req, res, context) : serveStateless(createServer, transportOptions, req, res);
    },
    close() {
      return sessions.close();
    },
    listCatalog: () => listSdkServer(createServer),
  };
}

/** Lists what a server from `createServer` registered, over an in-memory transport (see `list-sdk-server.ts`). */
async function listSdkServer(createServer: SdkStreamableHttpHandlerOptions['createServer']): Promise<ListedServerCatalog> {
  return listSdkServerOver(await createServer(), InMemoryTransport.createLinkedPair());
}

/** Stateless: a new server and transport for each request, closed when its answer is done. */
async function serveStateless(createServer: SdkStreamableHttpHandlerOptions['createServer'], transportOptions: SdkTransportOptions, req: GuardedRequest, res: ServerResponse): Promise<void> {
  const server = await createServer();
  const transport = new StreamableHTTPServerTransport({
    ...transportOptions,
    sessionIdGenerator: undefined,
    enableDnsRebindingProtection: false,
  });
  res.once('close', () => {
    void transport.close().catch(() => {});
  });
  await server.connect(transport);
  hideCredentials(req);
  await transport.handleRequest(req, res, req.body);
}

/**
 * Stateful mode: the sessions, each an SDK server and transport bound to its caller in the registry, behind the
 * session gate; the ids of their requests in progress; and the sweeper that closes idle ones.
 */
class StatefulSdkSessions {
  private readonly createServer: SdkStreamableHttpHandlerOptions['createServer'];
  private readonly generateId: () => string;
  private readonly idleTimeoutMs: number;
  private readonly registry: SessionRegistry<SdkSession>;
  // The ids of each session's requests in progress (bounded per session), so that a reused one is refused.
  private readonly pendingIds = createPendingRequestIds();
  /** The session gate's hook, adapted once to the adapter's audit event. */
  private readonly onRefused: SessionRefusedHook | undefined;
  private sweeper: NodeJS.Timeout | undefined = undefined;

  constructor(
    options: SdkStreamableHttpHandlerOptions,
    private readonly transportOptions: SdkTransportOptions,
  ) {
    this.createServer = options.createServer;
    this.generateId = options.sessionIdGenerator ?? randomUUID;
    const maxSessions = checkInteger(options.maxSessions, 'options.maxSessions', DEFAULT_MAX_SESSIONS);
    const maxPerCaller = checkInteger(options.maxSessionsPerCaller, 'options.maxSessionsPerCaller', DEFAULT_MAX_SESSIONS_PER_CALLER);
    this.idleTimeoutMs = checkNumber(options.sessionIdleTimeoutMs, 'options.sessionIdleTimeoutMs', DEFAULT_SESSION_IDLE_TIMEOUT_MS);
    const onSessionRefused = options.onSessionRefused;
    this.onRefused = onSessionRefused && ((req, refusal, auth) => report(onSessionRefused, refusal, auth, req.method ?? 'POST'));
    this.registry = createSessionRegistry<SdkSession>({
      maxSessions,
      maxSessionsPerCaller: maxPerCaller,
      idleTimeoutMs: this.idleTimeoutMs,
      // A session leaving the registry (evicted, expired, cleared) takes its SDK transport with it, and the ids of
      // its requests in progress, which the SDK aborts without answering.
      onForget: (session) => {
        this.forgetPending(session.id, session.value);
        void session.value.transport.close().catch(() => {});
      },
    });
  }

  /** Number of open sessions. */
  get size(): number {
    return this.registry.size;
  }

  async handle(req: GuardedRequest, res: ServerResponse, context: HttpHandlerContext): Promise<void> {
    const header = req.headers['mcp-session-id'];
    const id = requestIdOf(req.body);
    if (Array.isArray(header)) {
      writeJson(res, 400, jsonRpcError(id, JsonRpcErrorCode.ServerError, 'Bad Request: send one Mcp-Session-Id header'));
      return;
    }
    if (header === undefined) {
      if (req.method === 'POST' && req.body && 'method' in req.body && req.body.method === 'initialize' && 'id' in req.body) {
        await this.openSession(req, res, context.auth, id);
        return;
      }
      writeJson(res, 400, jsonRpcError(id, JsonRpcErrorCode.ServerError, 'Bad Request: Mcp-Session-Id header is required'));
      return;
    }
    const session = passSessionGate(this.registry, header, req, res, context.auth, this.onRefused);
    if (session === undefined) return;
    const entry = req.method === 'POST' && req.body ? recordRequest(this.pendingIds, session, req.body, context) : undefined;
    if (typeof entry === 'string') {
      writePendingIdRefusal(res, entry, id!);
      return;
    }
    if (req.method === 'POST' && req.body) session.value.latest = context.filterResponse;
    // A cancelled request gets no response (MCP `basic/utilities/cancellation`), so its entry would stay.
    if (req.method === 'POST' && req.body) forgetCancelled(session.value.pending, req.body);
    session.acquire();
    res.once('close', () => {
      session.release();
      // An error status means the SDK refused the request before dispatching it (wrong protocol version,
      // bad Accept…): no response will ever be sent for it, and a stale entry could later filter another
      // request's response that reuses the id. Without an event store, a response not sent by the time its
      // stream closed is sent nowhere, so its entry can go too; with one, it may still be stored for a
      // replay and must be filtered then.
      if (entry && (res.statusCode >= 400 || !this.transportOptions.eventStore)) forgetRequest(session.value.pending, entry);
    });
    hideCredentials(req);
    // A resumed stream replays stored events: filter them again with this request's filter, so that a policy
    // narrowed since they were stored (or a token with fewer scopes) is applied to the copies too.
    if (req.method === 'GET' && req.headers['last-event-id'] !== undefined) {
      await resumingRequest.run(context, () => session.value.transport.handleRequest(req, res, req.body));
      return;
    }
    await session.value.transport.handleRequest(req, res, req.body);
  }

  private async openSession(req: GuardedRequest, res: ServerResponse, auth: AuthInfo, id: JsonRpcId | null): Promise<void> {
    // The slot is taken before the first await and given back in `finally` unless the session got it.
    const reservation = this.registry.reserve(auth);
    if (reservation === 'no_identity') {
      writeJson(res, 400, jsonRpcError(id, JsonRpcErrorCode.ServerError, 'Bad Request: stateful sessions need an identified caller'));
      return;
    }
    if (reservation === 'busy') {
      writeJson(res, 429, jsonRpcError(id, JsonRpcErrorCode.ServerError, 'Too many sessions being opened; retry later'));
      return;
    }
    try {
      await this.connectSession(req, res, auth, reservation);
    } finally {
      reservation.release();
    }
  }

  private async connectSession(req: GuardedRequest, res: ServerResponse, auth: AuthInfo, reservation: SessionReservation<SdkSession>): Promise<void> {
    const server = await this.createServer();
    let session: Session | undefined;
    const state: SdkSession = { transport: undefined as unknown as StreamableHTTPServerTransport, pending: new Map(), latest: undefined };
    // The id is chosen here so the event store can be scoped to this one session.
    const sessionId = this.generateId();
    const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
      ...this.transportOptions,
      ...(this.transportOptions.eventStore ? { eventStore: scopeEventStore(this.transportOptions.eventStore, sessionId) } : {}),
      sessionIdGenerator: () => sessionId,
      enableDnsRebindingProtection: false,
      onsessioninitialized: (sessionId) => {
        // Registered before the initialize answer is written, so the client's next request finds it.
        // In use from the start: a lookup here could find it expired already with an idle timeout of a few ms.
        const bound = reservation.bindInUse(sessionId, state);
        if (!('session' in bound)) return;
        session = bound.session;
        this.startSweeper();
      },
    });
    (state as { transport: StreamableHTTPServerTransport }).transport = transport;
    // Every message the SDK server emits goes through `send`, which stores it in the event store (if any)
    // and then writes it. The guard filters list results only as they are written to an answer, so the stored
    // copy, replayed on a GET with Last-Event-ID, would be the unfiltered list: filter here, before it is stored.
    // (The guard's filter then runs again on the live answer; filtering is idempotent.) The initialize request
    // is no session's yet: its answer is no list.
    const sendUnfiltered = transport.send.bind(transport);
    transport.send = (message, sendOptions) => sendUnfiltered(filterOutgoing(state, message), sendOptions);
    // Set before connect: the SDK server chains its own close handler after this one.
    transport.onclose = () => {
      if (session) this.registry.forget(session.id, false);
      this.forgetPending(sessionId, state);
      if (this.registry.size === 0) this.stopSweeper();
    };
    res.once('close', () => {
      if (session) {
        session.release();
      } else {
        // initialize was refused by the transport: nothing will ever use this pair again.
        void transport.close().catch(() => {});
      }
    });
    await server.connect(transport);
    hideCredentials(req);
    await transport.handleRequest(req, res, req.body);
  }

  /** Gives back the ids of a session that ended: with an event store a claim is otherwise released only by a response sent. */
  private forgetPending(sessionId: string, state: SdkSession): void {
    this.pendingIds.forgetSession(sessionId);
    state.pending.clear();
  }

  private startSweeper(): void {
    if (this.sweeper !== undefined || this.idleTimeoutMs === 0) return;
    const every = Math.min(60_000, Math.max(10, Math.floor(this.idleTimeoutMs / 2)));
    this.sweeper = setInterval(() => {
      this.registry.sweep();
      if (this.registry.size === 0) this.stopSweeper();
    }, every);
    this.sweeper.unref();
  }

  private stopSweeper(): void {
    if (this.sweeper !== undefined) clearInterval(this.sweeper);
    this.sweeper = undefined;
  }

  /** Closes every session and stops the sweeper. */
  async close(): Promise<void> {
    this.stopSweeper();
    const all = [...this.registry.sessions()];
    for (const session of all) this.registry.forget(session.id, false);
    await Promise.all(all.map((session) => session.value.transport.close().catch(() => {})));
  }
}

/** Tells the adapter's audit hook of a refused session (the session gate ignores errors it throws). */
function report(onSessionRefused: (event: SessionRefusedEvent) => void, refusal: SessionRefusal, auth: AuthInfo, httpMethod: string): void {
  // The registry's reasons only: a sealed id's reasons are the gateway's.
  const event: SessionRefusedEvent = { reason: refusal.reason as SessionRefusalReason, sessionId: refusal.sessionId, clientId: auth.clientId, httpMethod };
  if (auth.extra.sub !== undefined) event.subject = auth.extra.sub;
  onSessionRefused(event);
}

/**
 * Remembers a request of `session` in progress, so that its response is filtered for this caller before the SDK
 * stores or writes it (see `filterOutgoing`), and claims its id: why not, when the id is in use by another request
 * of the session or the session has too many in progress; undefined when `message` is no request.
 */
function recordRequest(pendingIds: PendingRequestIds, session: Session, message: JsonRpcMessage, context: HttpHandlerContext): PendingRequest | 'in_use' | 'too_many' | undefined {
  if (!('id' in message) || !('method' in message)) return undefined;
  const claimed = pendingIds.claim(session.id, message.id);
  if (typeof claimed !== 'function') return claimed;
  const entry: PendingRequest = { request: message, filterResponse: context.filterResponse, release: claimed };
  session.value.pending.set(message.id, entry);
  return entry;
}

/** Forgets a request the client cancels with `notifications/cancelled`. */
function forgetCancelled(pending: Map<JsonRpcId, PendingRequest>, message: JsonRpcMessage): void {
  if (!('method' in message) || message.method !== 'notifications/cancelled' || 'id' in message) return;
  const requestId = (message.params as { requestId?: unknown } | undefined)?.requestId;
  if (typeof requestId !== 'string' && typeof requestId !== 'number') return;
  const entry = pending.get(requestId);
  if (entry) forgetRequest(pending, entry);
}

function forgetRequest(pending: Map<JsonRpcId, PendingRequest>, entry: PendingRequest): void {
  const id = (entry.request as { id: JsonRpcId }).id;
  if (pending.get(id) === entry) pending.delete(id);
  entry.release();
}

/**
 * Filters every outgoing response by the shape of its result (see `response-filter.ts`) with the filter of the
 * request its id names, or, when that request is no longer known (its client left and the id was used again, or
 * it was cancelled), with the filter of the session's latest request; then that request is over.
 */
function filterOutgoing(state: SdkSession, message: JSONRPCMessage): JSONRPCMessage {
  if ('method' in message || !('id' in message) || (typeof message.id !== 'string' && typeof message.id !== 'number')) return message;
  const entry = state.pending.get(message.id);
  const filterResponse = entry?.filterResponse ?? state.latest;
  const out = filterResponse === undefined ? message : (filterMessage(message, (response) => filterResponse(entry?.request ?? UNKNOWN_REQUEST, response)) as JSONRPCMessage);
  if (entry) forgetRequest(state.pending, entry);
  return out;
}

/**
 * Removes credential headers ({@link CREDENTIAL_HEADERS}) from `req` before the SDK converts it: the SDK copies
 * every header into `extra.requestInfo.headers` for tools, and a tool that can read the token can replay it.
 * The SDK's Node transport builds its `Request` with `@hono/node-server`, which reads header values from both
 * `req.headers` (single lookups) and `req.rawHeaders` (the full list), so both are cleaned. Node computes
 * `headers` and `headersDistinct` lazily from `rawHeaders` using the original count, so they are
 * materialized first: computing them from a shorter list would fail. The guard has finished with these
 * headers by the time the handler runs.
 */
function hideCredentials(req: IncomingMessage): void {
  const raw = req.rawHeaders;
  let hasCredential = false;
  for (let i = 0; i < raw.length; i += 2) {
    if (isCredentialHeader(raw[i]!)) {
      hasCredential = true;
      break;
    }
  }
  if (!hasCredential) return;
  const headers = req.headers;
  const distinct = req.headersDistinct;
  for (const name of CREDENTIAL_HEADERS) {
    delete headers[name];
    delete distinct[name];
  }
  const kept: string[] = [];
  for (let i = 0; i + 1 < raw.length; i += 2) {
    if (!isCredentialHeader(raw[i]!)) kept.push(raw[i]!, raw[i + 1]!);
  }
  req.rawHeaders = kept;
}


/**
 * A stored event, filtered again for the request that resumes its stream. A list or read answer is recognised by
 * the shape of its result, whatever id it carries (fail closed). It was filtered when it was stored, so filtering
 * again can only keep as much or less: what the policy and token of both times allow.
 */
function refilterReplayed(message: JSONRPCMessage): JSONRPCMessage {
  const context = resumingRequest.getStore();
  return context === undefined ? message : (filterMessage(message, (response) => context.filterResponse(UNKNOWN_REQUEST, response)) as JSONRPCMessage);
}

/**
 * One session's view of a shared event store. The SDK replays whatever stream a `Last-Event-ID` names,
 * whichever session asks, so with one store for all sessions an event id would work as a bearer
 * capability for another caller's stream. Here event ids carry the session id, and an id from another
 * session is unknown: the SDK then answers 400 ("Invalid event ID format") and replays nothing. Replayed
 * events are filtered again for the request that resumes the stream (see `refilterReplayed`).
 */
function scopeEventStore(store: EventStore, sessionId: string): EventStore {
  const tag = `${sessionId}:`;
  const own = (eventId: string): string | undefined => (eventId.startsWith(tag) ? eventId.slice(tag.length) : undefined);
  return {
    async storeEvent(streamId, message) {
      return tag + (await store.storeEvent(streamId, message));
    },
    async getStreamIdForEventId(eventId) {
      const inner = own(eventId);
      if (inner === undefined) return undefined;
      // A store without this lookup gets no conflict check from the SDK; keep it that way with a name no
      // live stream uses.
      return store.getStreamIdForEventId ? store.getStreamIdForEventId(inner) : `${tag}replay`;
    },
    async replayEventsAfter(lastEventId, { send }) {
      const inner = own(lastEventId);
      if (inner === undefined) throw new Error('event id of another session');
      return store.replayEventsAfter(inner, { send: (eventId, message) => send(tag + eventId, refilterReplayed(message)) });
    },
  };
}
