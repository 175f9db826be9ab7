import { checkInteger, checkNumber } from '../kernel/settings.js';
import type { TokenCacheOptions } from './token-verifier.js';

/** Default {@link TokenCacheOptions.maxEntries}. */
export const DEFAULT_TOKEN_CACHE_MAX_ENTRIES = 10_000;
/** Default {@link TokenCacheOptions.maxBytes}: 32 MiB. */
export const DEFAULT_TOKEN_CACHE_MAX_BYTES = 32 * 1_048_576;
/** Default {@link TokenCacheOptions.maxTtlSeconds}, in seconds. */
export const DEFAULT_TOKEN_CACHE_MAX_TTL_SECONDS = 300;

/** Options of {@link createTokenCache}: the public {@link TokenCacheOptions} plus a clock for tests. */
export interface CreateTokenCacheOptions extends TokenCacheOptions {
  /** Current time in milliseconds since the epoch. Default `Date.now`. */
  now?: () => number;
}

/** What {@link TokenCache.set} is told about an entry besides its value. */
export interface TokenCacheEntryOptions {
  /** Upper bound on how long the entry is reused, in seconds; default and ceiling `maxTtlSeconds`. */
  ttlSeconds?: number;
  /** The entry's estimated memory, in bytes, counted against `maxBytes`. Default 0 (entries only). */
  bytes?: number;
}

/**
 * A bounded cache of verified tokens, so a token seen again costs a digest, a map lookup and a clock read
 * instead of a signature check or an introspection call. Keys are whatever the caller chooses (the token
 * verifier uses a SHA-256 digest of the token, so the cache never holds a token); values carry `expiresAt`
 * (seconds since the epoch), past which they are never returned.
 */
export interface TokenCache<V extends { readonly expiresAt?: number }> {
  /**
   * The cached value for `key`, or `undefined` when absent or expired. An expired entry is deleted, never
   * returned. A hit makes the entry the most recently used.
   */
  get(key: string): V | undefined;
  /**
   * Caches `value` for at most `ttlSeconds` (default and upper bound: `maxTtlSeconds`), and never past
   * `value.expiresAt`. Evicts least recently used entries until both bounds hold. Does nothing for a TTL ≤ 0
   * or an entry larger than `maxBytes` on its own.
   */
  set(key: string, value: V, entry?: TokenCacheEntryOptions): void;
  /** Forgets the entry for `key`, if any (for example a credential its upstream just refused). */
  delete(key: string): void;
  /** Forgets every entry (for example after a key compromise). */
  clear(): void;
  /** Number of entries held, expired ones included until they are looked up or evicted. */
  readonly size: number;
  /** Sum of the held entries' `bytes` estimates; never above `maxBytes`. */
  readonly bytes: number;
}

/** A cache entry, also a node of the recency list (most recent at `head`). */
interface Entry<V> {
  key: string;
  value: V;
  /** Expiry, milliseconds since the epoch. */
  expiresAtMs: number;
  bytes: number;
  newer: Entry<V> | undefined;
  older: Entry<V> | undefined;
}

/**
 * Creates a {@link TokenCache}: a `Map` for lookups and a doubly linked recency list for exact LRU order,
 * bounded both in entries and in (estimated) bytes. Every operation is O(1): a hit relinks one node, and
 * eviction takes the list's tail. (An earlier version scanned the `Map` from its start to evict, which gets
 * slower as deletions leave holes at the front of V8's hash table: a full cache evicting on every request
 * slowed down over time.)
 *
 * @example
 * const cache = createTokenCache<{ expiresAt?: number }>({ maxEntries: 1000, maxBytes: 4 * 1_048_576 });
 * cache.set(digest, identity, { bytes: 2_048 });
 *
 * @throws ConfigurationError naming `tokenCache.maxEntries`, `tokenCache.maxBytes` or `tokenCache.maxTtlSeconds`
 *   when not a positive number (`maxEntries` and `maxBytes` must be integers).
 */
export function createTokenCache<V extends { readonly expiresAt?: number }>(options: CreateTokenCacheOptions = {}): TokenCache<V> {
  const maxEntries = checkInteger(options.maxEntries, 'tokenCache.maxEntries', DEFAULT_TOKEN_CACHE_MAX_ENTRIES);
  const maxBytes = checkInteger(options.maxBytes, 'tokenCache.maxBytes', DEFAULT_TOKEN_CACHE_MAX_BYTES);
  const maxTtlSeconds = checkNumber(options.maxTtlSeconds, 'tokenCache.maxTtlSeconds', DEFAULT_TOKEN_CACHE_MAX_TTL_SECONDS, { positive: true });
  const now = options.now ?? Date.now;
  const entries = new Map<string, Entry<V>>();
  let head: Entry<V> | undefined;
  let tail: Entry<V> | undefined;
  let bytes = 0;

  function unlink(entry: Entry<V>): void {
    if (entry.newer) entry.newer.older = entry.older;
    else head = entry.older;
    if (entry.older) entry.older.newer = entry.newer;
    else tail = entry.newer;
    entry.newer = entry.older = undefined;
  }

  function pushHead(entry: Entry<V>): void {
    entry.older = head;
    if (head) head.newer = entry;
    head = entry;
    tail ??= entry;
  }

  function remove(entry: Entry<V>): void {
    unlink(entry);
    entries.delete(entry.key);
    bytes -= entry.bytes;
  }

  return {
    get(key) {
      const entry = entries.get(key);
      if (entry === undefined) return undefined;
      if (entry.expiresAtMs <= now()) {
        remove(entry);
        return undefined;
      }
      if (entry !== head) {
        unlink(entry);
        pushHead(entry);
      }
      return entry.value;
    },
    set(key, value, entry = {}) {
      const nowMs = now();
      const ttlSeconds = entry.ttlSeconds ?? maxTtlSeconds;
      let expiresAtMs = nowMs + Math.min(ttlSeconds, maxTtlSeconds) * 1000;
      if (value.expiresAt !== undefined) expiresAtMs = Math.min(expiresAtMs, value.expiresAt * 1000);
      const size = Math.max(0, entry.bytes ?? 0);
      const previous = entries.get(key);
      if (previous !== undefined) remove(previous);
      if (!(expiresAtMs > nowMs) || size > maxBytes) return;
      while (tail !== undefined && (entries.size >= maxEntries || bytes + size > maxBytes)) remove(tail);
      const created: Entry<V> = { key, value, expiresAtMs, bytes: size, newer: undefined, older: undefined };
      entries.set(key, created);
      pushHead(created);
      bytes += size;
    },
    delete(key) {
      const entry = entries.get(key);
      if (entry !== undefined) remove(entry);
    },
    clear() {
      entries.clear();
      head = tail = undefined;
      bytes = 0;
    },
    get size() {
      return entries.size;
    },
    get bytes() {
      return bytes;
    },
  };
}
