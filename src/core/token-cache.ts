import { checkInteger, checkNumber } from './settings.js';
import type { AuthInfo } from './auth-info.js';
import type { TokenCacheOptions } from './token-verifier.js';

/** Default {@link TokenCacheOptions.maxEntries}. */
export const DEFAULT_TOKEN_CACHE_MAX_ENTRIES = 10_000;
/** Default {@link TokenCacheOptions.maxTtlSeconds}, in seconds. */
export const DEFAULT_TOKEN_CACHE_MAX_TTL_SECONDS = 300;

/** Options of {@link createTokenCache}: the public {@link TokenCacheOptions} plus a clock for tests. */
export interface CreateTokenCacheOptions extends TokenCacheOptions {
  /** Current time in milliseconds since the epoch. Default `Date.now`. */
  now?: () => number;
}

/**
 * A bounded cache of verified tokens, so a token seen again costs a map lookup and a clock read instead of a
 * signature check or an introspection call. Keys are the token strings themselves: memory is bounded by
 * `maxEntries` × token size (tokens are limited by Node's 16 KB header limit).
 */
export interface TokenCache {
  /**
   * The cached identity for `token`, or `undefined` when absent or expired. An expired entry is deleted, never
   * returned. A hit marks the entry as recently used, which spares it from the next eviction.
   */
  get(token: string): AuthInfo | undefined;
  /**
   * Caches `info` for at most `ttlSeconds` (default and upper bound: `maxTtlSeconds`), and never past
   * `info.expiresAt`. Evicts the least recently used entry when full. Does nothing for a TTL ≤ 0.
   */
  set(token: string, info: AuthInfo, ttlSeconds?: number): void;
  /** Forgets every entry (for example after a key compromise). */
  clear(): void;
  /** Number of entries held, expired ones included until they are looked up or evicted. */
  readonly size: number;
}

interface Entry {
  info: AuthInfo;
  /** Expiry, milliseconds since the epoch. */
  expiresAtMs: number;
  /** Set by a hit since the entry last reached the head of the eviction queue. */
  used: boolean;
}

/**
 * Creates a {@link TokenCache}: a second-chance (clock) approximation of LRU over a `Map` in insertion
 * order. A hit only sets a flag, so the hot path is one lookup and one write, with no reordering of the
 * map; eviction gives each flagged entry at the head one more round (clearing its flag) and removes the
 * first unflagged or expired one. Each pass clears flags, so eviction is amortized O(1).
 *
 * @throws ConfigurationError naming `tokenCache.maxEntries` or `tokenCache.maxTtlSeconds` when not a positive
 *   number (`maxEntries` must be an integer).
 */
export function createTokenCache(options: CreateTokenCacheOptions = {}): TokenCache {
  const maxEntries = checkInteger(options.maxEntries, 'tokenCache.maxEntries', DEFAULT_TOKEN_CACHE_MAX_ENTRIES);
  const maxTtlSeconds = checkNumber(options.maxTtlSeconds, 'tokenCache.maxTtlSeconds', DEFAULT_TOKEN_CACHE_MAX_TTL_SECONDS, { positive: true });
  const now = options.now ?? Date.now;
  const entries = new Map<string, Entry>();

  function evictOne(nowMs: number): void {
    for (;;) {
      const head = entries.entries().next().value as [string, Entry];
      entries.delete(head[0]);
      if (!head[1].used || head[1].expiresAtMs <= nowMs) return;
      head[1].used = false;
      entries.set(head[0], head[1]);
    }
  }

  return {
    get(token) {
      const entry = entries.get(token);
      if (entry === undefined) return undefined;
      if (entry.expiresAtMs <= now()) {
        entries.delete(token);
        return undefined;
      }
      entry.used = true;
      return entry.info;
    },
    set(token, info, ttlSeconds = maxTtlSeconds) {
      const nowMs = now();
      let expiresAtMs = nowMs + Math.min(ttlSeconds, maxTtlSeconds) * 1000;
      if (info.expiresAt !== undefined) expiresAtMs = Math.min(expiresAtMs, info.expiresAt * 1000);
      if (!(expiresAtMs > nowMs)) return;
      entries.delete(token);
      if (entries.size >= maxEntries) evictOne(nowMs);
      entries.set(token, { info, expiresAtMs, used: false });
    },
    clear() {
      entries.clear();
    },
    get size() {
      return entries.size;
    },
  };
}
