import type { AuthInfo } from '../kernel/auth-info.js';
import { callerKey } from '../kernel/caller-key.js';

/**
 * Why a request naming a session was refused; all are answered 404 `Session not found`, so a caller
 * cannot tell a foreign session from an unknown one.
 *
 * - `session_unknown`: no such session (never issued, expired, evicted, or ended).
 * - `session_owner_mismatch`: the session belongs to another caller (issuer, subject or client differ).
 * - `session_no_identity`: the token has neither a subject nor a client id, so no session can be bound to it.
 */
export type SessionRefusalReason = 'session_unknown' | 'session_owner_mismatch' | 'session_no_identity';

/** Options of {@link createSessionRegistry}. */
export interface SessionRegistryOptions<T> {
  /** Most sessions held, counting sessions still being opened; one more evicts the least recently used idle one (else the oldest). */
  maxSessions: number;
  /**
   * Most sessions one caller (issuer, subject, client) holds, counting sessions still being opened; one more
   * forgets that caller's own least recently used session (idle ones first), so no single caller can push
   * everyone else's sessions out. Default: no limit beyond `maxSessions`.
   */
  maxSessionsPerCaller?: number;
  /** A session with no exchange in progress and no use for this long is forgotten, in milliseconds; 0 never. */
  idleTimeoutMs: number;
  /**
   * What a bound does when one more session would exceed it: `true` (default) forgets the least recently
   * used session as described above; `false` forgets nothing and refuses the new one (`bind` answers
   * `'full'` or `'caller_full'`, `reserve` answers `'busy'`), for sessions that hold something live, such as
   * a process, which must never be taken from under its user. Idle sessions still expire.
   */
  evict?: boolean;
  /** Clock, in milliseconds. Default `Date.now`. */
  now?: () => number;
  /**
   * Called with each session as it leaves the registry (forgotten, expired, evicted, cleared), e.g. to close
   * what it holds. Not called for a session whose owner ended it through {@link SessionRegistry.forget}
   * with `notify: false`. Errors it throws are ignored.
   */
  onForget?: (session: BoundSession<T>) => void;
}

/** One bound session, as handed back by {@link SessionRegistry.lookup}. */
export interface BoundSession<T = undefined> {
  readonly id: string;
  /** What the adapter keeps with the session (an SDK transport, nothing for the gateway). */
  readonly value: T;
  /** Marks an exchange (request, response stream, GET stream) in progress: the session is not idle meanwhile. Call it after `lookup`. */
  acquire(): void;
  /** Ends what {@link acquire} started and counts as use. */
  release(): void;
}

/**
 * Outcome of binding a session id. `'full'`: no slot can be had (every slot is taken by sessions still being
 * opened or, with `evict: false`, `maxSessions` is reached); `'caller_full'`: with `evict: false`, the caller
 * already holds `maxSessionsPerCaller` sessions.
 */
export type BindOutcome = 'bound' | 'known' | 'conflict' | 'no_identity' | 'full' | 'caller_full';

/** A slot taken for a session still being opened; see {@link SessionRegistry.reserve}. */
export interface SessionReservation<T> {
  /** Binds the new session in the reserved slot (no eviction needed). */
  bind(sessionId: string, value: T): BindOutcome;
  /** Gives the slot back when the session was not opened after all. Idempotent; a no-op after `bind`. */
  release(): void;
}

/**
 * Session ids and whose they are, for every adapter that keeps sessions (the SDK adapter, the gateway).
 * See {@link createSessionRegistry}.
 */
export interface SessionRegistry<T = undefined> {
  /** Sessions held (not counting those being opened). */
  readonly size: number;
  /** The session if it exists and belongs to the caller of `auth`, else why not. Counts as use. */
  lookup(sessionId: string, auth: AuthInfo): { session: BoundSession<T> } | { refused: SessionRefusalReason };
  /**
   * Binds a session id just issued to the caller of `auth`: `'bound'` when new, `'known'` when already bound
   * to this caller, `'conflict'` when bound to someone else, `'no_identity'` when the caller cannot own one,
   * `'full'` when no slot can be freed (all are taken by sessions being opened).
   */
  bind(sessionId: string, auth: AuthInfo, value?: T): BindOutcome;
  /**
   * Takes a slot for a session that is being opened (its id is not known yet), making room by the same rules
   * as `bind`. Slots taken count towards both limits, so concurrent opens cannot overshoot them. `'busy'`
   * when every slot the caller could free is itself being opened.
   */
  reserve(auth: AuthInfo): SessionReservation<T> | 'no_identity' | 'busy';
  /** Forgets a session (ended by DELETE, closed, or unknown upstream); `onForget` runs unless `notify` is false. */
  forget(sessionId: string, notify?: boolean): void;
  /** Forgets every session idle past the timeout now (the registry also does so lazily). */
  sweep(): void;
  /** Every session held, least recently used first. */
  sessions(): IterableIterator<BoundSession<T>>;
  /** Forgets everything. */
  clear(): void;
}

interface Entry<T> extends BoundSession<T> {
  readonly owner: string;
  lastSeen: number;
  active: number;
}


/**
 * Creates a session registry: `Mcp-Session-Id` → owner ({@link callerKey}), so that a session id is never
 * enough to use a session (MCP 2025-11-25 security best practices, "Session hijacking": servers SHOULD bind
 * session ids to user-specific information).
 *
 * Bounded (`maxSessions`, `maxSessionsPerCaller`; least recently used evicted first, preferring sessions
 * with nothing in progress, or with `evict: false` the new session refused), counting sessions still being opened; entries expire after `idleTimeoutMs`
 * without use. Expiry is checked when a session is looked up and swept from the least recently used end
 * when one is bound; `sweep()` does it on demand for adapters that must release what sessions hold.
 */
export function createSessionRegistry<T = undefined>(options: SessionRegistryOptions<T>): SessionRegistry<T> {
  const { maxSessions, idleTimeoutMs } = options;
  const maxPerCaller = options.maxSessionsPerCaller;
  const evict = options.evict ?? true;
  const now = options.now ?? Date.now;
  const onForget = options.onForget;
  // Map order is least recently used first: every use moves an entry to the end.
  const entries = new Map<string, Entry<T>>();
  // Owners of sessions being opened, one element per slot.
  const opening: string[] = [];

  function touch(entry: Entry<T>): void {
    entry.lastSeen = now();
    entries.delete(entry.id);
    entries.set(entry.id, entry);
  }

  function expired(entry: Entry<T>, at: number): boolean {
    return idleTimeoutMs > 0 && entry.active <= 0 && at - entry.lastSeen >= idleTimeoutMs;
  }

  function remove(entry: Entry<T>, notify = true): void {
    if (entries.get(entry.id) !== entry) return;
    entries.delete(entry.id);
    if (!notify || !onForget) return;
    try {
      onForget(entry);
    } catch {
      // Releasing what a session holds must never break serving.
    }
  }

  /** Drops expired entries from the old end; stops at the first entry used within the timeout. */
  function sweep(): void {
    if (idleTimeoutMs === 0) return;
    const at = now();
    const gone: Entry<T>[] = [];
    for (const entry of entries.values()) {
      if (at - entry.lastSeen < idleTimeoutMs) break;
      if (entry.active <= 0) gone.push(entry);
    }
    for (const entry of gone) remove(entry);
  }

  /** Forgets the caller's least recently used sessions (idle ones first) until one more fits; false if none can go. */
  function makeRoomForCaller(owner: string): boolean {
    if (maxPerCaller === undefined) return true;
    const own: Entry<T>[] = [];
    for (const entry of entries.values()) if (entry.owner === owner) own.push(entry);
    let count = own.length;
    for (const o of opening) if (o === owner) count++;
    while (count >= maxPerCaller) {
      if (own.length === 0) return false;
      const at = own.findIndex((entry) => entry.active <= 0);
      const [victim] = own.splice(at === -1 ? 0 : at, 1);
      remove(victim!);
      count--;
    }
    return true;
  }

  /** Whether one more session of `owner` can be made room for (an open session to evict where a limit is reached). */
  function canMakeRoom(owner: string): boolean {
    let own = 0;
    let ownOpening = 0;
    for (const entry of entries.values()) if (entry.owner === owner) own++;
    for (const o of opening) if (o === owner) ownOpening++;
    if (maxPerCaller !== undefined && own + ownOpening >= maxPerCaller && own === 0) return false;
    return entries.size + opening.length < maxSessions || entries.size > 0;
  }

  /** Without eviction: which bound one more session of `owner` would exceed, if any. */
  function boundReached(owner: string): 'full' | 'caller_full' | undefined {
    if (maxPerCaller !== undefined) {
      let own = 0;
      for (const entry of entries.values()) if (entry.owner === owner) own++;
      for (const o of opening) if (o === owner) own++;
      if (own >= maxPerCaller) return 'caller_full';
    }
    return entries.size + opening.length >= maxSessions ? 'full' : undefined;
  }

  /** Makes room for one more session of `owner` by the configured rule; the bound that refused it, if one did. */
  function admit(owner: string): 'full' | 'caller_full' | undefined {
    if (!evict) return boundReached(owner);
    return canMakeRoom(owner) && makeRoomForCaller(owner) && makeRoom() ? undefined : 'full';
  }

  /** Evicts least recently used sessions (idle ones first) until one more fits; false if none can go. */
  function makeRoom(): boolean {
    while (entries.size + opening.length >= maxSessions) {
      let victim: Entry<T> | undefined;
      for (const entry of entries.values()) {
        victim ??= entry;
        if (entry.active <= 0) {
          victim = entry;
          break;
        }
      }
      if (!victim) return false;
      remove(victim);
    }
    return true;
  }

  function createEntry(id: string, owner: string, value: T): Entry<T> {
    const entry: Entry<T> = {
      id,
      owner,
      value,
      lastSeen: now(),
      active: 0,
      acquire() {
        // Taken right after the lookup that touched it; an active session never expires, and release touches.
        entry.active++;
      },
      release() {
        entry.active--;
        // Only a session still held is reordered: one forgotten meanwhile must stay forgotten.
        if (entries.get(id) === entry) touch(entry);
      },
    };
    return entry;
  }

  function bindOwned(sessionId: string, owner: string, value: T, reserved: boolean): BindOutcome {
    const existing = entries.get(sessionId);
    if (existing !== undefined && !expired(existing, now())) {
      if (existing.owner !== owner) return 'conflict';
      touch(existing);
      return 'known';
    }
    if (existing !== undefined) remove(existing);
    if (!reserved) {
      sweep();
      const refused = admit(owner);
      if (refused !== undefined) return refused;
    }
    entries.set(sessionId, createEntry(sessionId, owner, value));
    return 'bound';
  }

  return {
    get size() {
      return entries.size;
    },
    lookup(sessionId, auth) {
      const owner = callerKey(auth);
      if (owner === undefined) return { refused: 'session_no_identity' };
      const entry = entries.get(sessionId);
      if (entry === undefined) return { refused: 'session_unknown' };
      if (expired(entry, now())) {
        remove(entry);
        return { refused: 'session_unknown' };
      }
      if (entry.owner !== owner) return { refused: 'session_owner_mismatch' };
      touch(entry);
      return { session: entry };
    },
    bind(sessionId, auth, value) {
      const owner = callerKey(auth);
      if (owner === undefined) return 'no_identity';
      return bindOwned(sessionId, owner, value as T, false);
    },
    reserve(auth) {
      const owner = callerKey(auth);
      if (owner === undefined) return 'no_identity';
      sweep();
      // Synchronous on purpose: the slot is taken before anything else can run. Nothing is evicted unless
      // the slot can then be had.
      if (admit(owner) !== undefined) return 'busy';
      opening.push(owner);
      let held = true;
      const release = (): void => {
        if (!held) return;
        held = false;
        opening.splice(opening.indexOf(owner), 1);
      };
      return {
        bind(sessionId, value) {
          release();
          return bindOwned(sessionId, owner, value, true);
        },
        release,
      };
    },
    forget(sessionId, notify = true) {
      const entry = entries.get(sessionId);
      if (entry) remove(entry, notify);
    },
    sweep,
    sessions() {
      return entries.values();
    },
    clear() {
      for (const entry of [...entries.values()]) remove(entry);
    },
  };
}
