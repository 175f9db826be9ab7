import { checkInteger } from './settings.js';
import type { RateLimit } from './rate-limit.js';

/**
 * Counts requests against {@link RateLimit}s. The default is in memory, per process
 * ({@link createMemoryRateLimiter}); a fleet shares one in a store (the Redis one in `mcp-oauth-guard/redis`),
 * or each replica allows the limit by itself.
 */
export interface RateLimiter {
  /**
   * Counts one request for `key` (a caller, and for a per-tool limit the tool) under `limit`, and returns 0
   * when it is within the limit, else the milliseconds until the window that refused it ends (the request is
   * then refused with 429 and `Retry-After`). Counters of different limits are kept apart. A rejected promise
   * (or a thrown error) is answered 503: the store is unavailable.
   */
  consume(key: string, limit: RateLimit): number | Promise<number>;
}

/** Default {@link MemoryRateLimiterOptions.maxEntries}. */
export const DEFAULT_RATE_LIMITER_MAX_ENTRIES = 100_000;

/** Options of {@link createMemoryRateLimiter}. */
export interface MemoryRateLimiterOptions {
  /**
   * Most counters held (one per caller and limit in use). Counters whose window has ended are dropped first;
   * when every counter is live, the oldest window is forgotten (its caller starts a new window), so a flood of
   * new callers costs memory, not the service of everyone else. Default 100 000 (about 15 MB at most).
   */
  maxEntries?: number;
  /** Current time in milliseconds since the epoch. Default `Date.now`. */
  now?: () => number;
}

/** A {@link RateLimiter} in memory, with what it holds, for tests. */
export interface MemoryRateLimiter extends RateLimiter {
  consume(key: string, limit: RateLimit): number;
  /** Counters held, ended windows included until they are swept or evicted. */
  readonly size: number;
}

interface Window {
  count: number;
  endsAtMs: number;
}

/**
 * The default {@link RateLimiter}: fixed windows (as rate-limiter-flexible keeps them in Redis, so a limit means
 * the same per process and shared), in a `Map` in window-start order, bounded by `maxEntries`. A request costs a
 * lookup and, when its window has ended, a delete and a set.
 *
 * @throws ConfigurationError naming `maxEntries` when it is not a positive integer.
 */
export function createMemoryRateLimiter(options: MemoryRateLimiterOptions = {}): MemoryRateLimiter {
  const maxEntries = checkInteger(options.maxEntries, 'maxEntries', DEFAULT_RATE_LIMITER_MAX_ENTRIES, { min: 1 });
  const now = options.now ?? Date.now;
  const windows = new Map<string, Window>();

  const makeRoom = (at: number): void => {
    // Windows of one length end in the order they started; a longer one in front only stops the sweep early.
    for (const [key, window] of windows) {
      if (windows.size < maxEntries && window.endsAtMs > at) return;
      windows.delete(key);
    }
  };

  return {
    consume(key, limit) {
      const at = now();
      // The limit's text keeps the counters of two limits on one key apart.
      const id = `${limit.text} ${key}`;
      const window = windows.get(id);
      if (window !== undefined && window.endsAtMs > at) {
        if (window.count >= limit.points) return window.endsAtMs - at;
        window.count++;
        return 0;
      }
      if (window !== undefined) windows.delete(id);
      else if (windows.size >= maxEntries) makeRoom(at);
      windows.set(id, { count: 1, endsAtMs: at + limit.windowMs });
      return 0;
    },
    get size() {
      return windows.size;
    },
  };
}
