/**
 * The kept profile of an upstream in connected mode ({@link KeptProfiles}): its capabilities and protocol version,
 * sealed like every record of the token store, under a key of its own that no user's record can have.
 */
import { profileOfResult, type KeptProfile, type KeptProfiles } from '../upstream-auth/kept-profile.js';
import type { Sealer } from './oauth/sealer.js';
import type { TokenStore } from './store/token-store.js';

/**
 * Least time between two reads of the store, in milliseconds (30 s): a replica learns what another replica wrote
 * within this time (one started before any user connected, and one that knows an older profile alike), without a
 * read per `initialize`. Also the least time between two attempts to write a profile the store refused.
 */
export const KEPT_PROFILE_RECHECK_MS = 30_000;

/**
 * The store key of `server`'s profile (`""`: the single upstream). Users' records are under `conn:`, and the other
 * keys are tickets, flows and registrations: none starts with `profile:`.
 *
 * @example upstreamProfileKey('notes'); // 'profile:notes'
 */
export function upstreamProfileKey(server: string): string {
  return `profile:${server}`;
}

/** Options of {@link keptUpstreamProfile}. */
export interface KeptUpstreamProfileOptions {
  readonly store: TokenStore;
  readonly sealer: Sealer;
  /** The configuration file's server name, `""` for the single upstream. */
  readonly server: string;
  /** Clock, in milliseconds. Default `Date.now`. */
  readonly now?: () => number;
}

/** A profile as kept, with its JSON (what tells two profiles apart). */
interface Known {
  readonly profile: KeptProfile;
  readonly json: string;
}

/**
 * The profile of one upstream, kept in the token store. The newest one this process knows is answered at once: the
 * one it learnt last, or one another replica wrote since (the store is read again, in the background, at most every
 * {@link KEPT_PROFILE_RECHECK_MS}, and its value taken when it changed there). Concurrent readers share one read
 * while none is known. A profile is written only when it differs from the known one; a write the store refused is
 * tried again on a later `learnt` or `read`, at most every {@link KEPT_PROFILE_RECHECK_MS}, one write at a time.
 * Only `capabilities` (an object) and `protocolVersion` (a string) are kept, at most {@link MAX_KEPT_PROFILE_BYTES}
 * of JSON (a larger profile serves the process that learnt it, and is not written); a stored value that does not
 * open, or has another shape or size, counts as none.
 *
 * @example
 * const kept = keptUpstreamProfile({ store, sealer, server: 'notes' });
 * await kept.learnt({ capabilities: { tools: {} }, protocolVersion: '2025-11-25' });
 * await kept.read(); // { capabilities: { tools: {} }, protocolVersion: '2025-11-25' }
 */
export function keptUpstreamProfile(options: KeptUpstreamProfileOptions): KeptProfiles {
  const { store, sealer } = options;
  const key = upstreamProfileKey(options.server);
  const now = options.now ?? Date.now;
  let known: Known | undefined;
  /** The JSON of what the store was last seen to hold (read, or written here): a different value was written elsewhere. */
  let stored: string | undefined;
  /** Profiles learnt so far: a read that overlapped one does not replace it with what it read. */
  let learns = 0;
  let reading: Promise<KeptProfile | undefined> | undefined;
  let readAt = -Infinity;
  /** Whether {@link known} is still to be written, and not before when (after a refused write). */
  let unsaved = false;
  let retryAt = -Infinity;
  let writing: Promise<void> | undefined;
  const readStored = async (): Promise<KeptProfile | undefined> => {
    const before = learns;
    try {
      const sealed = await store.get(key);
      const found = sealed === undefined ? undefined : keptProfileOf(await sealer.open<unknown>(key, sealed));
      // Changed in the store since this process last saw it: written by another replica, so newer than the known one.
      if (found !== undefined && fits(found) && found.json !== stored && learns === before) {
        stored = found.json;
        known = found;
        unsaved = false;
      }
    } catch {
      // The store cannot be read now: as before, read again later.
    }
    return known?.profile;
  };
  const save = (): Promise<void> => {
    if (writing !== undefined || !unsaved || known === undefined || now() < retryAt) return writing ?? Promise.resolve();
    const target = known;
    writing = (async () => {
      try {
        await store.set(key, await sealer.seal(key, target.profile));
        stored = target.json;
        if (known === target) unsaved = false;
      } catch {
        // Not kept (the store is full or unreachable): the profile still serves this process; tried again later.
        retryAt = now() + KEPT_PROFILE_RECHECK_MS;
      }
    })().finally(() => {
      writing = undefined;
      // A profile learnt while this one was written: written in turn (once per change, never in a loop).
      if (unsaved && known !== target) void save();
    });
    return writing;
  };
  return {
    read() {
      if (reading === undefined && now() - readAt >= KEPT_PROFILE_RECHECK_MS) {
        readAt = now();
        reading = readStored().finally(() => (reading = undefined));
      }
      void save();
      // Once one is known it is answered at once; the read above only refreshes it.
      if (known !== undefined) return Promise.resolve(known.profile);
      return reading ?? Promise.resolve(undefined);
    },
    async learnt(profile) {
      const learnt = keptProfileOf(profile);
      if (learnt === undefined) return;
      learns += 1;
      if (learnt.json !== known?.json) {
        // Known before the write ends, so that sessions opened meanwhile with the same answer write nothing.
        known = learnt;
        unsaved = fits(learnt) && learnt.json !== stored;
        retryAt = -Infinity;
      }
      await save();
    },
  };
}

/**
 * Largest profile kept in the store, in bytes of JSON: 8 KiB, which sealed (base64url, with its header) stays under
 * the store's 16 KiB a value (`DEFAULT_TOKEN_STORE_MAX_VALUE_BYTES`), so that a write is never refused for its size.
 * Capabilities take a few hundred bytes.
 */
export const MAX_KEPT_PROFILE_BYTES = 8 * 1024;

/** The server capabilities kept: those MCP defines (2025-06-18 to 2026-07-28), but `experimental`. */
const KEPT_CAPABILITIES: ReadonlySet<string> = new Set(['tools', 'prompts', 'resources', 'logging', 'completions', 'tasks']);

/** The kept part of `value` and its JSON, or undefined when it has not the shape of a profile. */
function keptProfileOf(value: unknown): Known | undefined {
  const read = profileOfResult(value);
  // A stored revision that is not a string marks a record that is no profile.
  if (read === undefined || ((value as Record<string, unknown>).protocolVersion !== undefined && read.protocolVersion === undefined)) return undefined;
  // Only the capabilities MCP defines: `experimental` and vendor keys may carry what one user's session was given.
  const known = Object.fromEntries(Object.entries(read.capabilities).filter(([name]) => KEPT_CAPABILITIES.has(name)));
  const profile: KeptProfile = { capabilities: known, ...(read.protocolVersion !== undefined ? { protocolVersion: read.protocolVersion } : {}) };
  return { profile, json: JSON.stringify(profile) };
}

/** Whether `known` is small enough to be kept in the store ({@link MAX_KEPT_PROFILE_BYTES}). */
function fits(known: Known): boolean {
  return Buffer.byteLength(known.json) <= MAX_KEPT_PROFILE_BYTES;
}
