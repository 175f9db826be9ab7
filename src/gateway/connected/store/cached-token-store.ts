/**
 * Opened records kept in memory in front of a token store and its sealer, so that a record is read and decrypted
 * once per process and then served from memory: a call with a user's stored token costs a map lookup, from the
 * first request after a restart on. Bounded in entries and in bytes (least recently used go first).
 */
import { createTokenCache, type TokenCache } from '../../../core/token/token-cache.js';
import { checkInteger } from '../../../core/kernel/settings.js';
import { sealedRecordExpiry, type RecordSealer } from './record-sealer.js';
import type { TokenStore } from './token-store.js';

/** Options of {@link createCachedRecords}. */
export interface CachedRecordsOptions {
  store: TokenStore;
  sealer: RecordSealer;
  /** Most bytes of records kept in memory (keys, sealed and opened forms). Default 8 MiB. */
  maxBytes?: number;
  /** Most records kept in memory. Default 10 000. */
  maxEntries?: number;
  /**
   * How long a record is served from memory before the store is asked again, in milliseconds. Asking again costs
   * a read (Redis GET, a file) and no decryption when the record did not change; a record another replica changed
   * or removed is seen here within this time. Default 30 000.
   */
  revalidateAfterMs?: number;
  /** Clock, in milliseconds since the epoch. Default `Date.now`. */
  now?: () => number;
}

/** A record as opened, and as sealed in the store (what {@link CachedRecords.compareAndSet} expects). */
export interface StoredRecord<T> {
  /** The opened value, frozen: shared by every reader. */
  readonly value: Readonly<T>;
  /** The sealed text in the store. */
  readonly sealed: string;
}

/** Sealed records read through memory; see {@link createCachedRecords}. */
export interface CachedRecords {
  /** The record under `key`: from memory when read within `revalidateAfterMs`, else from the store. */
  get<T extends object>(key: string): Promise<StoredRecord<T> | undefined>;
  /** The record as the store holds it now (after taking a lock, say: another replica may just have written). */
  fresh<T extends object>(key: string): Promise<StoredRecord<T> | undefined>;
  /** Seals and writes `value`; forgets the copy in memory. */
  set<T extends object>(key: string, value: T, ttlMs?: number): Promise<StoredRecord<T>>;
  /**
   * Seals and writes `value` only if the store still holds `expected` (a {@link StoredRecord.sealed}, or undefined
   * for absent); the written record, or undefined when another writer came first. Forgets the copy in memory.
   */
  compareAndSet<T extends object>(key: string, expected: string | undefined, value: T, ttlMs?: number): Promise<StoredRecord<T> | undefined>;
  /** Removes the record; true when it was there. */
  delete(key: string): Promise<boolean>;
  /** Reads, removes and opens a one-time record (never kept in memory). */
  take<T extends object>(key: string): Promise<T | undefined>;
  /** Forgets the copy in memory of `key`, e.g. when the upstream refused its token. */
  forget(key: string): void;
}

/** Default {@link CachedRecordsOptions.maxBytes}: 8 MiB. */
export const DEFAULT_CACHED_RECORDS_MAX_BYTES = 8 * 1024 * 1024;
/** Default {@link CachedRecordsOptions.revalidateAfterMs}. */
export const DEFAULT_CACHED_RECORDS_REVALIDATE_MS = 30_000;
/** A record is opened again at least this often, in seconds, whatever its TTL. */
const MAX_CACHED_SECONDS = 3600;
/** Bytes counted per entry beyond its strings: the objects and the cache's own node. */
const ENTRY_OVERHEAD_BYTES = 256;

interface Cached {
  readonly record: StoredRecord<object>;
  /** When the store last confirmed it, in milliseconds since the epoch. */
  checkedAt: number;
  /** The sealed record's own expiry, in seconds since the epoch. */
  readonly expiresAt?: number;
}

/**
 * Creates the cache. Reads of one key at once share one store read and one decryption. Writes through it forget
 * the key's copy, and a read that overlapped a write does not keep what it read.
 *
 * @example
 * const records = createCachedRecords({ store, sealer, maxBytes: 4 * 1024 * 1024 });
 * const found = await records.get<ConnectionRecord>(connectionKey(user, 'notes'));
 *
 * @throws ConfigurationError naming an option out of range.
 */
export function createCachedRecords(options: CachedRecordsOptions): CachedRecords {
  const { store, sealer } = options;
  const now = options.now ?? Date.now;
  const revalidateAfterMs = checkInteger(options.revalidateAfterMs, 'revalidateAfterMs', DEFAULT_CACHED_RECORDS_REVALIDATE_MS, { min: 0 });
  const cache: TokenCache<Cached> = createTokenCache<Cached>({
    maxEntries: checkInteger(options.maxEntries, 'maxEntries', 10_000),
    maxBytes: checkInteger(options.maxBytes, 'maxBytes', DEFAULT_CACHED_RECORDS_MAX_BYTES),
    maxTtlSeconds: MAX_CACHED_SECONDS,
    now,
  });
  const reading = new Map<string, Promise<StoredRecord<object> | undefined>>();
  /** Writes so far through this cache: a read kept only if none happened while it ran. */
  let writes = 0;

  const load = async (key: string, cached: Cached | undefined): Promise<StoredRecord<object> | undefined> => {
    const before = writes;
    const sealed = await store.get(key);
    if (sealed === undefined) {
      if (writes === before) cache.delete(key);
      return undefined;
    }
    if (cached !== undefined && cached.record.sealed === sealed) {
      cached.checkedAt = now();
      return cached.record;
    }
    const value = await sealer.open<object>(key, sealed);
    if (value === undefined) {
      cache.delete(key);
      return undefined;
    }
    const record: StoredRecord<object> = { value: deepFreeze(value), sealed };
    if (writes === before) {
      const expiry = sealedRecordExpiry(sealed);
      const entry: Cached = { record, checkedAt: now(), ...(expiry !== undefined ? { expiresAt: expiry / 1000 } : {}) };
      cache.set(key, entry, { bytes: 2 * (key.length + 2 * sealed.length) + ENTRY_OVERHEAD_BYTES });
    }
    return record;
  };
  const read = (key: string, cached: Cached | undefined): Promise<StoredRecord<object> | undefined> => {
    let pending = reading.get(key);
    if (pending === undefined) {
      const started = load(key, cached).finally(() => {
        if (reading.get(key) === started) reading.delete(key);
      });
      pending = started;
      reading.set(key, started);
    }
    return pending;
  };
  const forget = (key: string): void => {
    writes += 1;
    cache.delete(key);
    reading.delete(key);
  };
  const written = async <R>(key: string, write: () => Promise<R>): Promise<R> => {
    forget(key);
    try {
      return await write();
    } finally {
      forget(key);
    }
  };

  return {
    async get<T extends object>(key: string) {
      const cached = cache.get(key);
      if (cached !== undefined && now() - cached.checkedAt < revalidateAfterMs) return cached.record as StoredRecord<T>;
      return (await read(key, cached)) as StoredRecord<T> | undefined;
    },
    async fresh<T extends object>(key: string) {
      return (await load(key, cache.get(key))) as StoredRecord<T> | undefined;
    },
    async set<T extends object>(key: string, value: T, ttlMs?: number) {
      const sealed = await sealer.seal(key, value, ttlMs);
      await written(key, () => store.set(key, sealed, ttlMs));
      return { value, sealed };
    },
    async compareAndSet<T extends object>(key: string, expected: string | undefined, value: T, ttlMs?: number) {
      const sealed = await sealer.seal(key, value, ttlMs);
      const done = await written(key, () => store.compareAndSet(key, expected, sealed, ttlMs));
      return done ? { value, sealed } : undefined;
    },
    delete: (key) => written(key, () => store.delete(key)),
    async take<T extends object>(key: string) {
      const sealed = await written(key, () => store.take(key));
      return sealed === undefined ? undefined : sealer.open<T>(key, sealed);
    },
    forget,
  };
}

/** Freezes `value` and every object in it: a cached record is shared by every caller. */
function deepFreeze<T extends object>(value: T): T {
  for (const inner of Object.values(value)) if (typeof inner === 'object' && inner !== null && !Object.isFrozen(inner)) deepFreeze(inner as object);
  return Object.freeze(value);
}
