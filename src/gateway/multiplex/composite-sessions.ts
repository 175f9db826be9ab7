import { randomUUID } from 'node:crypto';
import type { AuthInfo } from '../../core/kernel/auth-info.js';
import { createSessionRegistry, type BoundSession, type SessionRefusalReason, type SessionRegistry } from '../../core/session/session-registry.js';
import type { JsonRpcRequest } from '../../core/wire/jsonrpc.js';
import { callMember } from './member-call.js';
import { profileOf, type SetMember } from './set-member.js';

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
}

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

  /** Opens a client's session for the caller of `auth`; its id, or why not. */
  open(auth: AuthInfo, initialize: JsonRpcRequest, protocolVersion: string): string | 'no_identity' | 'busy' {
    const reservation = this.registry.reserve(auth);
    if (typeof reservation === 'string') return reservation;
    const id = randomUUID();
    const outcome = reservation.bind(id, { initialize, protocolVersion, auth, members: new Map() });
    return outcome === 'bound' ? id : 'busy';
  }

  /** The caller's session of that id, or why not (the same 404 for every reason). */
  lookup(id: string, auth: AuthInfo): { session: BoundSession<CompositeSession> } | { refused: SessionRefusalReason } {
    return this.registry.lookup(id, auth);
  }

  /** Ends a client's session and every server session it opened (DELETE). */
  end(id: string): void {
    this.registry.forget(id);
  }

  /** The server's session within `session`, opening it first when this is the client's first use of the server. */
  async memberSession(session: CompositeSession, member: SetMember, signal: AbortSignal): Promise<MemberSession | MemberSessionFailure> {
    const known = session.members.get(member.name);
    if (known !== undefined) return known;
    const opening = this.openMember(session, member, signal);
    session.members.set(member.name, opening);
    const opened = await opening;
    if ('failed' in opened) session.members.delete(member.name);
    else {
      session.members.set(member.name, opened);
      session.onOpened?.(member, opened);
    }
    return opened;
  }

  /** Ends every client session (shutdown). */
  clear(): void {
    this.registry.clear();
  }

  private async openMember(session: CompositeSession, member: SetMember, signal: AbortSignal): Promise<MemberSession | MemberSessionFailure> {
    const bounded = AbortSignal.any([signal, AbortSignal.timeout(this.options.openTimeoutMs)]);
    const base = { auth: session.auth, signal: bounded, maxBytes: this.options.maxBytes };
    const initialize = { ...session.initialize, id: 0 };
    const answer = await callMember(member.upstream, { ...base, message: initialize, protocolVersion: undefined });
    const result = answer.response && 'result' in answer.response ? answer.response.result : undefined;
    const profile = profileOf(result);
    if (answer.status !== 200 || profile === undefined) return { failed: true, status: answer.status === 200 ? 502 : answer.status };
    member.profile = profile;
    const opened: MemberSession = { id: answer.sessionId, protocolVersion: profile.protocolVersion };
    await callMember(member.upstream, {
      ...base,
      message: { jsonrpc: '2.0', method: 'notifications/initialized' },
      protocolVersion: opened.protocolVersion,
      ...(opened.id !== undefined ? { sessionId: opened.id } : {}),
    });
    return opened;
  }

  /** Ends the server sessions a client's session opened, in parallel; their answers do not matter. */
  private async endMembers(session: CompositeSession): Promise<void> {
    const ending: Promise<unknown>[] = [];
    for (const member of this.members) {
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
    session.members.clear();
    await Promise.allSettled(ending);
  }
}
