import { checkInteger } from '../kernel/settings.js';
import { defaultCallerShare, sharePressure } from './caller-share.js';

/**
 * Remembers the one-time identifiers of DPoP proofs (`jti`, RFC 9449 §11.1) for as long as a proof could be
 * accepted, so that a captured proof cannot be used again. The default is in memory, per process
 * ({@link createMemoryReplayCache}); a fleet of servers shares one (a store with an atomic "set if absent",
 * e.g. Redis `SET key 1 NX PXAT expiresAtMs`), or each server only sees replays sent to itself.
 *
 * @example
 * // A shared store: claim succeeds only for the first server to see the jti (no per-caller share: see claim).
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
   *
   * `caller` names who the claim counts against: a SHA-256 digest (43 base64url characters) of the identity the
   * token was issued to (issuer, subject, client: what rate limits count by). A cache bounded in size should give
   * each caller a share of it, and throw a {@link ReplayShareExceededError} for a new `jti` of a caller that holds
   * its share of live claims, so that one caller never fills what every other caller needs (the guard answers 429
   * with `Retry-After`). A cache that ignores it lets one caller's proofs fill it for everyone.
   */
  claim(jti: string, expiresAtMs: number, caller?: string): boolean | Promise<boolean>;
}

/**
 * Thrown by {@link ReplayCache.claim} for a new `jti` of a caller that already holds its share of live claims.
 * The guard answers 429 with `Retry-After` (see {@link createMemoryReplayCache}).
 */
export class ReplayShareExceededError extends Error {
  /**
   * @param maxPerCaller - The share: live claims one caller may hold.
   * @param retryAfterMs - Milliseconds until the caller's oldest live claim expires, making room for one more.
   */
  constructor(
    readonly maxPerCaller: number,
    readonly retryAfterMs: number,
  ) {
    super(`the caller holds ${maxPerCaller} live DPoP proofs (its share of the replay cache)`);
    this.name = 'ReplayShareExceededError';
  }
}

/** Default {@link MemoryReplayCacheOptions.maxEntries}. */
export const DEFAULT_REPLAY_CACHE_MAX_ENTRIES = 100_000;

/** Default {@link MemoryReplayCacheOptions.maxEntriesPerCaller} with the default `maxEntries`: 1 % of it (see `caller-share.ts`). */
export const DEFAULT_REPLAY_CACHE_MAX_ENTRIES_PER_CALLER = defaultCallerShare(DEFAULT_REPLAY_CACHE_MAX_ENTRIES);

/** Options of {@link createMemoryReplayCache}. */
export interface MemoryReplayCacheOptions {
  /**
   * Most identifiers held (each at most 128 characters: longer `jti`s are refused by the proof check). Expired
   * entries are dropped first; when the cache is still full of live claims, a new claim throws (the guard answers
   * 503 with `Retry-After`) rather than forget a live `jti`, which would let a flood of proofs wash out the one an
   * attacker wants to replay. Size it above the DPoP requests one process accepts per proof window (60 s plus
   * twice the clock tolerance: 70 s by default). Default 100 000 (about 25 MB, up to 45 MB when every claim is
   * a different caller's).
   */
  maxEntries?: number;
  /**
   * Most live identifiers one caller (see {@link ReplayCache.claim}'s `caller`) may hold while the cache is under
   * pressure (at least half full): then a caller holding this many has its new proofs refused (429 with
   * `Retry-After`, until its oldest claim expires) while every other caller is served. While the cache is less
   * than half full no caller is limited, so a single busy caller is not capped while there is room; and one caller
   * can fill at most half of it, the other half being left to callers within their share, so no caller can push
   * the others to 503. Under pressure one caller makes at most this many DPoP requests per proof window (70 s
   * by default): about 14 a second with the default. Default 1 % of `maxEntries`, at least 1 (1 000 with the
   * default `maxEntries`).
   */
  maxEntriesPerCaller?: number;
  /** Current time in milliseconds since the epoch. Default `Date.now`. */
  now?: () => number;
}

/** A {@link ReplayCache} in memory, with what it holds, for tests and metrics. */
export interface MemoryReplayCache extends ReplayCache {
  claim(jti: string, expiresAtMs: number, caller?: string): boolean;
  /** Entries held, expired ones included until they are swept or evicted. */
  readonly size: number;
}

/** The live claims of one caller: their expiries, earliest first. */
interface Holder {
  readonly caller: string;
  readonly expiries: number[];
}

/** One claimed `jti`: until when, and whose share it counts against. */
interface Claim {
  readonly expiresAtMs: number;
  readonly holder: Holder | undefined;
}

/**
 * The default {@link ReplayCache}: a `Map` in insertion order, bounded by `maxEntries`, and each caller's claims
 * bounded by `maxEntriesPerCaller` once the cache is half full. Claims arrive roughly in expiry order (every proof is accepted for the same
 * window after its `iat`), so the oldest entries are the first to expire: sweeping from the front is cheap. A
 * caller's own expiries are kept sorted, so that its share counts only its live claims exactly (whatever order
 * its `iat`s come in) and its `Retry-After` is exact.
 *
 * @throws ConfigurationError naming `maxEntries` or `maxEntriesPerCaller` when not a positive integer.
 */
export function createMemoryReplayCache(options: MemoryReplayCacheOptions = {}): MemoryReplayCache {
  const maxEntries = checkInteger(options.maxEntries, 'maxEntries', DEFAULT_REPLAY_CACHE_MAX_ENTRIES, { min: 1 });
  const maxPerCaller = checkInteger(options.maxEntriesPerCaller, 'maxEntriesPerCaller', defaultCallerShare(maxEntries), { min: 1 });
  const now = options.now ?? Date.now;
  // From here on the shares are enforced: below it no caller is limited, and one caller alone can reach no further.
  const pressure = sharePressure(maxEntries);
  const claims = new Map<string, Claim>();
  const holders = new Map<string, Holder>();

  /** Drops a caller's expired claims from its share, and the caller once it holds none. */
  const prune = (holder: Holder, at: number): void => {
    const { expiries } = holder;
    let expired = 0;
    while (expired < expiries.length && (expiries[expired] as number) <= at) expired++;
    if (expired > 0) expiries.splice(0, expired);
    // A claim may still name a holder that was emptied and replaced: never delete its successor.
    if (expiries.length === 0 && holders.get(holder.caller) === holder) holders.delete(holder.caller);
  };
  const forget = (jti: string, claim: Claim, at: number): void => {
    claims.delete(jti);
    if (claim.holder !== undefined) prune(claim.holder, at);
  };
  const sweep = (at: number): void => {
    for (const [jti, claim] of claims) {
      if (claim.expiresAtMs > at) return;
      forget(jti, claim, at);
    }
  };

  return {
    claim(jti, expiresAtMs, caller) {
      const at = now();
      if (!(expiresAtMs > at)) return false;
      const seen = claims.get(jti);
      if (seen !== undefined && seen.expiresAtMs > at) return false;
      if (seen !== undefined) forget(jti, seen, at);
      sweep(at);
      let holder = caller === undefined ? undefined : holders.get(caller);
      if (holder !== undefined) {
        prune(holder, at);
        const oldest = holder.expiries[0];
        // Under pressure and its own share full: the caller waits for its oldest proof to expire, the others are served.
        if (oldest !== undefined && holder.expiries.length >= maxPerCaller && claims.size >= pressure) throw new ReplayShareExceededError(maxPerCaller, oldest - at);
      }
      // Fail closed: forgetting a live claim would reopen its proof to replay.
      if (claims.size >= maxEntries) throw new Error(`the DPoP replay cache holds ${maxEntries} live proofs (maxEntries)`);
      if (caller !== undefined) {
        if (holder !== undefined && holders.get(caller) === holder) insertSorted(holder.expiries, expiresAtMs);
        // An array of one: most callers hold one or two claims, and an empty array grows to 17 slots on a push.
        else holders.set(caller, (holder = { caller, expiries: [expiresAtMs] }));
      }
      claims.set(jti, { expiresAtMs, holder });
      return true;
    },
    get size() {
      return claims.size;
    },
  };
}

/** Inserts `value` into the ascending `values`; honest proofs arrive in order, so mostly at the end. */
function insertSorted(values: number[], value: number): void {
  let low = 0;
  let high = values.length;
  if (high === 0 || (values[high - 1] as number) <= value) {
    values.push(value);
    return;
  }
  while (low < high) {
    const middle = (low + high) >>> 1;
    if ((values[middle] as number) <= value) low = middle + 1;
    else high = middle;
  }
  values.splice(low, 0, value);
}
