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
import { negotiatedSessionVersion } from '../../../core/mcp/protocol-version.js';
import type { JsonRpcRequest } from '../../../core/wire/jsonrpc.js';
import { JSON_MEDIA_TYPE, MCP_POST_ACCEPT } from '../../../http/media-type.js';
import type { UpstreamCredentials } from '../../upstream-auth/upstream-credentials.js';
import { readUpstreamProfile, type UpstreamProfile } from './upstream-profile.js';

/** Prefix of the ids of sessions opened by the gateway, so that they are told from the upstream's at a glance. */
const LAZY_PREFIX = 'mcpg-lazy-';

/** One session the gateway opened: the client's `initialize`, and the upstream's session once opened. */
export interface LazySession {
  readonly initialize: JsonRpcRequest;
  /** The upstream's id, once its session is open; `''` when the upstream keeps no sessions. */
  upstreamId?: string;
  /** The opening in progress, shared by concurrent requests. */
  opening?: Promise<string>;
  /** When it was last used (ms, the sessions' clock), and how many of its requests are in progress. */
  lastSeen: number;
  active: number;
}

/** Where the upstream is, for opening a session there. */
export interface LazyOpenTarget {
  readonly dispatcher: Dispatcher;
  readonly origin: string;
  readonly path: string;
  readonly timeoutMs: number;
}

/**
 * The gateway's sessions awaiting (or holding) the upstream's, bounded as the gateway's other sessions are: past
 * `maxEntries` the least recently used is forgotten, and one with no request in progress and no use for
 * `idleTimeoutMs` (`MCP_AUTH_SESSION_IDLE_TIMEOUT_MS`; 0 never) expires. A forgotten one is unknown: its client's
 * next request gets 404, and the client starts a new session.
 */
export class LazySessions {
  /** Least recently used first: every use moves a session to the end. */
  private readonly sessions = new Map<string, LazySession>();
  /**
   * What the upstream said of itself in the `initialize` answer of the last session opened there (for any user), once
   * one was; {@link lazyInitializeResult} answers with it. One small object, bounded (`MAX_UPSTREAM_PROFILE_BYTES`).
   */
  profile: UpstreamProfile | undefined;

  /**
   * @param maxEntries - most sessions held (`MCP_AUTH_MAX_SESSIONS`).
   * @param idleTimeoutMs - idle life of a session, in milliseconds; 0 never expires one.
   * @param now - clock, in milliseconds. Default `Date.now`.
   */
  constructor(
    private readonly maxEntries: number,
    private readonly idleTimeoutMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** Whether `id` names a session the gateway opened (by its shape: the id itself may be unknown here). */
  static isLazyId(id: string | undefined): boolean {
    return id !== undefined && id.startsWith(LAZY_PREFIX);
  }

  /** Opens one for `initialize`, and returns its id (random, 32 bytes). */
  create(initialize: JsonRpcRequest): string {
    this.sweep();
    const id = `${LAZY_PREFIX}${randomBytes(32).toString('base64url')}`;
    this.sessions.set(id, { initialize, lastSeen: this.now(), active: 0 });
    if (this.sessions.size > this.maxEntries) this.sessions.delete(this.sessions.keys().next().value!);
    return id;
  }

  /** The session `id` names, unless unknown or expired (then forgotten). Counts as use. */
  get(id: string): LazySession | undefined {
    const session = this.sessions.get(id);
    if (session === undefined) return undefined;
    const at = this.now();
    this.sessions.delete(id);
    if (this.expired(session, at)) return undefined;
    session.lastSeen = at;
    this.sessions.set(id, session);
    return session;
  }

  /**
   * Marks a request of `session` in progress until `done` settles (a GET stream above all): the session does not
   * expire meanwhile, and its end counts as use.
   */
  hold<T>(session: LazySession, done: Promise<T>): Promise<T> {
    session.active++;
    return done.finally(() => {
      session.active--;
      session.lastSeen = this.now();
    });
  }

  forget(id: string): void {
    this.sessions.delete(id);
  }

  private expired(session: LazySession, at: number): boolean {
    return this.idleTimeoutMs > 0 && session.active <= 0 && at - session.lastSeen >= this.idleTimeoutMs;
  }

  /** Forgets the expired sessions from the old end; stops at the first one used within the timeout. */
  private sweep(): void {
    if (this.idleTimeoutMs === 0) return;
    const at = this.now();
    for (const [id, session] of this.sessions) {
      if (at - session.lastSeen < this.idleTimeoutMs) break;
      if (session.active <= 0) this.sessions.delete(id);
    }
  }

  /**
   * The upstream's session for `session`, opened with `caller`'s credentials on first use: the client's own
   * `initialize`, then `notifications/initialized`. Rejects with the credentials' error (the connect flow's to
   * answer), or an Error when the upstream gives no session.
   */
  upstreamSession(session: LazySession, caller: AuthInfo, credentials: UpstreamCredentials, target: LazyOpenTarget): Promise<string> {
    if (session.upstreamId !== undefined) return Promise.resolve(session.upstreamId);
    session.opening ??= openUpstreamSession(session.initialize, caller, credentials, target).then(
      ({ id, profile }) => {
        if (profile !== undefined) this.profile = profile;
        session.upstreamId = id;
        session.opening = undefined;
        return id;
      },
      (error: unknown) => {
        session.opening = undefined;
        throw error;
      },
    );
    return session.opening;
  }

  /**
   * A new upstream session for `session`, the upstream having answered 404 for `gone` (it restarted, or expired the
   * session): opened as on first use. Requests that found `gone` at once share one opening; one that comes after
   * the new session is open gets that one.
   */
  reopen(session: LazySession, gone: string, caller: AuthInfo, credentials: UpstreamCredentials, target: LazyOpenTarget): Promise<string> {
    if (session.upstreamId === gone) session.upstreamId = undefined;
    return this.upstreamSession(session, caller, credentials, target);
  }
}

/**
 * The gateway's answer to an `initialize` whose upstream session waits for the user's connection: the revision the
 * client asked for when the gateway speaks it, the gateway's `serverInfo`, and the upstream's capabilities from
 * `profile` once the gateway has opened a session there (never its instructions, which were another user's), else
 * the capabilities a connected server may offer (tools, prompts and resources).
 */
export function lazyInitializeResult(initialize: JsonRpcRequest, info: { readonly name: string; readonly version: string }, profile?: UpstreamProfile): Record<string, unknown> {
  const protocolVersion = negotiatedSessionVersion(initialize.params?.protocolVersion);
  if (profile !== undefined) {
    return { protocolVersion, capabilities: profile.capabilities, serverInfo: info };
  }
  return { protocolVersion, capabilities: { tools: { listChanged: true }, prompts: { listChanged: true }, resources: { listChanged: true } }, serverInfo: info };
}

/**
 * Opens the upstream's session with the client's `initialize`, then `notifications/initialized`; gives its id (`''`
 * for an upstream without sessions) and what the upstream said of itself, when its answer could be read.
 */
async function openUpstreamSession(initialize: JsonRpcRequest, caller: AuthInfo, credentials: UpstreamCredentials, target: LazyOpenTarget): Promise<{ id: string; profile: UpstreamProfile | undefined }> {
  const authorization = await credentials.authorization(caller);
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
