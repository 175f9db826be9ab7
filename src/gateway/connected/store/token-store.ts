import { CredentialStoreFullError } from '../../upstream-auth/upstream-credentials.js';

/**
 * Where connected accounts are kept: sealed strings under string keys. Every value is sealed (JWE, see
 * `record-sealer.ts`) before it reaches a store, so a store never holds a token, a subject or a secret in plain
 * text. One interface, several places: a directory on one machine, Redis for a fleet, memory for tests.
 */

/** A place for sealed values. Every method bounds what it keeps; none logs a value. */
export interface TokenStore {
  /** The value under `key`, or undefined when absent or expired. */
  get(key: string): Promise<string | undefined>;
  /**
   * Writes `sealed` under `key`, for at most `ttlMs` milliseconds when given (tickets, pending flows).
   *
   * @param owner - For an ephemeral entry written for a user (a ticket, a pending flow, a used state): that user's
   *   `userKey`. A new such entry counts against the user's share of the ephemeral entries (see
   *   `DEFAULT_TOKEN_STORE_EPHEMERAL_SHARE_DIVISOR`), so that one user cannot fill what every user needs.
   * @throws TokenStoreFullError when the store is at its bound (entries or bytes); TokenStoreShareExceededError
   *   when `owner` holds its share while the store is at least half full.
   */
  set(key: string, sealed: string, ttlMs?: number, owner?: string): Promise<void>;
  /**
   * Writes `next` only if the current value is `expected` (undefined: absent). Resolves true when written. A
   * refresh that rotates a refresh token writes with it, so two replicas refreshing at once cannot both win.
   * `owner` as for {@link TokenStore.set}.
   */
  compareAndSet(key: string, expected: string | undefined, next: string, ttlMs?: number, owner?: string): Promise<boolean>;
  /** Removes `key`; resolves true when it was there. */
  delete(key: string): Promise<boolean>;
  /** Reads and removes `key` in one step: a one-time value (a connect ticket, a pending authorization). */
  take(key: string): Promise<string | undefined>;
  /** Keys that start with `prefix`, at most `limit` of them, in no particular order. */
  keys(prefix: string, limit: number): Promise<string[]>;
  /**
   * Runs `work` while holding the lock `name`, held for at most `ttlMs` milliseconds; callers of the same name
   * wait their turn (across replicas for a shared store).
   */
  withLock<T>(name: string, ttlMs: number, work: () => Promise<T>): Promise<T>;
  /**
   * For a store behind a server (Redis): resolves once it answers a round trip, rejects with
   * `TokenStoreUnavailableError` (a short reason) when it cannot be reached, for `/readyz`. Absent for a store on
   * this machine, which is always there.
   */
  reachable?(): Promise<void>;
  /**
   * For a store behind a server (Redis): the longest wait for one command, in milliseconds, so that a caller can
   * give a lock as long as the commands it runs under it. Absent for a store on this machine.
   */
  readonly commandTimeoutMs?: number;
  /** Releases connections and timers. */
  close(): Promise<void>;
}

/** A store refused a write: it holds as many entries or bytes as it is allowed to. */
export class TokenStoreFullError extends CredentialStoreFullError {
  constructor(what: string, retryAfterMs?: number) {
    super(`the token store is full (${what})`, retryAfterMs);
    this.name = 'TokenStoreFullError';
  }
}

/**
 * A store refused a new ephemeral entry of one user: that user holds its share of them while the store is at least
 * half full. Answered 429 with `Retry-After` ({@link CredentialStoreFullError.retryAfterMs}); other users are served.
 */
export class TokenStoreShareExceededError extends TokenStoreFullError {
  /**
   * @param maxPerOwner - The share: live ephemeral entries one user may hold under pressure.
   * @param retryAfterMs - Milliseconds until the user's oldest such entry expires, at least 1.
   */
  constructor(
    readonly maxPerOwner: number,
    retryAfterMs: number,
  ) {
    super(`one user's share of ${maxPerOwner} ephemeral entries`, Math.max(1, Math.ceil(retryAfterMs)));
    this.name = 'TokenStoreShareExceededError';
  }
}
