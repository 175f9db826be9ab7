import { randomUUID } from 'node:crypto';
import type { AuthInfo } from '../../core/kernel/auth-info.js';
import { createSessionRegistry, type BoundSession, type SessionRegistry } from '../../core/session/session-registry.js';
import type { SealedSessionRefusalReason, SessionSealer } from '../../core/session/session-seal.js';
import { JsonRpcErrorCode, type JsonRpcErrorObject, type JsonRpcRequest } from '../../core/wire/jsonrpc.js';
import { callMember, ownRequestId } from './member-call.js';
import { learnProfile, profileOf, type SetMember } from './set-member.js';

/** One server's session within a client's session: its own id (none for a server without sessions) and revision. */
export interface MemberSession {
  readonly id: string | undefined;
  readonly protocolVersion: string | undefined;
}

/** Why a server's session could not be opened. */
export interface MemberSessionFailure {
  readonly failed: true;
  /** The HTTP status the server's `initialize` got (502/504 when it could not be reached). */
  readonly status: number;
  /**
   * The server's refusal of this caller, when its `initialize` answer was a URL elicitation required error (-32042:
   * the user must first connect their account there, see connected accounts): told to the client instead of a 502.
   */
  readonly refusal?: JsonRpcErrorObject;
  /**
   * Whether that refusal is the gateway's own (the connect flow, the server not asked): the client's request is then
   * answered by the same flow, outside a session, in the shape its method and capabilities call for.
   */
  readonly byGateway?: boolean;
}

/** A client's session with the endpoint: the `initialize` it sent, and the sessions opened with each server for it. */
export interface CompositeSession {
  /** The client's `initialize` request: each server's session is opened with its params. */
  readonly initialize: JsonRpcRequest;
  /** The revision the gateway answered with. */
  readonly protocolVersion: string;
  /** The caller that opened it: its servers' sessions are ended for it. */
  readonly auth: AuthInfo;
  /** Servers' sessions, opened or being opened, by server name. */
  readonly members: Map<string, MemberSession | Promise<MemberSession | MemberSessionFailure>>;
  /** Told of each server session opened from now on (the client's GET stream adds it). */
  onOpened?: ((member: SetMember, opened: MemberSession) => void) | undefined;
  /** The level the client last set (`logging/setLevel`), given to each server opened after it. */
  logLevel?: unknown;
}

/** Options of {@link CompositeSessions}. */
export interface CompositeSessionsOptions {
  readonly maxSessions: number;
  readonly maxSessionsPerCaller: number;
  readonly idleTimeoutMs: number;
  /** Most bytes read of a server's `initialize` answer. */
  readonly maxBytes: number;
  /** Time allowed for opening one server's session, in milliseconds. */
  readonly openTimeoutMs: number;
  /**
   * Seals the client's session id (`MCP_AUTH_SESSION_SECRET`): the id then carries every HTTP server's session,
   * opened at `initialize`, so that any replica serves it. Default none: sessions live in this process.
   */
  readonly sealer?: SessionSealer;
}

/** A client's session found for a request: release it when the request is done. */
export interface FoundSession {
  readonly session: CompositeSession;
  release(): void;
}

/** Why opening a client's session failed: no caller to bind it to, no room, or (sealed) a server could not be opened. */
export type SessionOpenRefusal = 'no_identity' | 'busy' | 'unsealable';

/**
 * Clients' sessions with a server set (MCP 2025-11-25 and earlier): the gateway answers `initialize` itself, binds
 * the new session to its caller (`createSessionRegistry`: a session id is never authentication), and opens each
 * server's session when the client first uses that server, with the client's own `initialize` params; concurrent
 * first uses share one opening. Ending a client's session (DELETE, idle, evicted) ends every server session it
 * opened.
 *
 * @example
 * const id = sessions.open(auth, initialize, '2025-11-25');
 * const session = sessions.lookup(id, auth);
 * const notes = await sessions.memberSession(session.value, member, signal);
 */
export class CompositeSessions {
  private readonly registry: SessionRegistry<CompositeSession>;
  /** With sealed ids: the sessions this replica has seen, so that servers opened here are reused. */
  private readonly sealedSeen = new Map<string, CompositeSession>();

  constructor(
    private readonly members: readonly SetMember[],
    private readonly options: CompositeSessionsOptions,
  ) {
    this.registry = createSessionRegistry<CompositeSession>({
      maxSessions: options.maxSessions,
      maxSessionsPerCaller: options.maxSessionsPerCaller,
      idleTimeoutMs: options.idleTimeoutMs,
      onForget: (session) => void this.endMembers(session.value),
    });
  }

  get size(): number {
    return this.registry.size;
  }

  /**
   * Opens a client's session for the caller of `auth`; its id, or why not. Sealed, the HTTP servers among
   * `members` (those the caller may use; default every server) open now.
   */
  async open(auth: AuthInfo, initialize: JsonRpcRequest, protocolVersion: string, signal: AbortSignal, members: readonly SetMember[] = this.members): Promise<string | SessionOpenRefusal> {
    const sealer = this.options.sealer;
    if (sealer) return this.openSealed(sealer, auth, initialize, protocolVersion, signal, members);
    const reservation = this.registry.reserve(auth);
    if (typeof reservation === 'string') return reservation;
    const id = randomUUID();
    // What the session retains is its kept `initialize` (bounded by the server set) and a small state per server.
    const bytes = JSON.stringify(initialize).length + MEMBER_STATE_BYTES * members.length;
    const outcome = reservation.bind(id, { initialize, protocolVersion, auth, members: new Map() }, bytes);
    return outcome === 'bound' ? id : 'busy';
  }

  /** The caller's session of that id, or why not (the same 404 for every reason). */
  async find(id: string, auth: AuthInfo): Promise<FoundSession | { refused: SealedSessionRefusalReason }> {
    if (this.options.sealer) return this.findSealed(this.options.sealer, id, auth);
    const found = this.registry.lookup(id, auth);
    if ('refused' in found) return found;
    const bound: BoundSession<CompositeSession> = found.session;
    bound.acquire();
    return { session: bound.value, release: () => bound.release() };
  }

  /**
   * Ends a client's session and every server session it opened (DELETE); resolves once the servers have answered
   * (or the time allowed has passed), so that the client's DELETE is answered when they are ended.
   */
  async end(id: string, session: CompositeSession): Promise<void> {
    if (this.options.sealer) this.sealedSeen.delete(id);
    else this.registry.forget(id, false);
    await this.endMembers(session);
  }

  /**
   * Sealed: every HTTP server's session is opened now (an id cannot change once given), and the id seals them
   * with the client's revision and capabilities; stdio servers still open on first use, on the replica that
   * holds their process, as does a server the caller could not use at `initialize` (its session is then this
   * replica's only: another replica opens one of its own).
   */
  private async openSealed(sealer: SessionSealer, auth: AuthInfo, initialize: JsonRpcRequest, protocolVersion: string, signal: AbortSignal, members: readonly SetMember[]): Promise<string | SessionOpenRefusal> {
    const session: CompositeSession = { initialize, protocolVersion, auth, members: new Map() };
    const http = members.filter((m) => m.upstream.transport === 'http');
    const opened = await Promise.all(http.map((member) => this.memberSession(session, member, signal, auth)));
    const carried: [string, string | null, string | null][] = [];
    opened.forEach((state, i) => {
      if (!('failed' in state)) carried.push([http[i]!.name, state.id ?? null, state.protocolVersion ?? null]);
    });
    const params = (initialize.params ?? {}) as Record<string, unknown>;
    const payload = JSON.stringify({ v: protocolVersion, p: params.protocolVersion ?? null, c: params.capabilities ?? {}, i: params.clientInfo ?? null, m: carried });
    const id = payload.length > MAX_SEALED_PAYLOAD_CHARS ? undefined : await sealer.seal(payload, auth);
    if (id === undefined || id.length > MAX_SEALED_ID_CHARS) {
      void this.endMembers(session);
      return id === undefined && payload.length <= MAX_SEALED_PAYLOAD_CHARS ? 'no_identity' : 'unsealable';
    }
    this.remember(id, session);
    return id;
  }

  private async findSealed(sealer: SessionSealer, id: string, auth: AuthInfo): Promise<FoundSession | { refused: SealedSessionRefusalReason }> {
    const opened = await sealer.open(id, auth);
    if ('refused' in opened) return opened;
    let session = this.sealedSeen.get(id);
    if (session === undefined) {
      session = sessionFromPayload(opened.session.upstreamSessionId, auth);
      if (session === undefined) return { refused: 'session_unknown' };
      this.remember(id, session);
    }
    return { session, release: () => {} };
  }

  /** Keeps a sealed session this replica serves, least recently used out first past `maxSessions`. */
  private remember(id: string, session: CompositeSession): void {
    this.sealedSeen.delete(id);
    this.sealedSeen.set(id, session);
    if (this.sealedSeen.size > this.options.maxSessions) {
      const [oldestId, oldest] = this.sealedSeen.entries().next().value as [string, CompositeSession];
      this.sealedSeen.delete(oldestId);
      // Its stdio servers' sessions are this replica's only: they end with it. HTTP ones live on in the id.
      void this.endMembers(oldest, 'stdio');
    }
  }

  /**
   * The server's session within `session`, opening it first when this is the client's first use of the server,
   * for the caller of `auth`: the request's own (a token exchanged for the server is the current token's).
   */
  async memberSession(session: CompositeSession, member: SetMember, signal: AbortSignal, auth: AuthInfo = session.auth): Promise<MemberSession | MemberSessionFailure> {
    const known = session.members.get(member.name);
    if (known !== undefined) return known;
    const opening = this.openMember(session, member, signal, auth);
    session.members.set(member.name, opening);
    const opened = await opening;
    if ('failed' in opened) session.members.delete(member.name);
    else {
      session.members.set(member.name, opened);
      session.onOpened?.(member, opened);
    }
    return opened;
  }

  /**
   * Forgets a server's session the server no longer knows (it answered 404), so that the next use opens a new one.
   * Only the session of that id is forgotten: one opened again meanwhile stays.
   */
  forgetMember(session: CompositeSession, server: string, memberSessionId: string): void {
    const state = session.members.get(server);
    if (state !== undefined && !(state instanceof Promise) && state.id === memberSessionId) session.members.delete(server);
  }

  /** Ends every client session (shutdown). */
  clear(): void {
    this.registry.clear();
    this.sealedSeen.clear();
  }

  private async openMember(session: CompositeSession, member: SetMember, signal: AbortSignal, auth: AuthInfo): Promise<MemberSession | MemberSessionFailure> {
    const bounded = AbortSignal.any([signal, AbortSignal.timeout(this.options.openTimeoutMs)]);
    const base = { auth, signal: bounded, maxBytes: this.options.maxBytes };
    const initialize = { ...session.initialize, id: 0 };
    const answer = await callMember(member.upstream, { ...base, message: initialize, protocolVersion: undefined });
    const result = answer.response && 'result' in answer.response ? answer.response.result : undefined;
    const profile = profileOf(result);
    const refused = answer.status === 200 && answer.response && 'error' in answer.response ? answer.response.error : undefined;
    if (refused?.code === JsonRpcErrorCode.UrlElicitationRequired) return { failed: true, status: 200, refusal: refused, ...(answer.byGateway ? { byGateway: true } : {}) };
    if (answer.status !== 200 || profile === undefined) return { failed: true, status: answer.status === 200 ? 502 : answer.status };
    learnProfile(member, profile);
    const opened: MemberSession = { id: answer.sessionId, protocolVersion: profile.protocolVersion };
    const within = { ...base, protocolVersion: opened.protocolVersion, ...(opened.id !== undefined ? { sessionId: opened.id } : {}) };
    await callMember(member.upstream, { ...within, message: { jsonrpc: '2.0', method: 'notifications/initialized' } });
    // A server opened after the client set its log level logs at that level too.
    if (session.logLevel !== undefined && member.profile?.capabilities.logging !== undefined) {
      await callMember(member.upstream, { ...within, message: { jsonrpc: '2.0', id: ownRequestId(), method: 'logging/setLevel', params: { level: session.logLevel } } });
    }
    return opened;
  }

  /** Ends the server sessions a client's session opened (of one transport, or all), in parallel; their answers do not matter. */
  private async endMembers(session: CompositeSession, transport?: 'stdio'): Promise<void> {
    const ending: Promise<unknown>[] = [];
    for (const member of this.members) {
      if (transport !== undefined && member.upstream.transport !== transport) continue;
      const state = session.members.get(member.name);
      if (state === undefined) continue;
      ending.push(
        Promise.resolve(state).then((opened) => {
          if ('failed' in opened || opened.id === undefined) return;
          return callMember(member.upstream, {
            message: { jsonrpc: '2.0', method: 'notifications/cancelled' },
            method: 'DELETE',
            auth: session.auth,
            protocolVersion: opened.protocolVersion,
            sessionId: opened.id,
            signal: AbortSignal.timeout(this.options.openTimeoutMs),
            maxBytes: this.options.maxBytes,
          });
        }),
      );
    }
    if (transport === undefined) session.members.clear();
    await Promise.allSettled(ending);
  }
}

/** Bytes counted per server of a client's session towards the registry's byte bound: its id, revision and entry. */
const MEMBER_STATE_BYTES = 256;
/** Longest sealed payload: its id must stay under the sealer's 4 096 characters once encrypted and encoded. */
const MAX_SEALED_PAYLOAD_CHARS = 2_800;
/** Longest sealed id given: the sealer opens none longer. */
const MAX_SEALED_ID_CHARS = 4_096;

/** The client's session a sealed payload describes: its revision, its `initialize` params, its HTTP servers' sessions. */
function sessionFromPayload(payload: string, auth: AuthInfo): CompositeSession | undefined {
  let parsed: { v?: unknown; p?: unknown; c?: unknown; i?: unknown; m?: unknown };
  try {
    parsed = JSON.parse(payload) as typeof parsed;
  } catch {
    return undefined;
  }
  if (typeof parsed.v !== 'string' || !Array.isArray(parsed.m)) return undefined;
  const members = new Map<string, MemberSession>();
  for (const entry of parsed.m as unknown[]) {
    if (!Array.isArray(entry) || typeof entry[0] !== 'string') return undefined;
    members.set(entry[0], { id: typeof entry[1] === 'string' ? entry[1] : undefined, protocolVersion: typeof entry[2] === 'string' ? entry[2] : undefined });
  }
  const params = { protocolVersion: parsed.p ?? parsed.v, capabilities: parsed.c ?? {}, clientInfo: parsed.i ?? { name: 'unknown', version: '0' } };
  return { initialize: { jsonrpc: '2.0', id: 0, method: 'initialize', params }, protocolVersion: parsed.v, auth, members };
}
