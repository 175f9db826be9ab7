import { checkInteger } from './settings.js';

/**
 * Remembers the one-time identifiers of DPoP proofs (`jti`, RFC 9449 §11.1) for as long as a proof could be
 * accepted, so that a captured proof cannot be used again. The default is in memory, per process
 * ({@link createMemoryReplayCache}); a fleet of servers shares one (a store with an atomic "set if absent",
 * e.g. Redis `SET key 1 NX PXAT expiresAtMs`), or each server only sees replays sent to itself.
 *
 * @example
 * // A shared store: claim succeeds only for the first server to see the jti.
 * const replayCache: ReplayCache = {
 *   claim: async (jti, expiresAtMs) => (await redis.set(`dpop:${jti}`, '1', 'NX', 'PXAT', expiresAtMs)) === 'OK',
 * };
 */
export interface ReplayCache {
  /**
   * Records `jti` as used until `expiresAtMs` (milliseconds since the epoch) and returns true, or returns false
   * when it is already recorded and not yet expired, or when `expiresAtMs` has passed (a proof that expired while
   * its token was being verified can no longer be claimed: otherwise every replay landing after the expiry would
   * be recorded anew, and accepted). Must be atomic: of two concurrent claims of one `jti`, one wins. A rejected
   * promise (or a thrown error) is answered 503 (the store is unavailable or full), never as an accepted proof.
   */
  claim(jti: string, expiresAtMs: number): boolean | Promise<boolean>;
}

/** Default {@link MemoryReplayCacheOptions.maxEntries}. */
export const DEFAULT_REPLAY_CACHE_MAX_ENTRIES = 100_000;

/** Options of {@link createMemoryReplayCache}. */
export interface MemoryReplayCacheOptions {
  /**
   * Most identifiers held (each at most 128 characters: longer `jti`s are refused by the proof check). Expired
   * entries are dropped first; when the cache is still full of live claims, a new claim throws (the guard answers
   * 503 with `Retry-After`) rather than forget a live `jti`, which would let a flood of proofs wash out the one an
   * attacker wants to replay. Size it above the DPoP requests one process accepts per proof window (60 s plus the
   * clock tolerance). Default 100 000 (about 20 MB at most).
   */
  maxEntries?: number;
  /** Current time in milliseconds since the epoch. Default `Date.now`. */
  now?: () => number;
}

/** A {@link ReplayCache} in memory, with what it holds, for tests and metrics. */
export interface MemoryReplayCache extends ReplayCache {
  claim(jti: string, expiresAtMs: number): boolean;
  /** Entries held, expired ones included until they are swept or evicted. */
  readonly size: number;
}

/**
 * The default {@link ReplayCache}: a `Map` in insertion order, bounded by `maxEntries`. Claims arrive roughly in
 * expiry order (every proof is accepted for the same window after its `iat`), so the oldest entries are the first
 * to expire: sweeping from the front is cheap, and evicting from the front when full drops the claims closest to
 * expiry.
 *
 * @throws ConfigurationError naming `maxEntries` when it is not a positive integer.
 */
export function createMemoryReplayCache(options: MemoryReplayCacheOptions = {}): MemoryReplayCache {
  const maxEntries = checkInteger(options.maxEntries, 'maxEntries', DEFAULT_REPLAY_CACHE_MAX_ENTRIES, { min: 1 });
  const now = options.now ?? Date.now;
  const expiries = new Map<string, number>();

  const sweep = (at: number): void => {
    for (const [jti, expiresAtMs] of expiries) {
      if (expiresAtMs > at) return;
      expiries.delete(jti);
    }
  };

  return {
    claim(jti, expiresAtMs) {
      const at = now();
      if (!(expiresAtMs > at)) return false;
      const seen = expiries.get(jti);
      if (seen !== undefined && seen > at) return false;
      if (seen !== undefined) expiries.delete(jti);
      sweep(at);
      // Fail closed: forgetting a live claim would reopen its proof to replay.
      if (expiries.size >= maxEntries) throw new Error(`the DPoP replay cache holds ${maxEntries} live proofs (maxEntries)`);
      expiries.set(jti, expiresAtMs);
      return true;
    },
    get size() {
      return expiries.size;
    },
  };
}
