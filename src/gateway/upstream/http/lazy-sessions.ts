/**
 * Sessions the gateway opened before the upstream's (connected accounts, revisions with sessions): a single upstream
 * in connected mode opens its session with the user's own token, which a user who has not connected yet does not
 * have. So that the client's `initialize` still succeeds, the gateway answers it and opens the upstream's session
 * on the first request the user's connection can serve, with the client's own `initialize`. Until then every
 * request of the session gets the connect answer, chosen by the capabilities that `initialize` declared.
 */
import { randomBytes } from 'node:crypto';
import type { Dispatcher } from 'undici';
import type { AuthInfo } from '../../../core/kernel/auth-info.js';
import { waitBounded } from '../../../core/kernel/bounded-wait.js';
import { negotiatedSessionVersion } from '../../../core/mcp/protocol-version.js';
import { createSessionRegistry, type BoundSession, type SessionRegistry } from '../../../core/session/session-registry.js';
import type { JsonRpcRequest } from '../../../core/wire/jsonrpc.js';
import { JSON_MEDIA_TYPE, MCP_POST_ACCEPT } from '../../../http/media-type.js';
import { profileAtRevision } from '../../upstream-auth/kept-profile.js';
import type { SessionOpenRefusalReason } from '../session-open-refusal.js';
import type { UpstreamCredentials } from '../../upstream-auth/upstream-credentials.js';
import { LazySessionEndedError } from './lazy-session-ended.js';
import { readUpstreamProfile, type UpstreamProfile } from './upstream-profile.js';
import { SHUTDOWN_SESSION_ENDS_TIMEOUT_MS, type UpstreamSessionToEnd } from './upstream-session-ends.js';

/** Prefix of the ids of sessions opened by the gateway, so that they are told from the upstream's at a glance. */
const LAZY_PREFIX = 'mcpg-lazy-';

/** One session the gateway opened: the client's `initialize`, and the upstream's session once opened. */
export interface LazySession {
  readonly initialize: JsonRpcRequest;
  /**
   * Its caller, without the token: whose credentials end the upstream's session when the gateway forgets this one.
   * The token itself is not kept (the credentials key on the verified identity).
   */
  readonly caller: AuthInfo;
  /** The upstream's id, once its session is open; `''` when the upstream keeps no sessions. */
  upstreamId?: string;
  /** The opening in progress, shared by concurrent requests. */
  opening?: Promise<LazyUpstreamSession>;
}

/**
 * The upstream's session of a {@link LazySession}: its id (`''` when the upstream keeps none), and the
 * `Authorization` value it was opened with when the request that asked opened it (or shared the opening).
 */
export interface LazyUpstreamSession {
  readonly id: string;
  readonly authorization?: string;
}

/** Where the upstream is, for opening a session there. */
export interface LazyOpenTarget {
  readonly dispatcher: Dispatcher;
  readonly origin: string;
  readonly path: string;
  readonly timeoutMs: number;
}

/** Bounds of {@link LazySessions}, those of the gateway's other sessions. */
export interface LazySessionBounds {
  /** Most sessions held (`MCP_AUTH_MAX_SESSIONS`). */
  readonly maxSessions: number;
  /** Most sessions one caller holds (`MCP_AUTH_MAX_SESSIONS_PER_CALLER`). */
  readonly maxSessionsPerCaller: number;
  /** Idle life of a session, in milliseconds (`MCP_AUTH_SESSION_IDLE_TIMEOUT_MS`); 0 never expires one. */
  readonly idleTimeoutMs: number;
  /** Most bytes of kept `initialize` requests, by their JSON text. Default the registry's (`DEFAULT_MAX_SESSION_BYTES`). */
  readonly maxBytes?: number | undefined;
  /** Clock, in milliseconds. Default `Date.now`. */
  readonly now?: (() => number) | undefined;
  /**
   * Called when the gateway forgets a session (idle expiry, eviction at a bound) whose upstream session it opened,
   * with what ends that one, once no request of the session is in progress any more; at once at shutdown; and for an
   * upstream session whose opening completed after the client ended its session or shutdown began. Not called for a session the client
   * ended itself once open (its DELETE is forwarded), nor for an upstream that keeps no sessions. Default none: the
   * upstream expires its sessions itself.
   */
  readonly onUpstreamForgotten?: ((session: UpstreamSessionToEnd) => void) | undefined;
  /** Called with the id of each session forgotten here (expired, evicted, closed), so that other holders of it let it go. */
  readonly onForgotten?: ((id: string) => void) | undefined;
}

/**
 * Per session: requests in progress; whether the registry forgot it (what ends the upstream's session waits for no
 * request being in progress); whether it was ended (the client's DELETE, shutdown), after which nothing may use or
 * open an upstream session for it.
 */
interface LazySessionState {
  holds: number;
  forgotten: boolean;
  ended: boolean;
}

/** How often idle sessions are swept, in milliseconds: a quarter of the idle timeout, within 50 ms and a minute. */
function sweepIntervalMs(idleTimeoutMs: number): number {
  return Math.max(50, Math.min(60_000, Math.floor(idleTimeoutMs / 4)));
}

/**
 * The gateway's sessions awaiting (or holding) the upstream's, kept in the project's one session registry
 * (`createSessionRegistry`) with the bounds of the gateway's other sessions: each bound to its caller, at most
 * `maxSessionsPerCaller` per caller and `maxSessions` in all (past either the least recently used is forgotten,
 * sessions with no request in progress first), and at most `maxBytes` of kept `initialize` requests (by their
 * JSON text; past it too the least recently used go), and one with no request in progress and no use for `idleTimeoutMs`
 * expires (swept every quarter of the idle timeout, so that the upstream's session is ended soon after). A forgotten
 * one is unknown: its client's next request gets 404, and the client starts a new session; the upstream's session
 * opened for it is handed to `onUpstreamForgotten`.
 */
export class LazySessions {
  private readonly registry: SessionRegistry<LazySession>;
  /**
   * What the upstream said of itself in the `initialize` answer of the last session opened there (for any user), once
   * one was; {@link lazyInitializeResult} answers with the credentials' kept profile (the newest known, across
   * replicas) when there is one at the client's revision, else with this. One small object, bounded
   * (`MAX_UPSTREAM_PROFILE_BYTES`).
   */
  profile: UpstreamProfile | undefined;
  private readonly states = new WeakMap<LazySession, LazySessionState>();
  private readonly sweepTimer: NodeJS.Timeout | undefined;
  /** Openings of upstream sessions in progress: shutdown waits for them, so that what they open is ended. */
  private readonly openings = new Set<Promise<unknown>>();
  private closed = false;

  constructor(private readonly bounds: LazySessionBounds) {
    this.registry = createSessionRegistry<LazySession>({
      maxSessions: bounds.maxSessions,
      maxSessionsPerCaller: bounds.maxSessionsPerCaller,
      idleTimeoutMs: bounds.idleTimeoutMs,
      ...(bounds.maxBytes !== undefined ? { maxBytes: bounds.maxBytes } : {}),
      ...(bounds.now ? { now: bounds.now } : {}),
      onForget: (session) => {
        this.forgotten(session.value);
        bounds.onForgotten?.(session.id);
      },
    });
    // Without the sweep an idle session would be found expired only when looked up or when another is bound, and the
    // upstream's session would be ended that late. Unreferenced: it never keeps the process alive.
    if (bounds.idleTimeoutMs > 0 && bounds.onUpstreamForgotten) this.sweepTimer = setInterval(() => this.registry.sweep(), sweepIntervalMs(bounds.idleTimeoutMs)).unref();
  }

  /**
   * Shutdown: stops the sweep and forgets every session, handing over at once each upstream session opened (requests
   * in progress are being ended with the gateway). Resolves once every opening in progress has completed, each handing
   * over the upstream session it opened as it does, or after `timeoutMs`, in milliseconds (default
   * {@link SHUTDOWN_SESSION_ENDS_TIMEOUT_MS}; the openings left go on
   * unawaited: what they open is left for the upstream to expire). So that what is handed over is still ended, the
   * caller closes what ends them only afterwards. Never rejects.
   */
  async close(timeoutMs = SHUTDOWN_SESSION_ENDS_TIMEOUT_MS): Promise<void> {
    clearInterval(this.sweepTimer);
    this.closed = true;
    this.registry.clear();
    if (this.openings.size > 0) await waitBounded(Promise.allSettled([...this.openings]), { timeoutMs });
  }

  /** Whether `id` names a session the gateway opened (by its shape: the id itself may be unknown here). */
  static isLazyId(id: string | undefined): boolean {
    return id !== undefined && id.startsWith(LAZY_PREFIX);
  }

  /**
   * Opens one for `initialize`, bound to the caller of `auth`, and returns its id (random, 32 bytes); or why it could
   * not be kept: `'no_identity'` for a token naming nobody, `'busy'` when the registry has no room for it (its
   * `initialize` alone is larger than `maxBytes`, or every slot is in use). No id is given for a session nobody holds.
   */
  create(initialize: JsonRpcRequest, auth: AuthInfo): string | SessionOpenRefusalReason {
    const id = `${LAZY_PREFIX}${randomBytes(32).toString('base64url')}`;
    // What the session retains is the client's `initialize`, as large as the body limit: counted by its JSON text's bytes.
    const outcome = this.registry.bind(id, auth, { initialize, caller: { ...auth, token: '' } }, Buffer.byteLength(JSON.stringify(initialize)));
    if (outcome === 'bound') return id;
    return outcome === 'no_identity' ? 'no_identity' : 'busy';
  }

  /** The session `id` names, unless unknown, expired or another caller's. Counts as use. */
  get(id: string, auth: AuthInfo): BoundSession<LazySession> | undefined {
    const found = this.registry.lookup(id, auth);
    return 'session' in found ? found.session : undefined;
  }

  /**
   * Marks a request of `session` in progress until `done` settles (a GET stream above all): the session does not
   * expire, nor is it evicted before idle ones, meanwhile, and its end counts as use.
   */
  hold<T>(session: BoundSession<LazySession>, done: Promise<T>): Promise<T> {
    const state = this.stateOf(session.value);
    state.holds++;
    session.acquire();
    return done.finally(() => {
      session.release();
      // Evicted while in use (every session was): the upstream's session served this request to its end.
      if (--state.holds === 0 && state.forgotten) this.endUpstream(session.value);
    });
  }

  /**
   * Forgets a session its client ended. Once its upstream session is open, the client's DELETE goes there itself and
   * nothing more is sent for it; one still being opened is ended when its opening completes (see
   * {@link upstreamSession}).
   */
  forget(id: string, session: LazySession): void {
    this.stateOf(session).ended = true;
    this.registry.forget(id, false);
  }

  /** Forgets the session `id` names, if held, as at a bound: its upstream session is ended once no request uses it. */
  drop(id: string): void {
    this.registry.forget(id);
  }

  /**
   * The upstream's session for `session`, opened with `caller`'s credentials on first use: the client's own
   * `initialize`, then `notifications/initialized`. The opening asks the credentials once, unless given the
   * `authorization` the request already holds; a request that opened the session (or shared its opening) gets that
   * value back, so that its own exchange does not ask again. Rejects with the credentials' error (the connect flow's
   * to answer), or an Error when the upstream gives no session.
   *
   * A session ended (its client's DELETE, shutdown) before its opening completes: the upstream session just opened is
   * handed to `onUpstreamForgotten` at once, since nobody else knows of it any more, and the requests that waited for
   * it reject with {@link LazySessionEndedError}. They are answered 404, not sent on: the client ended the session,
   * and a request served through an upstream session being ended could not be told from one cut off by the DELETE.
   */
  upstreamSession(session: LazySession, caller: AuthInfo, credentials: UpstreamCredentials, target: LazyOpenTarget, authorization?: string): Promise<LazyUpstreamSession> {
    if (this.stateOf(session).ended) return Promise.reject(new LazySessionEndedError());
    if (session.upstreamId !== undefined) return Promise.resolve({ id: session.upstreamId });
    session.opening ??= (async () => {
      const value = authorization ?? (await credentials.authorization(caller));
      const { id, profile } = await openUpstreamSession(session.initialize, value, target);
      return { id, authorization: value, profile };
    })().then(
      ({ id, authorization: value, profile }) => {
        if (profile !== undefined) {
          this.profile = profile;
          // Kept for a restart and for other replicas; written only when it differs from the kept one.
          void credentials.profile?.learnt(profile);
        }
        session.upstreamId = id;
        session.opening = undefined;
        // Closed meanwhile: the requests still in progress are being ended with the gateway.
        if (this.stateOf(session).ended || this.closed) {
          this.endUpstream(session);
          throw new LazySessionEndedError();
        }
        return { id, authorization: value };
      },
      (error: unknown) => {
        session.opening = undefined;
        throw this.stateOf(session).ended ? new LazySessionEndedError() : error;
      },
    );
    const opening = session.opening;
    this.openings.add(opening);
    void opening.catch(() => undefined).finally(() => this.openings.delete(opening));
    return opening;
  }

  private stateOf(session: LazySession): LazySessionState {
    let state = this.states.get(session);
    if (!state) this.states.set(session, (state = { holds: 0, forgotten: false, ended: false }));
    return state;
  }

  /**
   * The registry forgot `session` (expired, evicted): its upstream session is ended once no request uses it; at once
   * at shutdown, whose requests are all being ended.
   */
  private forgotten(session: LazySession): void {
    const state = this.stateOf(session);
    state.forgotten = true;
    state.ended ||= this.closed;
    if (state.holds === 0 || this.closed) this.endUpstream(session);
  }

  private endUpstream(session: LazySession): void {
    const upstreamId = session.upstreamId;
    // `''`: the upstream keeps no sessions. Cleared first, so that nothing ends the same session twice.
    if (upstreamId === undefined || upstreamId === '' || !this.bounds.onUpstreamForgotten) return;
    session.upstreamId = undefined;
    this.bounds.onUpstreamForgotten({ upstreamId, protocolVersion: negotiatedSessionVersion(session.initialize.params?.protocolVersion), caller: session.caller });
  }

  /**
   * A new upstream session for `session`, the upstream having answered 404 for `gone` (it restarted, or expired the
   * session): opened as on first use, with the `authorization` the request was sent with when given. Requests that
   * found `gone` at once share one opening; one that comes after the new session is open gets that one.
   */
  reopen(session: LazySession, gone: string, caller: AuthInfo, credentials: UpstreamCredentials, target: LazyOpenTarget, authorization?: string): Promise<LazyUpstreamSession> {
    if (session.upstreamId === gone) session.upstreamId = undefined;
    return this.upstreamSession(session, caller, credentials, target, authorization);
  }
}

/**
 * The gateway's answer to an `initialize` whose upstream session waits for the user's connection: the revision the
 * client asked for when the gateway speaks it, the gateway's `serverInfo`, and the upstream's capabilities from
 * `profile` when it was learnt at that revision (never its instructions, which were another user's), else the
 * capabilities a connected server may offer (tools, prompts and resources).
 */
export function lazyInitializeResult(initialize: JsonRpcRequest, info: { readonly name: string; readonly version: string }, profile?: UpstreamProfile): Record<string, unknown> {
  const protocolVersion = negotiatedSessionVersion(initialize.params?.protocolVersion);
  const current = profileAtRevision(profile, protocolVersion);
  if (current !== undefined) {
    return { protocolVersion, capabilities: current.capabilities, serverInfo: info };
  }
  return { protocolVersion, capabilities: { tools: { listChanged: true }, prompts: { listChanged: true }, resources: { listChanged: true } }, serverInfo: info };
}

/**
 * Opens the upstream's session with the client's `initialize`, then `notifications/initialized`; gives its id (`''`
 * for an upstream without sessions) and what the upstream said of itself, when its answer could be read.
 */
async function openUpstreamSession(initialize: JsonRpcRequest, authorization: string, target: LazyOpenTarget): Promise<{ id: string; profile: UpstreamProfile | undefined }> {
  const post = async (body: object, headers: Record<string, string>, read?: JsonRpcRequest['id']): Promise<{ status: number; sessionId: string | undefined; profile: UpstreamProfile | undefined }> => {
    const answer = await target.dispatcher.request({
      origin: target.origin,
      path: target.path,
      method: 'POST',
      headers: { 'content-type': JSON_MEDIA_TYPE, accept: MCP_POST_ACCEPT, authorization, ...headers },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(target.timeoutMs),
    });
    // The client was answered already: the body (JSON or a short event stream) is read only for the upstream's
    // profile, else dropped.
    const profile = read === undefined ? await answer.body.dump({ limit: 1 << 20 }).then(() => undefined, () => undefined) : await readUpstreamProfile(answer, read);
    const id = answer.headers['mcp-session-id'];
    return { status: answer.statusCode, sessionId: typeof id === 'string' && id !== '' ? id : undefined, profile };
  };
  const opened = await post(initialize, {}, initialize.id);
  if (opened.status < 200 || opened.status >= 300) throw new Error(`the upstream answered initialize with HTTP ${opened.status}`);
  const version = negotiatedSessionVersion(initialize.params?.protocolVersion);
  // An upstream without sessions gives no id: its requests then name none.
  const session: Record<string, string> = opened.sessionId === undefined ? {} : { 'mcp-session-id': opened.sessionId };
  await post({ jsonrpc: '2.0', method: 'notifications/initialized' }, { ...session, 'mcp-protocol-version': version });
  return { id: opened.sessionId ?? '', profile: opened.profile };
}
