import { estimateStringBytes } from '../kernel/identity-size.js';
import { checkInteger } from '../kernel/settings.js';
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
   * (or a thrown error) is answered 503: the store is unavailable. The guard passes keys of at most 43
   * characters (a SHA-256 digest, see `rateLimitKey`), whatever the caller or tool name.
   */
  consume(key: string, limit: RateLimit): number | Promise<number>;
}

/** Default {@link MemoryRateLimiterOptions.maxEntries}. */
export const DEFAULT_RATE_LIMITER_MAX_ENTRIES = 100_000;
/** Default {@link MemoryRateLimiterOptions.maxBytes}: 16 MiB. */
export const DEFAULT_RATE_LIMITER_MAX_BYTES = 16 * 1_048_576;
/**
 * Estimated memory of one counter besides its key's string, in bytes (64-bit V8, no pointer compression): the
 * counter object with its recency links, its boxed end time, and its share of the `Map`'s hash table (which
 * grows by doubling, so up to half of it can be empty). Measured against `heapUsed`: about 205 bytes a counter
 * with a 43-character key on average, 240 just after the table doubled; the estimate, 267, stays above both.
 */
export const RATE_LIMITER_ENTRY_OVERHEAD_BYTES = 200;

/** Options of {@link createMemoryRateLimiter}. */
export interface MemoryRateLimiterOptions {
  /**
   * Most counters held (one per caller and limit in use, and per caller and tool under a per-tool limit).
   * Default 100 000.
   */
  maxEntries?: number;
  /**
   * Most memory the counters hold, in bytes, estimated: each counter costs its key's string plus
   * `RATE_LIMITER_ENTRY_OVERHEAD_BYTES` (200). With the guard's keys (43-character digests) that is 267 bytes a
   * counter, so the default, 16 777 216 (16 MiB), holds about 62 800 of them. A key larger than this
   * on its own is never held (its request is counted in a window that starts again each time).
   *
   * Whatever bound is reached first, counters whose window has ended are dropped first, then the oldest
   * window is forgotten (its caller starts a new window): a flood of new callers or tool names costs bounded
   * memory, not the service of everyone else.
   */
  maxBytes?: number;
  /** Current time in milliseconds since the epoch. Default `Date.now`. */
  now?: () => number;
}

/** A {@link RateLimiter} in memory, with what it holds, for tests and metrics. */
export interface MemoryRateLimiter extends RateLimiter {
  consume(key: string, limit: RateLimit): number;
  /**
   * What {@link consume} would answer for one more request, without counting it: 0 when within the limit, else
   * the milliseconds until the window that would refuse it ends.
   */
  peek(key: string, limit: RateLimit): number;
  /** Counters held, ended windows included until they are swept or evicted. */
  readonly size: number;
  /** Estimated memory of the counters held, in bytes (see {@link MemoryRateLimiterOptions.maxBytes}); never above it. */
  readonly bytes: number;
}

/** One counter, also a node of the list of its window length, in start order (oldest at `head`). */
interface Window {
  readonly key: string;
  /** The counters of the limit this one counts under. */
  readonly counters: Map<string, Window>;
  readonly bytes: number;
  count: number;
  endsAtMs: number;
  newer: Window | undefined;
  older: Window | undefined;
  readonly list: WindowList;
}

/** The counters of one window length: started in order, so they also end in order. */
interface WindowList {
  readonly lengthMs: number;
  head: Window | undefined;
  tail: Window | undefined;
}

/**
 * The default {@link RateLimiter}: fixed windows (as rate-limiter-flexible keeps them in Redis, so a limit means
 * the same per process and shared), bounded by `maxEntries` and `maxBytes`. A request within a live window costs
 * two map lookups and no allocation; a new window also sweeps ended ones.
 *
 * Counters are listed per window length in the order their windows started, which is the order they end: the
 * ended ones are found at the heads of those lists (a handful: one per window length in use) without a scan,
 * and when every counter is live, the head that started first is the oldest. Every operation is O(1) amortized.
 *
 * @throws ConfigurationError naming `maxEntries` or `maxBytes` when not a positive integer.
 */
export function createMemoryRateLimiter(options: MemoryRateLimiterOptions = {}): MemoryRateLimiter {
  const maxEntries = checkInteger(options.maxEntries, 'maxEntries', DEFAULT_RATE_LIMITER_MAX_ENTRIES, { min: 1 });
  const maxBytes = checkInteger(options.maxBytes, 'maxBytes', DEFAULT_RATE_LIMITER_MAX_BYTES, { min: 1 });
  const now = options.now ?? Date.now;
  // Per limit (its normalized text), per key: no string is built on the way to a live counter.
  const byLimit = new Map<string, Map<string, Window>>();
  const lists = new Map<number, WindowList>();
  let size = 0;
  let bytes = 0;

  const remove = (window: Window): void => {
    const list = window.list;
    if (window.newer) window.newer.older = window.older;
    else list.tail = window.older;
    if (window.older) window.older.newer = window.newer;
    else list.head = window.newer;
    window.counters.delete(window.key);
    size--;
    bytes -= window.bytes;
  };

  /** Drops every ended window (at the heads), then the oldest live ones until `needed` more bytes and one more entry fit. */
  const makeRoom = (at: number, needed: number): void => {
    for (const list of lists.values()) {
      while (list.head !== undefined && list.head.endsAtMs <= at) remove(list.head);
    }
    while (size > 0 && (size >= maxEntries || bytes + needed > maxBytes)) {
      let oldest: Window | undefined;
      for (const list of lists.values()) {
        const head = list.head;
        if (head !== undefined && (oldest === undefined || head.endsAtMs - list.lengthMs < oldest.endsAtMs - oldest.list.lengthMs)) oldest = head;
      }
      remove(oldest as Window);
    }
  };

  const listFor = (windowMs: number): WindowList => {
    let list = lists.get(windowMs);
    if (list === undefined) lists.set(windowMs, (list = { lengthMs: windowMs, head: undefined, tail: undefined }));
    return list;
  };

  return {
    consume(key, limit) {
      const at = now();
      let counters = byLimit.get(limit.text);
      if (counters === undefined) byLimit.set(limit.text, (counters = new Map()));
      const window = counters.get(key);
      if (window !== undefined) {
        if (window.endsAtMs > at) {
          if (window.count >= limit.points) return window.endsAtMs - at;
          window.count++;
          return 0;
        }
        remove(window);
      }
      const entryBytes = estimateStringBytes(key) + RATE_LIMITER_ENTRY_OVERHEAD_BYTES;
      // Too large to hold at all (never a key of the guard's): counted as a first request, every time.
      if (entryBytes > maxBytes) return 0;
      makeRoom(at, entryBytes);
      const list = listFor(limit.windowMs);
      const created: Window = { key, counters, bytes: entryBytes, count: 1, endsAtMs: at + limit.windowMs, newer: undefined, older: list.tail, list };
      if (list.tail) list.tail.newer = created;
      else list.head = created;
      list.tail = created;
      counters.set(key, created);
      size++;
      bytes += entryBytes;
      return 0;
    },
    peek(key, limit) {
      const at = now();
      const window = byLimit.get(limit.text)?.get(key);
      return window !== undefined && window.endsAtMs > at && window.count >= limit.points ? window.endsAtMs - at : 0;
    },
    get size() {
      return size;
    },
    get bytes() {
      return bytes;
    },
  };
}
