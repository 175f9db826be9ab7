/**
 * A kept value too long for one store value (a vendor's list of a hundred tools with their schemas), kept in several
 * records ({@link KeptRecords}): its JSON cut into chunks, each sealed under a key of its own, and a small head record
 * naming them, written last.
 *
 * Every write makes a new generation: its chunks are written under keys no other write uses
 * (`<key>:<generation>:<index>`), then the head (`<key>`) names the generation, its count of chunks and the digest of
 * the whole. A reader reads the head, then its chunks: it sees one generation whole, or, when a chunk is missing (the
 * head moved on and the older chunks were deleted), reads the new head once more, else nothing (the value it knew
 * stays). Writers take the store's lock one at a time (across replicas on Redis), for as long as their commands can
 * take on the store, and write the head only over the one they read under it (a writer that outran its lock leaves
 * the head of the one that went ahead, and removes its own chunks). Each removes what the head no longer names: the
 * previous generation's chunks, or every stray chunk under the key (a sweep, bounded, on a process's first write and
 * after a removal failed), so that no chunk outlives its generation for long.
 */
import { createHash, randomBytes } from 'node:crypto';
import { KEPT_RECORDS_UNCHANGED, type KeptRecords } from './kept-store-value.js';
import type { Sealer } from './oauth/sealer.js';
import { lockTtlMs } from './store/lock-ttl.js';
import type { TokenStore } from './store/token-store.js';

/**
 * Most bytes of one chunk's JSON (`{"part":"…"}`): 11 KiB, which sealed (base64url, with its header) stays under the
 * store's 16 KiB a value (`DEFAULT_TOKEN_STORE_MAX_VALUE_BYTES`), so that a write is never refused for its size.
 */
export const MAX_KEPT_CHUNK_BYTES = 11 * 1024;

/** Bytes of a chunk's JSON around its part. */
const CHUNK_OVERHEAD_BYTES = Buffer.byteLength('{"part":""}');
/** Most bytes one code unit (or surrogate pair) of a JSON text takes in a chunk's part: `\udxxx` for a lone surrogate. */
const MOST_UNIT_BYTES = 6;
/** Chunks read or written at once: a long list costs a few round trips, not one per chunk in turn. */
const CHUNKS_AT_ONCE = 8;
/** One command's longest wait on a store that does not say (a directory on this machine), in milliseconds: 1 s. */
const LOCAL_COMMAND_MS = 1_000;
/** Added to the commands' time under the write lock, for sealing the chunks, in milliseconds: 5 s. */
const WRITE_LOCK_MARGIN_MS = 5_000;

/**
 * How long a writer of `chunks` chunks holds the lock at most, in milliseconds, on a store whose commands wait at most
 * `commandTimeoutMs` each: every command under it timing out one after another (the head read and written, each
 * chunk written, at most `maxChunks` chunks of the generation replaced removed, the stray keys listed), plus
 * {@link WRITE_LOCK_MARGIN_MS}. A writer still at work when its lock ran out would let a second one start.
 *
 * @example keptWriteLockTtlMs(187, 187, 500); // 193 500 on Redis's default command timeout
 */
export function keptWriteLockTtlMs(chunks: number, maxChunks: number, commandTimeoutMs = LOCAL_COMMAND_MS): number {
  return lockTtlMs(3 + chunks + maxChunks, commandTimeoutMs, WRITE_LOCK_MARGIN_MS);
}

/**
 * The most chunks a JSON text of `maxBytes` bytes (as `JSON.stringify` writes it) takes: in a chunk's part, its `"`
 * and `\` take two bytes each and every other character its own bytes, so at most twice the text.
 *
 * @example mostKeptChunks(1024 * 1024); // 187
 */
export function mostKeptChunks(maxBytes: number): number {
  return Math.ceil((2 * maxBytes) / (MAX_KEPT_CHUNK_BYTES - CHUNK_OVERHEAD_BYTES - MOST_UNIT_BYTES));
}

/** Options of {@link keptChunkedRecords}. */
export interface KeptChunkedRecordsOptions {
  readonly store: TokenStore;
  readonly sealer: Sealer;
  /** The head's store key; the chunks' keys start with it and `:`. No user's record, ticket or flow has either. */
  readonly key: string;
  /** Most bytes of the value's JSON: a longer one is not written, and a head naming more is none. */
  readonly maxBytes: number;
}

/** The head record: which generation of chunks is the value. */
interface Head {
  readonly generation: string;
  readonly chunks: number;
  /** SHA-256 of the whole JSON, base64url: the chunks read are the ones written. */
  readonly digest: string;
}

/**
 * A value kept in chunks under `key` (see the file's comment). `read` and `write` as {@link KeptRecords} says; a
 * write also removes the chunks the head no longer names (best effort: a failed removal is swept on a later write).
 *
 * @example
 * const records = keptChunkedRecords({ store, sealer, key: 'profile:notes:tools', maxBytes: 1024 * 1024 });
 * const kept = keptStoreValue({ records, keep, maxBytes: 1024 * 1024 });
 */
export function keptChunkedRecords(options: KeptChunkedRecordsOptions): KeptRecords {
  const { store, sealer, key, maxBytes } = options;
  const maxChunks = mostKeptChunks(maxBytes);
  const chunkKey = (generation: string, index: number): string => `${key}:${generation}:${index}`;
  /** The head's sealed text last read whole or written here: the same head is not read again chunk by chunk. */
  let seen: string | undefined;
  /** Whether stray chunks may be left (from before this process, or a removal that failed): swept on the next write. */
  let sweepDue = true;

  const openHead = async (sealed: string): Promise<Head | undefined> => headOf(await sealer.open<unknown>(key, sealed), maxChunks);
  /** The JSON the head's chunks hold, or undefined when one is missing, does not open, or they do not add up. */
  const readChunks = async (head: Head): Promise<string | undefined> => {
    const parts: string[] = [];
    let bytes = 0;
    for (let start = 0; start < head.chunks; start += CHUNKS_AT_ONCE) {
      const indexes = Array.from({ length: Math.min(CHUNKS_AT_ONCE, head.chunks - start) }, (_, i) => start + i);
      const read = await Promise.all(indexes.map(async (index) => {
        const sealed = await store.get(chunkKey(head.generation, index));
        const part = sealed === undefined ? undefined : (await sealer.open<{ part?: unknown }>(chunkKey(head.generation, index), sealed))?.part;
        return typeof part === 'string' ? part : undefined;
      }));
      for (const part of read) {
        bytes += part === undefined ? 0 : Buffer.byteLength(part);
        if (part === undefined || bytes > maxBytes) return undefined;
        parts.push(part);
      }
    }
    const json = parts.join('');
    return digestOf(json) === head.digest ? json : undefined;
  };
  /** Removes `generation`'s first `count` chunks; a failure leaves a sweep due. */
  const removeChunks = async (generation: string, count: number): Promise<void> => {
    for (let start = 0; start < count; start += CHUNKS_AT_ONCE) {
      const removed = await Promise.allSettled(Array.from({ length: Math.min(CHUNKS_AT_ONCE, count - start) }, (_, i) => store.delete(chunkKey(generation, start + i))));
      if (removed.some((result) => result.status === 'rejected')) sweepDue = true;
    }
  };
  /** Removes the chunks of every generation but `current`: all of those found under the key, or the one it replaced. */
  const removeOthers = async (current: string, replaced: Head | undefined): Promise<void> => {
    if (!sweepDue) {
      if (replaced !== undefined && replaced.generation !== current) await removeChunks(replaced.generation, replaced.chunks);
      return;
    }
    sweepDue = false;
    try {
      const limit = 4 * maxChunks;
      const found = await store.keys(`${key}:`, limit);
      const stray = found.filter((name) => !name.startsWith(`${key}:${current}:`));
      const removed = await Promise.allSettled(stray.map((name) => store.delete(name)));
      // More than one sweep holds, or a removal failed: the next write sweeps again.
      if (found.length >= limit || removed.some((result) => result.status === 'rejected')) sweepDue = true;
    } catch {
      sweepDue = true;
    }
  };

  return {
    async read() {
      let previous: string | undefined;
      for (;;) {
        const sealed = await store.get(key);
        if (sealed === undefined) return undefined;
        if (sealed === seen) return KEPT_RECORDS_UNCHANGED;
        // The head this read started with, still there with a chunk missing: nothing whole to read now.
        if (sealed === previous) return undefined;
        const head = await openHead(sealed);
        const json = head === undefined ? undefined : await readChunks(head);
        if (json !== undefined) {
          seen = sealed;
          return parseJson(json);
        }
        if (head === undefined || previous !== undefined) return undefined;
        previous = sealed;
      }
    },
    async write(_value, json) {
      const parts = splitJson(json);
      if (Buffer.byteLength(json) > maxBytes || parts.length > maxChunks) throw new RangeError(`a kept value takes at most ${maxBytes} bytes of JSON`);
      await store.withLock(`kept:${key}`, keptWriteLockTtlMs(parts.length, maxChunks, store.commandTimeoutMs), async () => {
        const before = await store.get(key);
        const replaced = before === undefined ? undefined : await openHead(before);
        const generation = randomBytes(9).toString('base64url');
        try {
          for (let start = 0; start < parts.length; start += CHUNKS_AT_ONCE) {
            await Promise.all(parts.slice(start, start + CHUNKS_AT_ONCE).map(async (part, i) => {
              const name = chunkKey(generation, start + i);
              await store.set(name, await sealer.seal(name, { part }));
            }));
          }
          const head: Head = { generation, chunks: parts.length, digest: digestOf(json) };
          const sealed = await sealer.seal(key, head);
          // Only over the head read under the lock: one that moved since was written by a writer that went ahead
          // (this lock ran out); its list stands, and these chunks, named by no head, go below.
          if (!(await store.compareAndSet(key, before, sealed))) throw new Error('another write replaced the kept value first');
          seen = sealed;
        } catch (error) {
          // Not kept: the chunks written so far name nothing.
          await removeChunks(generation, parts.length);
          throw error;
        }
        await removeOthers(generation, replaced);
      });
    },
  };
}

/** The head in `opened`, or undefined when it has not the shape of one (or names more than `maxChunks`). */
function headOf(opened: unknown, maxChunks: number): Head | undefined {
  const head = opened as Partial<Head> | null | undefined;
  if (typeof head?.generation !== 'string' || !/^[A-Za-z0-9_-]{1,32}$/.test(head.generation) || typeof head.digest !== 'string') return undefined;
  if (!Number.isInteger(head.chunks) || head.chunks! < 1 || head.chunks! > maxChunks) return undefined;
  return { generation: head.generation, chunks: head.chunks!, digest: head.digest };
}

/** SHA-256 of `json`, base64url. */
function digestOf(json: string): string {
  return createHash('sha256').update(json).digest('base64url');
}

/** The value `json` holds, or undefined when it does not parse. */
function parseJson(json: string): unknown {
  try {
    return JSON.parse(json) as unknown;
  } catch {
    return undefined;
  }
}

/**
 * `json` cut into parts whose chunk (`{"part":"…"}`) takes at most {@link MAX_KEPT_CHUNK_BYTES}: each part as long
 * as fits, a surrogate pair never cut. At least one part, empty for an empty text.
 */
function splitJson(json: string): string[] {
  const room = MAX_KEPT_CHUNK_BYTES - CHUNK_OVERHEAD_BYTES;
  const parts: string[] = [];
  let start = 0;
  let bytes = 0;
  for (let i = 0; i < json.length; ) {
    const unit = json.charCodeAt(i);
    const pair = unit >= 0xd800 && unit < 0xdc00 && i + 1 < json.length && (json.charCodeAt(i + 1) & 0xfc00) === 0xdc00;
    const width = pair ? 2 : 1;
    const cost = pair ? 4 : escapedBytes(unit);
    if (bytes + cost > room) {
      parts.push(json.slice(start, i));
      start = i;
      bytes = 0;
    }
    bytes += cost;
    i += width;
  }
  parts.push(json.slice(start));
  return parts;
}

/** Bytes one UTF-16 code unit (not part of a pair) takes in a JSON string, as `JSON.stringify` writes it. */
function escapedBytes(unit: number): number {
  if (unit === 0x22 || unit === 0x5c) return 2;
  if (unit < 0x20 || (unit >= 0xd800 && unit < 0xe000)) return MOST_UNIT_BYTES;
  if (unit < 0x80) return 1;
  return unit < 0x800 ? 2 : 3;
}
