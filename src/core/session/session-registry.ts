import type { AuthInfo } from '../kernel/auth-info.js';
import { callerKey } from '../kernel/caller-key.js';
import { DEFAULT_MAX_SESSION_BYTES } from './session-defaults.js';

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
  /**
   * Most bytes the sessions' values retain together, by the estimates their owner gives when binding each (`bytes`
   * of {@link SessionRegistry.bind}; a session bound without one counts 0): one more session that would pass it
   * forgets least recently used sessions (idle ones first) as `maxSessions` does, or with `evict: false` is refused
   * (`'full'`). A count alone bounds memory only by count × largest value (a kept `initialize` body may be as large
   * as the body limit). Default 64 MiB (`DEFAULT_MAX_SESSION_BYTES`).
   */
  maxBytes?: number;
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

/** What {@link SessionRegistry.bindInUse} hands back: the new session, in use, or why it was not bound. */
export type BoundInUse<T> = { session: BoundSession<T> } | { refused: Exclude<BindOutcome, 'bound'> };

/** A slot taken for a session still being opened; see {@link SessionRegistry.reserve}. */
export interface SessionReservation<T> {
  /**
   * Binds the new session in the reserved slot (no eviction needed for the count; `bytes`, the estimate of what
   * `value` retains, may still evict, see {@link SessionRegistryOptions.maxBytes}).
   */
  bind(sessionId: string, value: T, bytes?: number): BindOutcome;
  /** `bind`, handing back the new session with an exchange in progress: see {@link SessionRegistry.bindInUse}. */
  bindInUse(sessionId: string, value: T, bytes?: number): BoundInUse<T>;
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
   * `'full'` when no slot can be freed (all are taken by sessions being opened) or `bytes` (the owner's estimate of
   * what `value` retains, default 0) cannot fit {@link SessionRegistryOptions.maxBytes}.
   */
  bind(sessionId: string, auth: AuthInfo, value?: T, bytes?: number): BindOutcome;
  /**
   * `bind`, and when the session is new, hands it back with one exchange already in progress (as after
   * {@link BoundSession.acquire}; `release` it when that exchange ends). A `lookup` right after `bind` may find the
   * session already expired when `idleTimeoutMs` is a few milliseconds and the clock moved on meanwhile; this
   * cannot.
   *
   * @example
   * const bound = registry.bindInUse(sessionId, auth, transport);
   * if ('session' in bound) res.once('close', () => bound.session.release());
   */
  bindInUse(sessionId: string, auth: AuthInfo, value?: T, bytes?: number): BoundInUse<T>;
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

/** One session held: its owner ({@link callerKey}), when it was last used, and how many exchanges it has in progress. */
class Entry<T> implements BoundSession<T> {
  lastSeen: number;
  active = 0;

  constructor(
    private readonly registry: BoundedSessionRegistry<T>,
    readonly id: string,
    readonly owner: string,
    readonly value: T,
    /** The owner's estimate of what `value` retains, in bytes. */
    readonly bytes: number,
  ) {
    this.lastSeen = registry.now();
  }

  acquire(): void {
    // Taken right after the lookup that touched it; an active session never expires, and release touches.
    this.active++;
  }

  release(): void {
    // Never below zero: a release with no acquire (an adapter's mistake) must not make a later exchange look idle.
    if (this.active > 0) this.active--;
    this.registry.touchIfHeld(this);
  }
}

/**
 * The registry: a `Map` whose order is least recently used first (every use moves an entry to the end), and the
 * owners of the sessions being opened, one element per slot.
 */
class BoundedSessionRegistry<T> implements SessionRegistry<T> {
  readonly now: () => number;
  private readonly maxSessions: number;
  private readonly maxBytes: number;
  /** The sum of the held entries' {@link Entry.bytes}. */
  private bytes = 0;
  private readonly maxPerCaller: number | undefined;
  private readonly idleTimeoutMs: number;
  private readonly evict: boolean;
  private readonly onForget: ((session: BoundSession<T>) => void) | undefined;
  private readonly entries = new Map<string, Entry<T>>();
  private readonly opening: string[] = [];

  constructor(options: SessionRegistryOptions<T>) {
    this.maxSessions = options.maxSessions;
    this.maxBytes = options.maxBytes ?? DEFAULT_MAX_SESSION_BYTES;
    this.idleTimeoutMs = options.idleTimeoutMs;
    this.maxPerCaller = options.maxSessionsPerCaller;
    this.evict = options.evict ?? true;
    this.now = options.now ?? Date.now;
    this.onForget = options.onForget;
  }

  get size(): number {
    return this.entries.size;
  }

  lookup(sessionId: string, auth: AuthInfo): { session: BoundSession<T> } | { refused: SessionRefusalReason } {
    const owner = callerKey(auth);
    if (owner === undefined) return { refused: 'session_no_identity' };
    const entry = this.entries.get(sessionId);
    if (entry === undefined) return { refused: 'session_unknown' };
    if (this.expired(entry, this.now())) {
      this.remove(entry);
      return { refused: 'session_unknown' };
    }
    if (entry.owner !== owner) return { refused: 'session_owner_mismatch' };
    this.touch(entry);
    return { session: entry };
  }

  bind(sessionId: string, auth: AuthInfo, value?: T, bytes = 0): BindOutcome {
    const owner = callerKey(auth);
    if (owner === undefined) return 'no_identity';
    return this.bindOwned(sessionId, owner, value as T, bytes, false);
  }

  bindInUse(sessionId: string, auth: AuthInfo, value?: T, bytes = 0): BoundInUse<T> {
    return this.inUse(sessionId, this.bind(sessionId, auth, value, bytes));
  }

  /** The entry `outcome` bound, acquired; or why none was. */
  private inUse(sessionId: string, outcome: BindOutcome): BoundInUse<T> {
    if (outcome !== 'bound') return { refused: outcome };
    const entry = this.entries.get(sessionId)!;
    entry.acquire();
    return { session: entry };
  }

  reserve(auth: AuthInfo): SessionReservation<T> | 'no_identity' | 'busy' {
    const owner = callerKey(auth);
    if (owner === undefined) return 'no_identity';
    this.sweep();
    // Synchronous on purpose: the slot is taken before anything else can run. Nothing is evicted unless
    // the slot can then be had.
    if (this.admit(owner) !== undefined) return 'busy';
    this.opening.push(owner);
    let held = true;
    const release = (): void => {
      if (!held) return;
      held = false;
      this.opening.splice(this.opening.indexOf(owner), 1);
    };
    return {
      bind: (sessionId, value, bytes = 0) => {
        release();
        return this.bindOwned(sessionId, owner, value, bytes, true);
      },
      bindInUse: (sessionId, value, bytes = 0) => {
        release();
        return this.inUse(sessionId, this.bindOwned(sessionId, owner, value, bytes, true));
      },
      release,
    };
  }

  forget(sessionId: string, notify = true): void {
    const entry = this.entries.get(sessionId);
    if (entry) this.remove(entry, notify);
  }

  /** Drops expired entries from the old end; stops at the first entry used within the timeout. */
  sweep(): void {
    if (this.idleTimeoutMs === 0) return;
    const at = this.now();
    const gone: Entry<T>[] = [];
    for (const entry of this.entries.values()) {
      if (at - entry.lastSeen < this.idleTimeoutMs) break;
      if (entry.active <= 0) gone.push(entry);
    }
    for (const entry of gone) this.remove(entry);
  }

  sessions(): IterableIterator<BoundSession<T>> {
    return this.entries.values();
  }

  clear(): void {
    for (const entry of [...this.entries.values()]) this.remove(entry);
  }

  /** Marks a use of `entry` when it is still held: one forgotten meanwhile must stay forgotten. */
  touchIfHeld(entry: Entry<T>): void {
    if (this.entries.get(entry.id) === entry) this.touch(entry);
  }

  private touch(entry: Entry<T>): void {
    entry.lastSeen = this.now();
    this.entries.delete(entry.id);
    this.entries.set(entry.id, entry);
  }

  private expired(entry: Entry<T>, at: number): boolean {
    return this.idleTimeoutMs > 0 && entry.active <= 0 && at - entry.lastSeen >= this.idleTimeoutMs;
  }

  private remove(entry: Entry<T>, notify = true): void {
    if (this.entries.get(entry.id) !== entry) return;
    this.entries.delete(entry.id);
    this.bytes -= entry.bytes;
    if (!notify || !this.onForget) return;
    try {
      this.onForget(entry);
    } catch {
      // Releasing what a session holds must never break serving.
    }
  }

  /** How many sessions `owner` holds and is opening. */
  private countOwned(owner: string): { own: number; opening: number } {
    let own = 0;
    let opening = 0;
    for (const entry of this.entries.values()) if (entry.owner === owner) own++;
    for (const o of this.opening) if (o === owner) opening++;
    return { own, opening };
  }

  /** Forgets the caller's least recently used sessions (idle ones first) until one more fits; false if none can go. */
  private makeRoomForCaller(owner: string): boolean {
    if (this.maxPerCaller === undefined) return true;
    const own: Entry<T>[] = [];
    for (const entry of this.entries.values()) if (entry.owner === owner) own.push(entry);
    let count = own.length + this.countOwned(owner).opening;
    while (count >= this.maxPerCaller) {
      if (own.length === 0) return false;
      const at = own.findIndex((entry) => entry.active <= 0);
      const [victim] = own.splice(at === -1 ? 0 : at, 1);
      this.remove(victim!);
      count--;
    }
    return true;
  }

  /** Whether one more session of `owner` can be made room for (an open session to evict where a limit is reached). */
  private canMakeRoom(owner: string): boolean {
    const { own, opening } = this.countOwned(owner);
    if (this.maxPerCaller !== undefined && own + opening >= this.maxPerCaller && own === 0) return false;
    return this.entries.size + this.opening.length < this.maxSessions || this.entries.size > 0;
  }

  /** Without eviction: which bound one more session of `owner` would exceed, if any. */
  private boundReached(owner: string): 'full' | 'caller_full' | undefined {
    if (this.maxPerCaller !== undefined) {
      const { own, opening } = this.countOwned(owner);
      if (own + opening >= this.maxPerCaller) return 'caller_full';
    }
    return this.entries.size + this.opening.length >= this.maxSessions ? 'full' : undefined;
  }

  /** Makes room for one more session of `owner` by the configured rule; the bound that refused it, if one did. */
  private admit(owner: string): 'full' | 'caller_full' | undefined {
    if (!this.evict) return this.boundReached(owner);
    return this.canMakeRoom(owner) && this.makeRoomForCaller(owner) && this.makeRoom() ? undefined : 'full';
  }

  /** Evicts least recently used sessions (idle ones first) until one more fits; false if none can go. */
  private makeRoom(): boolean {
    return this.evictWhile(() => this.entries.size + this.opening.length >= this.maxSessions);
  }

  /**
   * Makes room for `bytes` more under {@link maxBytes}: by evicting least recently used sessions (idle ones first),
   * or without eviction not at all; false when they cannot fit.
   */
  private makeRoomForBytes(bytes: number): boolean {
    if (bytes > this.maxBytes) return false;
    if (!this.evict) return this.bytes + bytes <= this.maxBytes;
    return this.evictWhile(() => this.bytes + bytes > this.maxBytes);
  }

  /** Evicts least recently used sessions (idle ones first) while `over()` holds; false if none is left to go. */
  private evictWhile(over: () => boolean): boolean {
    while (over()) {
      let victim: Entry<T> | undefined;
      for (const entry of this.entries.values()) {
        victim ??= entry;
        if (entry.active <= 0) {
          victim = entry;
          break;
        }
      }
      if (!victim) return false;
      this.remove(victim);
    }
    return true;
  }

  private bindOwned(sessionId: string, owner: string, value: T, bytes: number, reserved: boolean): BindOutcome {
    const existing = this.entries.get(sessionId);
    if (existing !== undefined && !this.expired(existing, this.now())) {
      if (existing.owner !== owner) return 'conflict';
      this.touch(existing);
      return 'known';
    }
    if (existing !== undefined) this.remove(existing);
    if (!reserved) {
      this.sweep();
      const refused = this.admit(owner);
      if (refused !== undefined) return refused;
    }
    // An estimate that is no size counts nothing, so that the sum stays a number.
    const size = Number.isFinite(bytes) && bytes > 0 ? bytes : 0;
    if (!this.makeRoomForBytes(size)) return 'full';
    this.entries.set(sessionId, new Entry(this, sessionId, owner, value, size));
    this.bytes += size;
    return 'bound';
  }
}

/**
 * Creates a session registry: `Mcp-Session-Id` → owner ({@link callerKey}), so that a session id is never
 * enough to use a session (MCP 2025-11-25 security best practices, "Session hijacking": servers SHOULD bind
 * session ids to user-specific information).
 *
 * Bounded (`maxSessions`, `maxSessionsPerCaller`, and `maxBytes` of what the values retain by their owners'
 * estimates; least recently used evicted first, preferring sessions
 * with nothing in progress, or with `evict: false` the new session refused), counting sessions still being opened; entries expire after `idleTimeoutMs`
 * without use. Expiry is checked when a session is looked up and swept from the least recently used end
 * when one is bound; `sweep()` does it on demand for adapters that must release what sessions hold.
 *
 * @example
 * const registry = createSessionRegistry({ maxSessions: DEFAULT_MAX_SESSIONS, idleTimeoutMs: DEFAULT_SESSION_IDLE_TIMEOUT_MS });
 * registry.bind(issuedId, auth); // 'bound'
 * registry.lookup(issuedId, otherCaller); // { refused: 'session_owner_mismatch' }
 */
export function createSessionRegistry<T = undefined>(options: SessionRegistryOptions<T>): SessionRegistry<T> {
  return new BoundedSessionRegistry(options);
}
