/**
 * A {@link TokenStore} in the process's memory: for tests, and for a gateway that need not keep connections
 * across restarts. Bounded in entries and in bytes; expired entries go when read or when room is needed.
 */
import { TokenStoreFullError, type TokenStore } from './token-store.js';
import { createKeyedMutex } from './keyed-mutex.js';
import { OwnerShares } from './owner-shares.js';
import { DEFAULT_TOKEN_STORE_MAX_EPHEMERAL_ENTRIES, defaultEphemeralShare, ephemeralPressure, isEphemeralKey } from './token-store-limits.js';

/** Options of {@link createMemoryTokenStore}. */
export interface MemoryTokenStoreOptions {
  /** Most durable entries kept (connections, registered clients, upstreams' profiles). Default 100 000. */
  maxEntries?: number;
  /** Most ephemeral entries kept (tickets, pending sign-ins and flows; see `isEphemeralKey`), apart. Default 20 000. */
  maxEphemeralEntries?: number;
  /** Most bytes of keys and values kept, together. Default 64 MiB. */
  maxBytes?: number;
  /** Most live ephemeral entries one owner (user) holds while the store is at least half full. Default 1 % of `maxEphemeralEntries`. */
  maxEphemeralEntriesPerOwner?: number;
}

/**
 * Creates the store. Locks are per process.
 *
 * @example
 * const store = createMemoryTokenStore({ maxEntries: 1000 });
 * await store.set('ticket:abc', sealed, 600_000);
 */
export function createMemoryTokenStore(options: MemoryTokenStoreOptions = {}): TokenStore {
  const maxEntries = options.maxEntries ?? 100_000;
  const maxBytes = options.maxBytes ?? 64 * 1024 * 1024;
  const maxEphemeral = options.maxEphemeralEntries ?? DEFAULT_TOKEN_STORE_MAX_EPHEMERAL_ENTRIES;
  // Entries of each kind: ephemeral ones are bounded apart, so that a flood of them never takes a connection's room.
  const counts = { durable: 0, ephemeral: 0 };
  const kindOf = (key: string): 'durable' | 'ephemeral' => (isEphemeralKey(key) ? 'ephemeral' : 'durable');
  const bound = { durable: maxEntries, ephemeral: maxEphemeral };
  const entries = new Map<string, { value: string; expiresAt: number }>();
  const locks = createKeyedMutex();
  const shares = new OwnerShares(options.maxEphemeralEntriesPerOwner ?? defaultEphemeralShare(maxEphemeral), maxEphemeral);
  const pressure = ephemeralPressure(maxEphemeral);
  let bytes = 0;
  const sizeOf = (key: string, value: string): number => 2 * (key.length + value.length);
  const live = (key: string): { value: string; expiresAt: number } | undefined => {
    const entry = entries.get(key);
    if (entry && entry.expiresAt <= Date.now()) {
      remove(key);
      return undefined;
    }
    return entry;
  };
  const remove = (key: string): boolean => {
    const entry = entries.get(key);
    if (!entry) return false;
    entries.delete(key);
    shares.remove(key);
    counts[kindOf(key)] -= 1;
    bytes -= sizeOf(key, entry.value);
    return true;
  };
  const sweep = (): void => {
    const now = Date.now();
    for (const [key, entry] of entries) if (entry.expiresAt <= now) remove(key);
  };
  const write = (key: string, value: string, ttlMs: number | undefined, owner: string | undefined): void => {
    const previous = entries.get(key);
    const owned = owner !== undefined && ttlMs !== undefined && isEphemeralKey(key) ? owner : undefined;
    if (owned !== undefined && live(key) === undefined) {
      // Counted as the store sees it: expired entries are swept first when that decides the refusal.
      const at = Date.now();
      try {
        shares.check(owned, counts.ephemeral >= pressure, at);
      } catch {
        sweep();
        shares.check(owned, counts.ephemeral >= pressure, at);
      }
    }
    const growth = sizeOf(key, value) - (previous ? sizeOf(key, previous.value) : 0);
    const kind = kindOf(key);
    if ((!previous && counts[kind] >= bound[kind]) || bytes + growth > maxBytes) sweep();
    if (!entries.has(key) && counts[kind] >= bound[kind]) throw new TokenStoreFullError(`${bound[kind]} ${kind} entries`);
    const again = entries.get(key);
    const needed = sizeOf(key, value) - (again ? sizeOf(key, again.value) : 0);
    if (bytes + needed > maxBytes) throw new TokenStoreFullError(`${maxBytes} bytes`);
    if (!again) counts[kind] += 1;
    entries.set(key, { value, expiresAt: ttlMs === undefined ? Infinity : Date.now() + ttlMs });
    bytes += needed;
    if (owned !== undefined) shares.add(owned, key, Date.now() + ttlMs!, Date.now());
  };
  return {
    get: (key) => Promise.resolve(live(key)?.value),
    // Async, so that a refusal (TokenStoreFullError) rejects the promise as with the other stores, never throws.
    async set(key, sealed, ttlMs, owner) {
      write(key, sealed, ttlMs, owner);
    },
    async compareAndSet(key, expected, next, ttlMs, owner) {
      if (live(key)?.value !== expected) return false;
      write(key, next, ttlMs, owner);
      return true;
    },
    delete: (key) => Promise.resolve(live(key) !== undefined && remove(key)),
    take(key) {
      const value = live(key)?.value;
      if (value !== undefined) remove(key);
      return Promise.resolve(value);
    },
    keys(prefix, limit) {
      const found: string[] = [];
      for (const key of entries.keys()) {
        if (found.length >= limit) break;
        if (key.startsWith(prefix) && live(key)) found.push(key);
      }
      return Promise.resolve(found);
    },
    // A holder that overruns ttlMs no longer blocks the next.
    withLock: (name, ttlMs, work) => locks.run(name, work, ttlMs),
    close() {
      entries.clear();
      shares.clear();
      counts.durable = counts.ephemeral = 0;
      bytes = 0;
      return Promise.resolve();
    },
  };
}
