/**
 * One value the gateway learns of an upstream in connected mode and keeps in the token store for every replica and
 * every later run (its profile, the definitions it lists): sealed like every record of the store, in records of its
 * own ({@link KeptRecords}: one, or several for a long list), read again now and then, written only when it changed,
 * and written again later when the store refused it.
 */
import type { Sealer } from './oauth/sealer.js';
import type { TokenStore } from './store/token-store.js';

/**
 * Least time between two reads of the store, in milliseconds (30 s): a replica learns what another replica wrote
 * within this time (one started before any user connected, and one that knows an older value alike), without a
 * read per request. Also the least time between two attempts to write a value the store refused.
 */
export const KEPT_VALUE_RECHECK_MS = 30_000;

/** A value as kept, with its JSON (what tells two values apart). */
export interface KeptJson<T> {
  readonly value: T;
  readonly json: string;
}

/**
 * {@link KeptRecords.read}'s answer when the store holds what these records last read or wrote: nothing to open
 * again (a long list is not read chunk by chunk every time).
 */
export const KEPT_RECORDS_UNCHANGED: unique symbol = Symbol('kept records unchanged');

/**
 * Where a kept value lies in the store: one sealed record ({@link keptSingleRecord}), or several
 * (`keptChunkedRecords`). Its keys are ones that no user's record, ticket or flow can have.
 */
export interface KeptRecords {
  /**
   * The value the store holds, opened; undefined when there is none, or it does not open or is not whole; or
   * {@link KEPT_RECORDS_UNCHANGED}. Rejects when the store cannot be read.
   */
  read(): Promise<unknown>;
  /** Writes `value`, whose JSON is `json`. Rejects when the store refused it (full, unreachable). */
  write(value: object, json: string): Promise<void>;
}

/** Options of {@link keptSingleRecord}. */
export interface KeptSingleRecordOptions {
  readonly store: TokenStore;
  readonly sealer: Sealer;
  /** The store key: one that no user's record, ticket or flow can have. */
  readonly key: string;
}

/**
 * A kept value as one record, sealed under `key`: for a value that always fits one store value (a profile).
 *
 * @example
 * const records = keptSingleRecord({ store, sealer, key: 'profile:notes' });
 * await records.write({ capabilities: {} }, '{"capabilities":{}}');
 */
export function keptSingleRecord(options: KeptSingleRecordOptions): KeptRecords {
  const { store, sealer, key } = options;
  /** The sealed text last read or written here: the same text is not opened again. */
  let seen: string | undefined;
  return {
    async read() {
      const sealed = await store.get(key);
      if (sealed === undefined) return undefined;
      if (sealed === seen) return KEPT_RECORDS_UNCHANGED;
      const opened = await sealer.open<unknown>(key, sealed);
      if (opened !== undefined) seen = sealed;
      return opened;
    },
    async write(value) {
      const sealed = await sealer.seal(key, value);
      await store.set(key, sealed);
      seen = sealed;
    },
  };
}

/** Options of {@link keptStoreValue}. */
export interface KeptStoreValueOptions<T> {
  /** Where the value lies in the store. */
  readonly records: KeptRecords;
  /**
   * The kept part of a value (learnt, or read from the store), or undefined when it has not the value's shape: what
   * is kept and compared is only what this returns.
   */
  readonly keep: (value: unknown) => KeptJson<T> | undefined;
  /** Largest JSON written to the store, in bytes: a larger value serves this process only, and a larger one read is none. */
  readonly maxBytes: number;
  /** Clock, in milliseconds. Default `Date.now`. */
  readonly now?: () => number;
}

/** A value kept in the token store: see {@link keptStoreValue}. */
export interface KeptStoreValue<T> {
  /** The newest value known, or undefined when there is none yet (see {@link keptStoreValue}). Never rejects. */
  read(): Promise<T | undefined>;
  /** The upstream told `value`: written when its kept part differs from the known one. Never rejects. */
  learnt(value: unknown): Promise<void>;
  /**
   * Resolves once no write is in progress (one learnt meanwhile included), e.g. before the store closes at shutdown:
   * a value learnt just before is then in the store for the next run. A write the store refused is not waited for
   * again. Never rejects.
   */
  settled(): Promise<void>;
}

/** A kept value whose writes can be waited for: {@link KeptStoreValue.settled}, for the store's owner at shutdown. */
export interface Settles {
  settled(): Promise<void>;
}

/**
 * A value kept in the store. The newest one this process knows is answered at once: the one it learnt last, or one
 * another replica wrote since (the store is read again, in the background, at most every
 * {@link KEPT_VALUE_RECHECK_MS}, and its value taken when it changed there). Concurrent readers share one read
 * while none is known. A value is written only when it differs from the known one; a write the store refused is
 * tried again on a later `learnt` or `read`, at most every {@link KEPT_VALUE_RECHECK_MS}, one write at a time. A
 * stored value that does not open, or that `keep` refuses, or larger than `maxBytes`, counts as none.
 *
 * @example
 * const records = keptSingleRecord({ store, sealer, key: 'profile:notes' });
 * const kept = keptStoreValue({ records, keep: keptProfileOf, maxBytes: 8_192 });
 * await kept.learnt({ capabilities: { tools: {} } });
 * await kept.read(); // { capabilities: { tools: {} } }
 */
export function keptStoreValue<T>(options: KeptStoreValueOptions<T>): KeptStoreValue<T> {
  const { records, keep } = options;
  const now = options.now ?? Date.now;
  const fits = (known: KeptJson<T>): boolean => Buffer.byteLength(known.json) <= options.maxBytes;
  let known: KeptJson<T> | undefined;
  /** The JSON of what the store was last seen to hold (read, or written here): a different value was written elsewhere. */
  let stored: string | undefined;
  /** Values learnt so far: a read that overlapped one does not replace it with what it read. */
  let learns = 0;
  let reading: Promise<T | undefined> | undefined;
  let readAt = -Infinity;
  /** Whether {@link known} is still to be written, and not before when (after a refused write). */
  let unsaved = false;
  let retryAt = -Infinity;
  let writing: Promise<void> | undefined;
  const readStored = async (): Promise<T | undefined> => {
    const before = learns;
    try {
      const opened = await records.read();
      if (opened === KEPT_RECORDS_UNCHANGED) return known?.value;
      const found = opened === undefined ? undefined : keep(opened);
      // Changed in the store since this process last saw it: written by another replica, so newer than the known one.
      if (found !== undefined && fits(found) && found.json !== stored && learns === before) {
        stored = found.json;
        known = found;
        unsaved = false;
      }
    } catch {
      // The store cannot be read now: as before, read again later.
    }
    return known?.value;
  };
  const save = (): Promise<void> => {
    if (writing !== undefined || !unsaved || known === undefined || now() < retryAt) return writing ?? Promise.resolve();
    const target = known;
    writing = (async () => {
      try {
        await records.write(target.value as object, target.json);
        stored = target.json;
        if (known === target) unsaved = false;
      } catch {
        // Not kept (the store is full or unreachable): the value still serves this process; tried again later.
        retryAt = now() + KEPT_VALUE_RECHECK_MS;
      }
    })().finally(() => {
      writing = undefined;
      // A value learnt while this one was written: written in turn (once per change, never in a loop).
      if (unsaved && known !== target) void save();
    });
    return writing;
  };
  return {
    read() {
      if (reading === undefined && now() - readAt >= KEPT_VALUE_RECHECK_MS) {
        readAt = now();
        reading = readStored().finally(() => (reading = undefined));
      }
      void save();
      // Once one is known it is answered at once; the read above only refreshes it.
      if (known !== undefined) return Promise.resolve(known.value);
      return reading ?? Promise.resolve(undefined);
    },
    async learnt(value) {
      const learnt = keep(value);
      if (learnt === undefined) return;
      learns += 1;
      if (learnt.json !== known?.json) {
        // Known before the write ends, so that requests answered meanwhile with the same value write nothing.
        known = learnt;
        unsaved = fits(learnt) && learnt.json !== stored;
        retryAt = -Infinity;
      }
      await save();
    },
    async settled() {
      while (writing !== undefined) await writing;
    },
  };
}
