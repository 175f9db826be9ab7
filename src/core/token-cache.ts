import type { AuthInfo } from './auth-info.js';
import { ConfigurationError } from './errors.js';
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
   * returned. A hit makes the entry the most recently used.
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
}

/**
 * Creates a {@link TokenCache}: an LRU over a `Map`, whose insertion order is the recency order (a hit is
 * deleted and re-inserted; the first key is the eviction victim).
 *
 * @throws ConfigurationError naming `tokenCache.maxEntries` or `tokenCache.maxTtlSeconds` when not a positive
 *   number (`maxEntries` must be an integer).
 */
export function createTokenCache(options: CreateTokenCacheOptions = {}): TokenCache {
  const maxEntries = options.maxEntries ?? DEFAULT_TOKEN_CACHE_MAX_ENTRIES;
  const maxTtlSeconds = options.maxTtlSeconds ?? DEFAULT_TOKEN_CACHE_MAX_TTL_SECONDS;
  if (!Number.isSafeInteger(maxEntries) || maxEntries < 1) {
    throw new ConfigurationError('tokenCache.maxEntries', 'must be a positive integer');
  }
  if (typeof maxTtlSeconds !== 'number' || !(maxTtlSeconds > 0)) {
    throw new ConfigurationError('tokenCache.maxTtlSeconds', 'must be a positive number of seconds');
  }
  const now = options.now ?? Date.now;
  const entries = new Map<string, Entry>();

  return {
    get(token) {
      const entry = entries.get(token);
      if (entry === undefined) return undefined;
      entries.delete(token);
      if (entry.expiresAtMs <= now()) return undefined;
      entries.set(token, entry);
      return entry.info;
    },
    set(token, info, ttlSeconds = maxTtlSeconds) {
      const nowMs = now();
      let expiresAtMs = nowMs + Math.min(ttlSeconds, maxTtlSeconds) * 1000;
      if (info.expiresAt !== undefined) expiresAtMs = Math.min(expiresAtMs, info.expiresAt * 1000);
      if (!(expiresAtMs > nowMs)) return;
      entries.delete(token);
      if (entries.size >= maxEntries) {
        // The first key is the least recently used; expired entries age out the same way.
        entries.delete(entries.keys().next().value as string);
      }
      entries.set(token, { info, expiresAtMs });
    },
    clear() {
      entries.clear();
    },
    get size() {
      return entries.size;
    },
  };
}
