import { estimateStringBytes } from '../kernel/identity-size.js';
import { checkInteger } from '../kernel/settings.js';
import { DEFAULT_CALLER_SHARE_DIVISOR, defaultCallerShare, sharePressure } from './caller-share.js';
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
   *
   * `caller` is the key of the caller the count belongs to (its caller-wide key, also 43 characters), so that a
   * bounded store can share itself between callers (see `createMemoryRateLimiter`); the guard always passes it.
   */
  consume(key: string, limit: RateLimit, caller?: string): number | Promise<number>;
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
/**
 * Estimated memory of the record of one caller holding counters, besides its key's string, in bytes: the record
 * (its counters and their bytes) and its `Map` entry. One per caller, whatever its number of counters.
 */
export const RATE_LIMITER_CALLER_OVERHEAD_BYTES = 120;

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
   * window is forgotten (its caller starts a new window): a flood of new callers costs bounded memory, not the
   * service of everyone else. A caller given to `consume` is charged, once for all its counters, its key plus
   * `RATE_LIMITER_CALLER_OVERHEAD_BYTES` (120).
   *
   * The store shares itself between the callers given to `consume` as `caller-share.ts` says: from half full (in
   * entries or bytes), a caller already holding 1 % of `maxEntries` counters (or of `maxBytes`) gets no new
   * counter: its request is refused for one window of the limit asked, and nobody else's counter is evicted for
   * it. Under the guard a caller holds one counter per limit that applies to it (caller-wide, and one per tool it
   * called under a per-tool limit), so a caller meets its share by calling that many tools, or names it makes up.
   */
  maxBytes?: number;
  /** Current time in milliseconds since the epoch. Default `Date.now`. */
  now?: () => number;
}

/** A {@link RateLimiter} in memory, with what it holds, for tests and metrics. */
export interface MemoryRateLimiter extends RateLimiter {
  consume(key: string, limit: RateLimit, caller?: string): number;
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
  /** The caller whose share it counts against, when `consume` was told. */
  readonly owner: Caller | undefined;
}

/** A caller holding counters: how many, and their bytes (its own record's excluded). */
interface Caller {
  readonly key: string;
  /** This record's own estimated memory. */
  readonly bytes: number;
  count: number;
  held: number;
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
  const withinShare = callerShareRule(maxEntries, maxBytes);
  // Per limit (its normalized text), per key: no string is built on the way to a live counter.
  const byLimit = new Map<string, Map<string, Window>>();
  const lists = new Map<number, WindowList>();
  const callers = new Map<string, Caller>();
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
    const owner = window.owner;
    if (owner !== undefined) {
      owner.held -= window.bytes;
      if (--owner.count === 0) {
        callers.delete(owner.key);
        bytes -= owner.bytes;
      }
    }
  };

  /** Drops every ended window: they are at the heads of their lists. */
  const sweep = (at: number): void => {
    for (const list of lists.values()) {
      while (list.head !== undefined && list.head.endsAtMs <= at) remove(list.head);
    }
  };

  /** Drops the oldest live windows until `needed` more bytes and one more entry fit. */
  const makeRoom = (needed: number): void => {
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

  /** Starts a window for `key`, or answers how long to wait when its caller holds its share; see `consume`. */
  const start = (at: number, key: string, counters: Map<string, Window>, limit: RateLimit, caller: string | undefined): number => {
    const entryBytes = estimateStringBytes(key) + RATE_LIMITER_ENTRY_OVERHEAD_BYTES;
    const callerBytes = caller === undefined ? 0 : estimateStringBytes(caller) + RATE_LIMITER_CALLER_OVERHEAD_BYTES;
    // Too large to hold at all (never a key of the guard's): counted as a first request, every time.
    if (entryBytes + callerBytes > maxBytes) return 0;
    sweep(at);
    let owner = caller === undefined ? undefined : callers.get(caller);
    // Its share full under pressure: the request is refused for one window of its limit; nobody else is evicted.
    if (owner !== undefined && !withinShare(owner, entryBytes, size, bytes)) return limit.windowMs;
    if (owner !== undefined) owner.count++; // kept while room is made, should its other counters be the oldest
    makeRoom(owner === undefined ? entryBytes + callerBytes : entryBytes);
    if (owner !== undefined) owner.count--;
    else if (caller !== undefined) {
      callers.set(caller, (owner = { key: caller, bytes: callerBytes, count: 0, held: 0 }));
      bytes += callerBytes;
    }
    const list = listFor(limit.windowMs);
    const created: Window = { key, counters, bytes: entryBytes, count: 1, endsAtMs: at + limit.windowMs, newer: undefined, older: list.tail, list, owner };
    append(list, created);
    counters.set(key, created);
    size++;
    bytes += entryBytes;
    if (owner !== undefined) {
      owner.count++;
      owner.held += entryBytes;
    }
    return 0;
  };

  return {
    consume(key, limit, caller) {
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
      return start(at, key, counters, limit, caller);
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

/**
 * Whether a caller holding counters may start one more of `entryBytes` in a store of `size` counters and `bytes`:
 * always below half full (in entries or bytes), else within its share (1 % of each), as `caller-share.ts` says.
 */
function callerShareRule(maxEntries: number, maxBytes: number): (owner: Caller, entryBytes: number, size: number, bytes: number) => boolean {
  const shareEntries = defaultCallerShare(maxEntries);
  const shareBytes = Math.max(1, Math.floor(maxBytes / DEFAULT_CALLER_SHARE_DIVISOR));
  const pressureEntries = sharePressure(maxEntries);
  const pressureBytes = sharePressure(maxBytes);
  return (owner, entryBytes, size, bytes) =>
    (size < pressureEntries && bytes < pressureBytes) || (owner.count < shareEntries && owner.held + entryBytes <= shareBytes);
}

/** Puts `window` at the tail of `list`: the newest. */
function append(list: WindowList, window: Window): void {
  if (list.tail) list.tail.newer = window;
  else list.head = window;
  list.tail = window;
}
