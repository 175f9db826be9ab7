/**
 * The single HTTP upstream's part in sessions the gateway opens before the upstream's (see `lazy-sessions.ts`):
 * an `initialize` from a user who has not connected is answered here, and each later request of that session
 * either gets the connect answer or, once the user has connected, goes to the upstream's session opened for it.
 */
import type { ServerResponse } from 'node:http';
import type { BoundSession } from '../../../core/session/session-registry.js';
import type { JsonRpcRequest } from '../../../core/wire/jsonrpc.js';
import { requestIdOf } from '../../../core/wire/jsonrpc.js';
import type { GuardedRequest, HttpHandlerContext } from '../../../http/http-handler.js';
import { refuseSession, type SessionRefusedHook } from '../../../http/session-gate.js';
import { writeAccepted, writeJson } from '../../../http/write-response.js';
import { isStatelessRevision, negotiatedSessionVersion } from '../../../core/mcp/protocol-version.js';
import type { CallerFlow } from '../../upstream-auth/caller-flow.js';
import { writeFlowAnswer } from '../../upstream-auth/flow-answer-mark.js';
import { profileAtRevision } from '../../upstream-auth/kept-profile.js';
import type { UpstreamCredentials } from '../../upstream-auth/upstream-credentials.js';
import { writeGatewayError } from '../gateway-error.js';
import { writeSessionOpenRefusal } from '../session-open-refusal.js';
import { credentialFailure } from './exchange-failure.js';
import { HttpExchange, type HttpUpstreamSettings, type LazySessionIds, type SealedSessionInUse } from './http-exchange.js';
import { LazySessionEndedError } from './lazy-session-ended.js';
import { lazyInitializeResult, type LazySession, type LazySessions, type LazyUpstreamSession } from './lazy-sessions.js';

/** An `initialize` of a revision with sessions (2026-07-28 has none), sent without a session. */
export function isSessionInitialize(req: GuardedRequest): boolean {
  const message = req.body;
  if (req.method !== 'POST' || !message || !('method' in message) || message.method !== 'initialize' || !('id' in message)) return false;
  const version = (message as JsonRpcRequest).params?.protocolVersion;
  return !(typeof version === 'string' && isStatelessRevision(version));
}

/** A request naming a session the gateway opened, as the forwarder found it. */
export interface LazyRequest {
  readonly session: BoundSession | null;
  readonly sealed: SealedSessionInUse | undefined;
  /** The id the client knows the session by (unsealed, or opened from the sealed id). */
  readonly clientId: string;
  readonly releaseId: (() => void) | undefined;
}

/** One upstream's sessions opened by the gateway, and how their requests are served. */
export class LazyForwarding {
  constructor(
    private readonly settings: HttpUpstreamSettings,
    private readonly credentials: UpstreamCredentials,
    private readonly flow: CallerFlow,
    private readonly sessions: LazySessions,
    private readonly serverInfo: { readonly name: string; readonly version: string },
    private readonly onSessionRefused: SessionRefusedHook | undefined,
  ) {}

  /**
   * An `initialize`: forwarded as ever (`forward`, with the `Authorization` value the credentials gave) when the
   * user's credentials serve, else answered here with a
   * session of the gateway's, bound to the caller (or sealed for it), whose client capabilities are kept.
   */
  async initialize(req: GuardedRequest, res: ServerResponse, context: HttpHandlerContext, forward: (authorization?: string) => Promise<void>): Promise<void> {
    let authorization: string;
    try {
      authorization = await this.credentials.authorization(context.auth);
    } catch (error) {
      if (this.flow.needsConnection(error)) return this.answerInitialize(req, res, context);
      // Any other failure is the exchange's to answer, as for every request.
      return forward();
    }
    // The value just given is sent: the credentials are asked once for this exchange.
    return forward(authorization);
  }

  /**
   * A request of a session the gateway opened: the connect answer, or the upstream's session once it can be opened.
   * The gate's session (`request.session`, unsealed ids) is in use from here until the request is answered, waiting
   * for the opening of the upstream's session included, so that it neither expires nor is evicted meanwhile; the
   * exchange with the upstream, if any, holds it once more for itself.
   */
  async forward(req: GuardedRequest, res: ServerResponse, context: HttpHandlerContext, request: LazyRequest): Promise<void> {
    request.session?.acquire();
    try {
      const found = this.sessions.get(request.clientId, context.auth);
      // Unknown here (expired, past the bound, a restart, another replica): the answer to any unknown session, 404,
      // and the client starts a new session. Not forwarded: the upstream never issued this id.
      if (!found) return this.refuseUnknown(req, res, context, request);
      return await this.sessions.hold(found, this.forwardHeld(req, res, context, request, found.value));
    } finally {
      request.session?.release();
    }
  }

  private async forwardHeld(req: GuardedRequest, res: ServerResponse, context: HttpHandlerContext, request: LazyRequest, lazy: LazySession): Promise<void> {
    const message = req.body;
    const capabilities = lazy.initialize.params?.capabilities;
    if (req.method === 'DELETE') {
      // First, so that the gate's registry forgetting it too does not end the upstream's session a second time.
      this.sessions.forget(request.clientId, lazy);
      if (!request.sealed) this.settings.sessions.forget(request.clientId);
      if (lazy.upstreamId === undefined) return this.done(res, request, () => res.writeHead(200, { 'Content-Length': '0' }).end());
      return this.exchange(req, res, context, request, lazy.upstreamId, capabilities);
    }
    if (lazy.upstreamId === undefined && message && 'method' in message && !('id' in message)) return this.done(res, request, () => writeAccepted(res));
    if (lazy.upstreamId === undefined && req.method === 'GET') return this.done(res, request, () => res.writeHead(405, { Allow: 'POST, DELETE', 'Content-Length': '0' }).end());
    const target = { dispatcher: this.settings.dispatcher, origin: this.settings.origin, path: this.settings.path, timeoutMs: this.settings.idleTimeoutMs };
    let upstream: LazyUpstreamSession;
    try {
      upstream = await this.sessions.upstreamSession(lazy, context.auth, this.credentials, target);
    } catch (error) {
      // The client's DELETE came while this request waited for the opening: the session no longer exists.
      if (error instanceof LazySessionEndedError) return this.refuseUnknown(req, res, context, request);
      const answer = this.flow.needsConnection(error) ? this.flow.answer(error, { message, auth: context.auth, sessionId: request.clientId, httpMethod: req.method ?? 'POST', clientCapabilities: capabilities }) : undefined;
      if (!answer) {
        const failure = credentialFailure(error);
        return this.done(res, request, () => writeGatewayError(res, failure.status ?? 502, requestIdOf(message), failure.message ?? 'Bad gateway', failure.retryAfter, failure.jsonRpcCode));
      }
      const value = await answer;
      this.settings.onAnsweredInstead?.(req, value.denied);
      return this.done(res, request, () => writeFlowAnswer(res, value));
    }
    const reopen = (gone: string, authorization: string | undefined): Promise<string> =>
      this.sessions.reopen(lazy, gone, context.auth, this.credentials, target, authorization).then(({ id }) => id);
    // Opening the upstream's session asked the credentials: their value serves this request too.
    return this.exchange(req, res, context, request, upstream.id, capabilities, reopen, upstream.authorization);
  }

  private async answerInitialize(req: GuardedRequest, res: ServerResponse, context: HttpHandlerContext): Promise<void> {
    const initialize = req.body as JsonRpcRequest;
    // The kept profile is the newest known: learnt here, by an earlier run, or by another replica since.
    const kept = profileAtRevision(await this.credentials.profile?.read(), negotiatedSessionVersion(initialize.params?.protocolVersion));
    const profile = kept ?? this.sessions.profile;
    const id = this.sessions.create(initialize, context.auth);
    // Not kept (a token naming nobody, no room): refused as every session the gateway opens itself, never an id nobody holds.
    if (id === 'no_identity' || id === 'busy') return writeSessionOpenRefusal(res, initialize.id, id);
    const result = { jsonrpc: '2.0', id: initialize.id, result: lazyInitializeResult(initialize, this.serverInfo, profile) };
    if (this.settings.sealer) {
      return this.settings.sealer.seal(id, context.auth).then(
        (sealed) => writeJson(res, 200, result, { 'Mcp-Session-Id': sealed }),
        () => writeGatewayError(res, 502, initialize.id, 'Bad gateway: the session could not be sealed'),
      );
    }
    // The gate holds it too: without room there either, the session is let go and refused alike.
    if (this.settings.sessions.bind(id, context.auth) !== 'bound') {
      this.sessions.drop(id);
      return writeSessionOpenRefusal(res, initialize.id, 'busy');
    }
    writeJson(res, 200, result, { 'Mcp-Session-Id': id });
  }

  /**
   * Forwards to the upstream's session `upstreamId` (`''`: the upstream keeps none, so the request names none);
   * with `reopen`, a 404 from the upstream opens a new session for it (see {@link LazySessionIds}).
   */
  private exchange(req: GuardedRequest, res: ServerResponse, context: HttpHandlerContext, request: LazyRequest, upstreamId: string, capabilities: unknown, reopen?: LazySessionIds['reopen'], authorization?: string): Promise<void> {
    const sessionId = upstreamId === '' ? undefined : upstreamId;
    const lazyIds: LazySessionIds | undefined = sessionId === undefined ? undefined : { client: request.clientId, upstream: sessionId, ...(reopen ? { reopen } : {}) };
    return new HttpExchange(this.settings, req, res, context.auth, request.session, request.sealed, sessionId, request.releaseId, capabilities ?? context.clientCapabilities, lazyIds, authorization).run();
  }

  /** 404 `Session not found`, the answer to any unknown session. */
  private refuseUnknown(req: GuardedRequest, res: ServerResponse, context: HttpHandlerContext, request: LazyRequest): void {
    this.done(res, request, () => refuseSession(req, res, { reason: 'session_unknown', sessionId: request.clientId }, context.auth, this.onSessionRefused));
  }

  /** Ends a request answered here: its JSON-RPC id given back (its session is released by {@link forward}). */
  private done(res: ServerResponse, request: LazyRequest, write: () => void): void {
    try {
      if (!res.headersSent) write();
    } finally {
      request.releaseId?.();
    }
  }
}
