/**
 * The kept profile of an upstream in connected mode ({@link KeptProfiles}): its capabilities and protocol version,
 * sealed like every record of the token store, under a key of its own that no user's record can have.
 */
import { profileOfResult, type KeptProfile, type KeptProfiles } from '../upstream-auth/kept-profile.js';
import type { Sealer } from './oauth/sealer.js';
import type { TokenStore } from './store/token-store.js';

/**
 * Least time between two reads of the store while no profile is known, in milliseconds (30 s): a replica started
 * before any user connected learns what another replica wrote within this time, without a read per `initialize`.
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

/**
 * The profile of one upstream, kept in the token store: read once (the result shared by concurrent readers), again
 * at most every {@link KEPT_PROFILE_RECHECK_MS} while none is known, and written only when a profile different from
 * the known one is learnt. Only `capabilities` (an object) and `protocolVersion` (a string) are kept, at most
 * {@link MAX_KEPT_PROFILE_BYTES} of JSON (a larger profile still serves the process that learnt it); a stored value
 * that does not open, or has another shape or size, counts as none.
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
  let known: { profile: KeptProfile; json: string } | undefined;
  let reading: Promise<KeptProfile | undefined> | undefined;
  let readAt = -Infinity;
  const readStored = async (): Promise<KeptProfile | undefined> => {
    try {
      const sealed = await store.get(key);
      const found = sealed === undefined ? undefined : keptProfileOf(await sealer.open<unknown>(key, sealed));
      // A profile learnt meanwhile is newer than the one read.
      if (found !== undefined && known === undefined) known = found;
    } catch {
      // The store cannot be read now: as none, read again later.
    }
    return known?.profile;
  };
  return {
    read() {
      if (known !== undefined) return Promise.resolve(known.profile);
      if (reading !== undefined) return reading;
      if (now() - readAt < KEPT_PROFILE_RECHECK_MS) return Promise.resolve(undefined);
      readAt = now();
      reading = readStored().finally(() => (reading = undefined));
      return reading;
    },
    async learnt(profile) {
      const learnt = keptProfileOf(profile);
      if (learnt === undefined || learnt.json === known?.json) return;
      // Known before the write ends, so that sessions opened meanwhile with the same answer write nothing.
      known = learnt;
      try {
        await store.set(key, await sealer.seal(key, learnt.profile));
      } catch {
        // Not kept (the store is full or unreachable): the profile still serves this process.
      }
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

/** The kept part of `value` and its JSON, or undefined when it has not the shape of a profile, or is too large. */
function keptProfileOf(value: unknown): { profile: KeptProfile; json: string } | undefined {
  const read = profileOfResult(value);
  // A stored revision that is not a string marks a record that is no profile.
  if (read === undefined || ((value as Record<string, unknown>).protocolVersion !== undefined && read.protocolVersion === undefined)) return undefined;
  // Only the capabilities MCP defines: `experimental` and vendor keys may carry what one user's session was given.
  const known = Object.fromEntries(Object.entries(read.capabilities).filter(([name]) => KEPT_CAPABILITIES.has(name)));
  const profile: KeptProfile = { capabilities: known, ...(read.protocolVersion !== undefined ? { protocolVersion: read.protocolVersion } : {}) };
  const json = JSON.stringify(profile);
  return Buffer.byteLength(json) <= MAX_KEPT_PROFILE_BYTES ? { profile, json } : undefined;
}
