import type { IncomingHttpHeaders, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import type { Span } from '@opentelemetry/api';
import type { Dispatcher } from 'undici';
import type { AuthInfo } from '../../../core/kernel/auth-info.js';
import { sessionNotFoundAnswer } from '../../../core/session/session-gate.js';
import type { BoundSession, SessionRegistry } from '../../../core/session/session-registry.js';
import type { OpenedSession, SessionSealer } from '../../../core/session/session-seal.js';
import { requestIdOf } from '../../../core/wire/jsonrpc.js';
import type { GuardedRequest } from '../../../http/http-handler.js';
import { EVENT_STREAM_MEDIA_TYPE, JSON_MEDIA_TYPE, mediaType } from '../../../http/media-type.js';
import { unfilterableReplacement } from '../../../http/filter-written-response.js';
import { NO_PROXY_BUFFERING, writeJson } from '../../../http/write-response.js';
import { insufficientScopeChallenge } from '../../upstream-auth/bearer-challenge.js';
import type { CallerFlow, CallerFlowAnswer, CallerFlowRequest } from '../../upstream-auth/caller-flow.js';
import { markFlowAnswer, writeFlowAnswer } from '../../upstream-auth/flow-answer-mark.js';
import type { UpstreamCredentials } from '../../upstream-auth/upstream-credentials.js';
import { isTimeout, mayRetry, nodeErrorCode } from '../upstream-dispatcher.js';
import { endUpstreamSpan, startUpstreamSpan } from '../upstream-span.js';
import type { UpstreamFailureReason, UpstreamHooks } from '../upstream.js';
import { CLOSED_TEXT, credentialFailure, FAILURES, reset, unreachable, type ExchangeFailure } from './exchange-failure.js';
import { writeGatewayError } from '../gateway-error.js';
import type { ExchangeList, ListedExchange } from './exchange-list.js';
import { forwardedHeaders, responseHeaders } from './forwarded-headers.js';
import type { IdentityHeaderNames } from './identity-headers.js';
import { LazySessionEndedError } from './lazy-session-ended.js';
import { listedAnswerCopy, type ListedAnswerCopy } from './listed-answer-copy.js';
import { UpstreamAttempt, type AttemptOwner, type UpstreamError } from './upstream-attempt.js';

/** What every exchange of one HTTP upstream shares: its settings, its pool, its sessions and its hooks. */
export interface HttpUpstreamSettings {
  readonly upstream: URL;
  /** The upstream's name for its spans (`mcp_guard.upstream.name`), when it was given one; absent for the one upstream. */
  readonly spanName: string | undefined;
  /** The upstream's origin and path (with its query), as undici takes them. */
  readonly origin: string;
  readonly path: string;
  readonly dispatcher: Dispatcher;
  readonly connectTimeoutMs: number;
  readonly idleTimeoutMs: number;
  readonly maxResponseBytes: number;
  readonly identity: IdentityHeaderNames;
  readonly credentials: UpstreamCredentials | undefined;
  readonly sealer: SessionSealer | undefined;
  /** The sessions bound to their callers (unused with `sealer`). */
  readonly sessions: SessionRegistry;
  /** The exchanges in progress, for shutdown. */
  readonly exchanges: ExchangeList;
  readonly onUpstreamError: UpstreamHooks['onUpstreamError'];
  readonly onAnsweredInstead: UpstreamHooks['onAnsweredInstead'];
  readonly onExchangeEnd: UpstreamHooks['onExchangeEnd'];
}

/**
 * The ids of a session the gateway opened before the upstream's (see `lazy-sessions.ts`): the one the client knows,
 * and the upstream's, which the answer's `Mcp-Session-Id` is turned back from.
 */
export interface LazySessionIds {
  readonly client: string;
  readonly upstream: string;
  /**
   * Opens a new upstream session after the upstream answered 404 for `gone` (it restarted, or expired it), and
   * gives its id (`''` when the upstream now keeps none). The request is then sent once more under it, once.
   * `authorization` is the value the request was sent with, so that the opening does not ask the credentials again.
   * Absent for a request that must not open one (a DELETE).
   */
  readonly reopen?: (gone: string, authorization: string | undefined) => Promise<string>;
}

/** A sealed session id a request named, and what it opened to. */
export interface SealedSessionInUse {
  /** The id as the client sent it, repeated when the upstream repeats the session's id. */
  readonly sealed: string;
  readonly session: OpenedSession;
}

/**
 * Where the request of a response being served by an exchange keeps it, so that one listener function serves every
 * response. On the request, not the response: the pipeline's answer filter patched the response before the exchange
 * began and undoes its patch newest property first, which a property added after it would turn into a deletion out of
 * order, leaving every response a slow dictionary object for the rest of its way through node:http.
 */
const EXCHANGE = Symbol('upstream exchange');
type ExchangeRequest = GuardedRequest & { [EXCHANGE]?: HttpExchange | undefined };

function onResponseClose(this: ServerResponse): void {
  (this.req as ExchangeRequest | undefined)?.[EXCHANGE]?.clientClosed();
}
function onConnectTimer(exchange: HttpExchange): void {
  exchange.connectExpired();
}
function onIdleTimer(exchange: HttpExchange): void {
  exchange.idleExpired();
}

/**
 * One request forwarded to the HTTP upstream and its answer relayed back: a state machine in fields.
 *
 * Waiting for credentials (when the gateway has its own) → connecting (`connectTimeoutMs`) → waiting for the
 * answer's head (`idleTimeoutMs`) → relaying the body (`idleTimeoutMs` between chunks, `maxResponseBytes` for
 * bodies that are not event streams) → settled, once, by {@link HttpExchange.finish}. A GET or DELETE whose
 * connection failed before any answer is sent once more; an upstream 401 with credentials renews them and sends
 * the request once more. Each send is an {@link UpstreamAttempt}, so an abandoned one cannot touch the exchange.
 *
 * Credentials with a caller flow (connected accounts) add three steps, and only they: the flow prepares the message
 * first (a retry's gateway `requestState` is checked and removed), a failure the caller can fix is answered by the
 * flow (the connect flow, HTTP 200; the upstream is not contacted), and an upstream 403 `insufficient_scope` is put
 * to the flow once, which answers with a step-up or lets the refusal pass on.
 */
export class HttpExchange implements ListedExchange, AttemptOwner {
  prev: ListedExchange | null = null;
  next: ListedExchange | null = null;
  readonly isGet: boolean;
  settled = false;
  /** The attempt in progress (a retry or a renewed token starts another); undefined before the first. */
  attempt: UpstreamAttempt | undefined = undefined;
  private readonly method: string;
  private readonly headers: OutgoingHttpHeaders;
  private body: Buffer | undefined;
  private readonly span: Span | undefined;
  /** Only when someone listens: no clock read per request otherwise. */
  private readonly startedAt: number;
  /** The upstream's status, once its answer started; `complete` once all of it arrived. */
  private upstreamStatus: number | undefined = undefined;
  private complete = false;
  private isEventStream = false;
  /** Bytes of a body that is not an event stream passed on so far. */
  private received = 0;
  /** The `Content-Length` of a body that is not an event stream, when it declared one (the body's last byte is then known). */
  private declaredLength = -1;
  private connectTimer: NodeJS.Timeout | undefined = undefined;
  private idleTimer: NodeJS.Timeout | undefined = undefined;
  private retried = false;
  private renewed = false;
  /** With credentials that have a caller flow (connected accounts): the request as the flow sees it. */
  private flowRequest: CallerFlowRequest | undefined = undefined;
  /** Whether an upstream `insufficient_scope` was already put to the flow (once per request). */
  private scopeChecked = false;
  /** A copy of a connected user's list answer, for the upstream's kept lists (see `listed-answer-copy.ts`). */
  private listedCopy: ListedAnswerCopy | undefined = undefined;
  /** For a session the gateway opened: the upstream's id the request is sent under, and whether it was reopened. */
  private lazyUpstream: string | undefined;
  private reopened = false;
  private clientGone = false;
  private resolve: (() => void) | undefined = undefined;

  /**
   * @param sessionId - The upstream's id of the session the request names (opened, for a sealed id); none when it
   *   names none (an id sent anyway under a stateless revision is ignored, not forwarded).
   * @param releaseId - Gives back the request's JSON-RPC id (see `createPendingRequestIds`), when it claimed one.
   * @param clientCapabilities - What the client declared in its session's `initialize`, when known beside `sessionId`.
   * @param lazyIds - For a session the gateway opened before the upstream's: see {@link LazySessionIds}; its
   *   `upstream` is `sessionId`.
   * @param authorization - The `Authorization` value the credentials already gave for this exchange (opening the
   *   upstream's session for it asked them): sent as it is, so that the credentials are asked once per exchange.
   */
  constructor(
    private readonly settings: HttpUpstreamSettings,
    private readonly req: GuardedRequest,
    private readonly res: ServerResponse,
    private readonly auth: AuthInfo,
    private readonly session: BoundSession | null,
    private readonly sealed: SealedSessionInUse | undefined,
    private readonly sessionId: string | undefined,
    private readonly releaseId: (() => void) | undefined,
    private readonly clientCapabilities?: unknown,
    private readonly lazyIds?: LazySessionIds,
    private readonly authorization?: string,
  ) {
    this.lazyUpstream = lazyIds?.upstream;
    const method = req.method ?? 'POST';
    this.method = method;
    this.isGet = method === 'GET';
    this.headers = forwardedHeaders(req.headers, settings.identity, auth, sessionId, method === 'POST');
    if (method === 'POST') {
      this.body = Buffer.from(JSON.stringify(req.body));
      this.headers['content-type'] = JSON_MEDIA_TYPE;
      this.headers['content-length'] = this.body.length;
    }
    this.startedAt = settings.onExchangeEnd ? performance.now() : 0;
    this.span = startUpstreamSpan(settings.upstream, method, req.body, this.headers, settings.spanName);
  }

  /** Starts the exchange; resolves once it settled, whatever the outcome. */
  run(): Promise<void> {
    const done = new Promise<void>((resolve) => {
      this.resolve = resolve;
    });
    this.settings.exchanges.add(this);
    // An exchange in progress (a GET stream above all) keeps its session from expiring.
    this.session?.acquire();
    (this.req as ExchangeRequest)[EXCHANGE] = this;
    this.res.on('close', onResponseClose);
    const credentials = this.settings.credentials;
    if (!credentials) {
      this.send();
      return done;
    }
    if (credentials.flow) {
      this.runWithFlow(credentials, credentials.flow);
      return done;
    }
    // The token request has its own timeout (the authorization server's); the connect timer starts after it.
    (this.authorization !== undefined ? Promise.resolve(this.authorization) : credentials.authorization(this.auth)).then(
      (value) => {
        if (this.settled) return;
        this.headers.authorization = value;
        this.send();
      },
      (error: unknown) => this.finish(credentialFailure(error)),
    );
    return done;
  }

  /**
   * With credentials the caller acts for (connected accounts): the flow first removes what is the gateway's from the
   * message (a retry's `requestState`), then the credentials are asked; a failure the caller can fix (connect) is
   * answered by the flow, and the upstream is not contacted.
   */
  private runWithFlow(credentials: UpstreamCredentials, flow: CallerFlow): void {
    const request: CallerFlowRequest = { message: this.req.body, auth: this.auth, sessionId: this.sessionId, httpMethod: this.method, ...(this.clientCapabilities !== undefined ? { clientCapabilities: this.clientCapabilities } : {}) };
    this.flowRequest = request;
    flow
      .prepare(request)
      .then(async (answer) => {
        if (this.settled) return;
        if (answer) {
          this.answerInstead(answer);
          return;
        }
        if (request.message !== this.req.body && this.body !== undefined) {
          // The upstream never sees the gateway's own state: the message it gets is the one the flow left.
          this.body = Buffer.from(JSON.stringify(request.message));
          this.headers['content-length'] = this.body.length;
        }
        const value = this.authorization ?? (await credentials.authorization(this.auth));
        if (this.settled) return;
        this.headers.authorization = value;
        this.send();
      })
      .catch((error: unknown) => this.credentialsFailed(error));
  }

  /** The credentials failed: the caller flow's answer when it has one (connect), else the usual refusal. */
  private credentialsFailed(error: unknown): void {
    if (this.settled) return;
    if (error instanceof LazySessionEndedError) return this.sessionEnded();
    const answer = this.flowRequest && this.settings.credentials?.flow?.answer(error, this.flowRequest);
    if (!answer) {
      this.finish(credentialFailure(error));
      return;
    }
    answer.then(
      (value) => this.answerInstead(value),
      (failure: unknown) => this.finish(credentialFailure(failure)),
    );
  }

  /** The client ended the session while the upstream's was being reopened for this request: 404, as for any unknown session. */
  private sessionEnded(): void {
    const answer = sessionNotFoundAnswer(requestIdOf(this.req.body));
    if (!this.clientGone && !this.res.headersSent) writeJson(this.res, answer.status, answer.body);
    this.finish(undefined);
  }

  /** Ends the exchange with the gateway's own answer (the connect flow), written as JSON with its status. */
  private answerInstead(answer: CallerFlowAnswer): void {
    if (this.settled) return;
    this.settings.onAnsweredInstead?.(this.req, answer.denied);
    if (!this.clientGone && !this.res.headersSent) {
      // A server set must never serve this answer (one caller's link) to anyone else.
      markFlowAnswer(this.res);
      writeFlowAnswer(this.res, answer);
    }
    // A session ended by the gateway's answer (a DELETE the upstream could not be sent) is forgotten, as when the
    // upstream answers a DELETE.
    if (this.method === 'DELETE' && answer.status >= 200 && answer.status < 300 && this.session && !this.settings.sealer) this.settings.sessions.forget(this.session.id);
    this.finish(undefined);
  }

  /** Ends the exchange from outside (shutdown): 503 when nothing was sent yet. */
  end(): void {
    this.finish(FAILURES.shutdown);
  }

  /** The client went away: stop the upstream work it asked for. */
  clientClosed(): void {
    if (this.res.writableFinished) return;
    this.clientGone = true;
    this.finish(undefined);
  }

  connectExpired(): void {
    this.finish(FAILURES.connectTimeout);
  }

  idleExpired(): void {
    this.finish(this.upstreamStatus === undefined ? FAILURES.headersTimeout : FAILURES.idleTimeout);
  }

  /**
   * Sends the request on the pool as a new attempt. A request that reaches a pooled connection does so within
   * `dispatch`: only one still waiting for a connection then needs the connect timer.
   */
  private send(): void {
    const attempt = new UpstreamAttempt(this);
    this.attempt = attempt;
    const { dispatcher, origin, path } = this.settings;
    try {
      dispatcher.dispatch({ origin, path, method: this.method, headers: this.headers as Record<string, string>, body: this.body ?? null, headersTimeout: 0, bodyTimeout: 0 }, attempt);
    } catch (error) {
      // undici's pools report every refusal through the handler; a dispatcher that throws instead sent nothing.
      this.finish(unreachable(nodeErrorCode(error as UpstreamError)));
      return;
    }
    if (this.attempt === attempt && !attempt.connected && !this.settled) {
      clearTimeout(this.connectTimer);
      this.connectTimer = setTimeout(onConnectTimer, this.settings.connectTimeoutMs, this);
    }
  }

  attemptConnected(): void {
    // Connected (or a pooled connection, already open): from here on, silence is the upstream's.
    clearTimeout(this.connectTimer);
    this.connectTimer = undefined;
    this.resetIdle();
  }

  attemptFailed(error: UpstreamError): void {
    if (!this.retried && mayRetry(this.method, error)) {
      this.retried = true;
      this.send();
      return;
    }
    this.finish(isTimeout(error) ? FAILURES.connectTimeout : unreachable(nodeErrorCode(error)));
  }

  attemptAnswered(attempt: UpstreamAttempt, controller: Dispatcher.DispatchController, status: number, incoming: IncomingHttpHeaders): void {
    if (this.lazyIds) {
      // The upstream forgot the session the gateway opened for the client: a new one, once, the client none the wiser.
      if (status === 404 && this.lazyIds.reopen && !this.reopened && this.lazyUpstream !== undefined) {
        this.reopenSession(attempt, this.lazyIds.reopen, this.lazyUpstream);
        return;
      }
      // The client knows the session by the gateway's id only.
      if (incoming['mcp-session-id'] === this.lazyUpstream) incoming['mcp-session-id'] = this.lazyIds.client;
    }
    if (this.flowRequest) {
      if (status === 403 && !this.scopeChecked) {
        const challenge = insufficientScopeChallenge(incoming['www-authenticate']);
        if (challenge) {
          this.checkScope(attempt, controller, status, incoming, challenge.scope);
          return;
        }
      }
      const issued = incoming['mcp-session-id'];
      const message = this.req.body;
      // Before sealing replaces it: the flow keeps what the client declared under the upstream's own id.
      if (status >= 200 && status < 300 && typeof issued === 'string' && message && 'method' in message && message.method === 'initialize') {
        this.settings.credentials?.flow?.sessionStarted(issued, message);
      }
    }
    if (this.settings.sealer) this.sealIssuedSession(attempt, controller, status, incoming, this.settings.sealer);
    else this.relayHead(attempt, controller, status, incoming);
  }

  /**
   * The upstream refused the user's token for want of `scope`: the flow decides whether the user is asked to connect
   * again for it (a step-up; the refusal is dropped) or the refusal passes on as it is. Asked once per request.
   */
  private checkScope(attempt: UpstreamAttempt, controller: Dispatcher.DispatchController, status: number, incoming: IncomingHttpHeaders, scope: string | undefined): void {
    this.scopeChecked = true;
    const flow = this.settings.credentials?.flow;
    if (!flow || !this.flowRequest) return;
    controller.pause();
    flow.insufficientScope(this.flowRequest, scope).then(
      (error) => {
        if (this.settled || attempt !== this.attempt) return;
        if (error === undefined) {
          controller.resume();
          this.attemptAnswered(attempt, controller, status, incoming);
          return;
        }
        // The refusal's body is not wanted: its connection is closed rather than read.
        this.attempt = undefined;
        attempt.abort();
        clearTimeout(this.idleTimer);
        this.idleTimer = undefined;
        this.credentialsFailed(error);
      },
      (error: unknown) => {
        if (this.settled || attempt !== this.attempt) return;
        this.attempt = undefined;
        attempt.abort();
        this.finish(credentialFailure(error));
      },
    );
  }

  private resetIdle(): void {
    if (this.idleTimer) this.idleTimer.refresh();
    else this.idleTimer = setTimeout(onIdleTimer, this.settings.idleTimeoutMs, this);
  }

  /**
   * With sealed ids, the session id an answer carries is replaced before anything else looks at the answer:
   * by the id the client named, when the upstream repeats that session's id; by the upstream's id sealed for
   * this caller when it is new (the `initialize` answer); on an error answer, it is dropped. The answer waits
   * the moment sealing takes (its body is held by the attempt until then).
   */
  private sealIssuedSession(attempt: UpstreamAttempt, controller: Dispatcher.DispatchController, status: number, incoming: IncomingHttpHeaders, sealer: SessionSealer): void {
    const issued = incoming['mcp-session-id'];
    const sealed = this.sealed;
    if (issued !== undefined && sealed && issued === sealed.session.upstreamSessionId) {
      incoming['mcp-session-id'] = sealed.sealed;
    } else if (issued !== undefined && (typeof issued !== 'string' || issued === '' || status < 200 || status >= 300)) {
      delete incoming['mcp-session-id'];
    }
    if (typeof issued !== 'string' || incoming['mcp-session-id'] !== issued) {
      this.relayHead(attempt, controller, status, incoming);
      return;
    }
    controller.pause();
    sealer.seal(issued, this.auth).then(
      (value) => {
        if (this.settled || attempt !== this.attempt) return;
        if (attempt.failure) {
          this.finish(reset(nodeErrorCode(attempt.failure)));
          return;
        }
        // Sealed even for a token naming nobody (for its issuer): the upstream's id never reaches the client.
        incoming['mcp-session-id'] = value;
        // Resumed first: what arrives is held by the attempt until relayHead takes it, and a pause for
        // backpressure that relayHead sets must stand.
        controller.resume();
        this.relayHead(attempt, controller, status, incoming);
      },
      () => this.finish(FAILURES.sealFailed),
    );
  }

  /** Takes the upstream's answer: refuses what must not reach the client, else writes the head and relays the body. */
  private relayHead(attempt: UpstreamAttempt, controller: Dispatcher.DispatchController, status: number, incoming: IncomingHttpHeaders): void {
    this.upstreamStatus = status;
    this.resetIdle();
    if (status === 401 && this.settings.credentials && !this.renewed) {
      this.renew(attempt, this.settings.credentials);
      return;
    }
    const flow = this.flowRequest && this.settings.credentials?.flow;
    if (status === 401 && flow) {
      this.refusedAfterRenewal(attempt, flow, this.flowRequest!);
      return;
    }
    if (status === 401 || status === 407) {
      // The upstream wants credentials the gateway does not hold. Passing its 401 on would make the client
      // believe its own (valid) token was refused and start authorizing again, in a loop.
      this.finish(FAILURES.refusedGateway);
      return;
    }
    const isEventStream = mediaType(incoming['content-type']) === EVENT_STREAM_MEDIA_TYPE;
    this.isEventStream = isEventStream;
    const declared = Number(incoming['content-length']);
    if (!isEventStream && Number.isFinite(declared) && declared > this.settings.maxResponseBytes) {
      this.finish(FAILURES.tooLarge);
      return;
    }
    if (!isEventStream && Number.isSafeInteger(declared) && declared > 0) this.declaredLength = declared;
    if (this.flowRequest) this.listedCopy = listedAnswerCopy(this.settings.credentials?.keptLists, this.flowRequest.message, status, incoming['content-type']);
    if (!this.trackSession(status, incoming)) {
      this.finish(FAILURES.sessionConflict);
      return;
    }
    // A resumed stream may replay the answer to an earlier list request or read: the pipeline filters every
    // event of a GET's stream by its shape (see `filterListResponse`), so it is not filtered a second time here.
    const headers = responseHeaders(incoming);
    if (isEventStream) headers[NO_PROXY_BUFFERING.name] = NO_PROXY_BUFFERING.value;
    this.res.writeHead(status, headers);
    // Event streams must reach the client event by event, not when a buffer fills.
    if (isEventStream) this.res.flushHeaders();
    attempt.deliver(controller);
  }

  /**
   * The upstream answered 404 for the session the gateway opened for the client: its refusal is dropped, a new
   * upstream session is opened, and the buffered request is sent once more under it. A failure to open one is
   * answered as a credential failure (the connect flow when the user must connect again).
   */
  private reopenSession(attempt: UpstreamAttempt, reopen: NonNullable<LazySessionIds['reopen']>, gone: string): void {
    this.reopened = true;
    this.attempt = undefined;
    attempt.abort();
    clearTimeout(this.idleTimer);
    this.idleTimer = undefined;
    const sent = this.headers.authorization;
    reopen(gone, typeof sent === 'string' ? sent : undefined).then(
      (id) => {
        if (this.settled) return;
        this.lazyUpstream = id === '' ? undefined : id;
        if (id === '') delete this.headers['mcp-session-id'];
        else this.headers['mcp-session-id'] = id;
        this.send();
      },
      (error: unknown) => this.credentialsFailed(error),
    );
  }

  /**
   * The upstream refused the caller's token even after it was renewed: the flow leads the caller to connect again
   * (ending the connection, so that later requests do not each refresh it in vain), or the refusal stays the
   * gateway's (502) for a connection just made.
   */
  private refusedAfterRenewal(attempt: UpstreamAttempt, flow: CallerFlow, request: CallerFlowRequest): void {
    this.attempt = undefined;
    attempt.abort();
    clearTimeout(this.idleTimer);
    this.idleTimer = undefined;
    flow.refusedAfterRenewal(request).then(
      (failure) => (failure === undefined ? this.finish(FAILURES.refusedGateway) : this.credentialsFailed(failure)),
      () => this.finish(FAILURES.refusedGateway),
    );
  }

  /**
   * The upstream refused the gateway's token (expired early, revoked, rotated): renew it and send the request
   * once more. The body is the buffered message, so replaying it is safe.
   */
  private renew(attempt: UpstreamAttempt, credentials: UpstreamCredentials): void {
    this.renewed = true;
    // The refusal's body is not wanted: its connection is closed rather than left to an unbounded body.
    this.attempt = undefined;
    attempt.abort();
    clearTimeout(this.idleTimer);
    this.idleTimer = undefined;
    credentials.renew(this.auth, String(this.headers.authorization)).then(
      (value) => {
        if (this.settled) return;
        if (value === undefined) {
          this.finish(FAILURES.refusedGateway);
          return;
        }
        this.headers.authorization = value;
        this.upstreamStatus = undefined;
        this.send();
      },
      (error: unknown) => this.credentialsFailed(error),
    );
  }

  /**
   * Keeps the session registry in step with the upstream's answer. Returns false when the upstream issued
   * a session id bound to another caller (a broken or hostile upstream): that answer must not be passed on.
   */
  private trackSession(status: number, headers: IncomingHttpHeaders): boolean {
    // Sealed sessions are held by no one: their ids were sealed or replaced as the answer came in.
    if (this.settings.sealer) return true;
    const ok = status >= 200 && status < 300;
    const session = this.session;
    if (session && (status === 404 || (ok && this.method === 'DELETE'))) {
      // Ended, or unknown to the upstream (expired there, or the upstream restarted).
      this.settings.sessions.forget(session.id);
      return true;
    }
    if (!ok) return true;
    const issued = headers['mcp-session-id'];
    if (typeof issued === 'string' && issued !== '' && issued !== session?.id) {
      // A token without identity is not bound; its later requests naming the session get 404.
      if (this.settings.sessions.bind(issued, this.auth) === 'conflict') return false;
    }
    return true;
  }

  answerData(chunk: Buffer, controller: Dispatcher.DispatchController): void {
    if (this.settled) return;
    this.resetIdle();
    this.listedCopy?.push(chunk);
    if (!this.isEventStream) {
      this.received += chunk.length;
      if (this.received > this.settings.maxResponseBytes) {
        this.finish(FAILURES.grewTooLarge);
        return;
      }
      if (this.received === this.declaredLength) {
        // The body's last bytes (the whole of a small answer): the answer ends with them, one call to the response
        // (and to the pipeline's filter) instead of a write and an end; the upstream's end follows at once.
        this.res.end(chunk);
        return;
      }
    }
    if (!this.res.write(chunk) && !controller.paused) {
      // Backpressure: a slow client slows the upstream instead of filling the gateway's memory.
      controller.pause();
      this.res.once('drain', () => {
        // Bytes moving to the client count as activity: a slow reader is not an idle upstream.
        this.resetIdle();
        controller.resume();
      });
    }
  }

  answerEnd(): void {
    const whole = !this.settled;
    this.complete = true;
    this.finish(undefined);
    // Read once the client has its answer: the copy is the gateway's own business.
    if (whole) this.listedCopy?.end();
  }

  answerFailed(error: UpstreamError): void {
    this.finish(reset(nodeErrorCode(error)));
  }

  /**
   * Ends the exchange once. `failure` undefined: the upstream answer is complete, or the client left.
   * With a status and nothing sent yet, the client gets that status and a JSON-RPC error; once the
   * response has started, an event stream is ended cleanly (the client may resume with Last-Event-ID)
   * and any other body is cut, since a truncated JSON body must not look complete.
   */
  finish(failure: ExchangeFailure | undefined): void {
    if (this.settled) return;
    this.settled = true;
    clearTimeout(this.connectTimer);
    clearTimeout(this.idleTimer);
    this.settings.exchanges.delete(this);
    this.session?.release();
    this.releaseId?.();
    const res = this.res;
    res.off('close', onResponseClose);
    (this.req as ExchangeRequest)[EXCHANGE] = undefined;
    this.complete &&= failure === undefined;
    if (this.attempt && !this.complete) this.attempt.abort();
    if (failure) this.settings.onUpstreamError?.(this.req, { reason: failure.reason, ...(res.headersSent ? {} : { status: failure.status }), ...(failure.code ? { code: failure.code } : {}) });
    if (!this.clientGone && !res.writableEnded) {
      if (this.complete) res.end();
      else if (!res.headersSent) writeGatewayError(res, failure?.status ?? 502, requestIdOf(this.req.body), failure?.message ?? CLOSED_TEXT, failure?.retryAfter, failure?.jsonRpcCode);
      else if (this.isEventStream) res.end();
      else res.destroy();
    }
    // Known only once the answer has ended: a whole answer the guard could not filter, and replaced, failed too.
    const reason = failure?.reason ?? this.unfilterable();
    if (this.span) endUpstreamSpan(this.span, this.upstreamStatus, reason);
    if (this.settings.onExchangeEnd) this.reportEnd(this.settings.onExchangeEnd, reason);
    this.resolve?.();
  }

  /** `upstream_unfilterable`, told to `onUpstreamError`, when the upstream's answer was replaced as unfilterable. */
  private unfilterable(): 'upstream_unfilterable' | undefined {
    const replaced = unfilterableReplacement(this.res);
    if (replaced === undefined) return undefined;
    this.settings.onUpstreamError?.(this.req, { reason: 'upstream_unfilterable', ...replaced });
    return 'upstream_unfilterable';
  }

  private reportEnd(onExchangeEnd: NonNullable<UpstreamHooks['onExchangeEnd']>, reason: UpstreamFailureReason | undefined): void {
    const outcome = reason ?? (this.clientGone ? 'client_closed' : 'complete');
    try {
      onExchangeEnd(this.req, { httpMethod: this.method, durationMs: performance.now() - this.startedAt, status: this.upstreamStatus, outcome });
    } catch {
      // Metrics must never break serving.
    }
  }
}
