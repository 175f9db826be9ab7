import type { AuthInfo } from '../core/auth-info.js';
import type { JsonRpcId } from '../core/jsonrpc.js';

/**
 * Why a request naming a session was refused; all are answered 404 `Session not found`, so a caller
 * cannot tell a foreign session from an unknown one.
 *
 * - `session_unknown`: the gateway holds no such session (never seen, expired, evicted, or ended).
 * - `session_owner_mismatch`: the session belongs to another caller (issuer, subject or client differ).
 * - `session_no_identity`: the token has neither a subject nor a client id, so no session can be bound to it.
 */
export type SessionRefusalReason = 'session_unknown' | 'session_owner_mismatch' | 'session_no_identity';

/** Options of {@link createSessionRegistry}. */
export interface SessionRegistryOptions {
  /** Most sessions held; binding one more evicts the least recently used idle one (else the oldest). */
  maxSessions: number;
  /**
   * Most sessions one caller (issuer, subject, client) holds; binding one more forgets that caller's own least
   * recently used session, so no single caller can push everyone else's sessions out. Default: no limit
   * beyond `maxSessions`.
   */
  maxSessionsPerCaller?: number;
  /** A session with no exchange in progress and no use for this long is forgotten, in milliseconds. */
  idleTimeoutMs: number;
  /** Clock, in milliseconds. Default `Date.now`. */
  now?: () => number;
}

/** One bound session, as handed back by {@link SessionRegistry.lookup}. */
export interface BoundSession {
  readonly id: string;
  /** Marks an exchange (request, response stream, GET stream) in progress: the session is not idle meanwhile. */
  acquire(): void;
  /** Ends what {@link acquire} started and counts as use. */
  release(): void;
  /**
   * Remembers a list request whose answer was an event stream, so a replay of that stream on a resumed GET
   * (`Last-Event-ID`) can be filtered like the original answer.
   */
  recordListRequest(id: JsonRpcId, method: string): void;
  /**
   * The list method of a remembered request with this id, if any. `'overflowed'` when the id is not
   * remembered but older list requests were dropped to stay within the bound (the caller must then infer).
   */
  listMethodFor(id: JsonRpcId): string | 'overflowed' | undefined;
}

/** Outcome of {@link SessionRegistry.bind}. */
export type BindOutcome = 'bound' | 'known' | 'conflict' | 'no_identity';

/**
 * Which session ids the gateway has seen, and whose they are. See {@link createSessionRegistry}.
 */
export interface SessionRegistry {
  /** Sessions held. */
  readonly size: number;
  /**
   * The session if it exists and belongs to the caller of `auth`, else why not. Counts as use.
   */
  lookup(sessionId: string, auth: AuthInfo): { session: BoundSession } | { refused: SessionRefusalReason };
  /**
   * Binds a session id the upstream just issued to the caller of `auth`: `'bound'` when new, `'known'`
   * when already bound to this caller, `'conflict'` when bound to someone else, `'no_identity'` when the
   * caller cannot own a session.
   */
  bind(sessionId: string, auth: AuthInfo): BindOutcome;
  /** Forgets a session (ended by DELETE, or unknown to the upstream). */
  forget(sessionId: string): void;
  /** Forgets everything. */
  clear(): void;
}

/** List requests remembered per session for filtering replays; older ones are dropped. */
const MAX_LIST_REQUESTS_PER_SESSION = 256;

interface Entry extends BoundSession {
  readonly owner: string;
  lastSeen: number;
  active: number;
}

/**
 * Creates the gateway's session registry: `Mcp-Session-Id` → owner (the token's issuer, subject and client),
 * so that a session id is never enough to use a session (MCP 2025-11-25 security best practices, "Session
 * hijacking": servers SHOULD bind session ids to user-specific information).
 *
 * The map is bounded (`maxSessions`, least recently used evicted first, preferring sessions with nothing in
 * progress) and entries expire after `idleTimeoutMs` without use. Expiry is checked when a session is looked
 * up and swept from the least recently used end when one is bound, so no timer runs.
 */
export function createSessionRegistry(options: SessionRegistryOptions): SessionRegistry {
  const { maxSessions, idleTimeoutMs } = options;
  const maxPerCaller = options.maxSessionsPerCaller;
  const now = options.now ?? Date.now;
  // Map order is least recently used first: every use moves an entry to the end.
  const sessions = new Map<string, Entry>();

  function touch(entry: Entry): void {
    entry.lastSeen = now();
    sessions.delete(entry.id);
    sessions.set(entry.id, entry);
  }

  function expired(entry: Entry, at: number): boolean {
    return entry.active <= 0 && at - entry.lastSeen >= idleTimeoutMs;
  }

  /** Drops expired entries from the old end; stops at the first entry used within the timeout. */
  function sweep(): void {
    const at = now();
    for (const entry of sessions.values()) {
      if (at - entry.lastSeen < idleTimeoutMs) break;
      if (entry.active <= 0) sessions.delete(entry.id);
    }
  }

  /** Forgets the caller's least recently used sessions (idle ones first) until one more fits. */
  function makeRoomForCaller(owner: string): void {
    const own: Entry[] = [];
    for (const entry of sessions.values()) if (entry.owner === owner) own.push(entry);
    // Map order is recency order (touch re-inserts), so own[0] is the least recently used.
    while (own.length >= maxPerCaller!) {
      const at = own.findIndex((entry) => entry.active <= 0);
      const [victim] = own.splice(at === -1 ? 0 : at, 1);
      sessions.delete(victim!.id);
    }
  }

  function evictOne(): void {
    let victim: Entry | undefined;
    for (const entry of sessions.values()) {
      victim ??= entry;
      if (entry.active <= 0) {
        victim = entry;
        break;
      }
    }
    if (victim) sessions.delete(victim.id);
  }

  function createEntry(id: string, owner: string): Entry {
    // Remembered list requests: `typeof id` is part of the key, since 1 and "1" are different JSON-RPC ids.
    let lists: Map<string, string> | undefined;
    let overflowed = false;
    const entry: Entry = {
      id,
      owner,
      lastSeen: now(),
      active: 0,
      acquire() {
        entry.active++;
        touch(entry);
      },
      release() {
        entry.active--;
        // Only a session still held is reordered: one forgotten meanwhile must stay forgotten.
        if (sessions.get(id) === entry) touch(entry);
      },
      recordListRequest(requestId, method) {
        lists ??= new Map();
        const key = idKey(requestId);
        lists.delete(key);
        lists.set(key, method);
        if (lists.size > MAX_LIST_REQUESTS_PER_SESSION) {
          lists.delete(lists.keys().next().value as string);
          overflowed = true;
        }
      },
      listMethodFor(requestId) {
        return lists?.get(idKey(requestId)) ?? (overflowed ? 'overflowed' : undefined);
      },
    };
    return entry;
  }

  return {
    get size() {
      return sessions.size;
    },
    lookup(sessionId, auth) {
      const owner = ownerKey(auth);
      if (owner === undefined) return { refused: 'session_no_identity' };
      const entry = sessions.get(sessionId);
      if (entry === undefined) return { refused: 'session_unknown' };
      if (expired(entry, now())) {
        sessions.delete(sessionId);
        return { refused: 'session_unknown' };
      }
      if (entry.owner !== owner) return { refused: 'session_owner_mismatch' };
      touch(entry);
      return { session: entry };
    },
    bind(sessionId, auth) {
      const owner = ownerKey(auth);
      if (owner === undefined) return 'no_identity';
      const existing = sessions.get(sessionId);
      if (existing !== undefined && !expired(existing, now())) {
        if (existing.owner !== owner) return 'conflict';
        touch(existing);
        return 'known';
      }
      sessions.delete(sessionId);
      sweep();
      if (maxPerCaller !== undefined) makeRoomForCaller(owner);
      while (sessions.size >= maxSessions) evictOne();
      sessions.set(sessionId, createEntry(sessionId, owner));
      return 'bound';
    },
    forget(sessionId) {
      sessions.delete(sessionId);
    },
    clear() {
      sessions.clear();
    },
  };
}

/**
 * The caller a session belongs to: issuer, subject and client together, so another user of the same client,
 * or the same subject through another client, is someone else. A token refresh or step-up keeps the owner.
 * Undefined when the token has neither a subject nor a client id: such tokens all look alike, and binding a
 * session to "nobody" would share it between every one of them.
 */
function ownerKey(auth: AuthInfo): string | undefined {
  const sub = typeof auth.extra.sub === 'string' && auth.extra.sub !== '' ? auth.extra.sub : undefined;
  const clientId = auth.clientId ?? '';
  if (sub === undefined && clientId === '') return undefined;
  const iss = typeof auth.extra.iss === 'string' ? auth.extra.iss : null;
  // JSON keeps the three parts apart whatever characters they contain.
  return JSON.stringify([iss, sub ?? null, clientId]);
}

function idKey(id: JsonRpcId): string {
  return `${typeof id}:${id}`;
}
