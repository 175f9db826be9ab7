/**
 * The kept profile of an upstream in connected mode ({@link KeptProfiles}): its capabilities and protocol version,
 * sealed like every record of the token store, under a key of its own that no user's record can have.
 */
import { profileOfResult, type KeptProfile, type KeptProfiles } from '../upstream-auth/kept-profile.js';
import { keptSingleRecord, keptStoreValue, type KeptJson, type Settles } from './kept-store-value.js';
import type { Sealer } from './oauth/sealer.js';
import type { TokenStore } from './store/token-store.js';

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
 * The profile of one upstream, kept in the token store under {@link upstreamProfileKey} (`keptStoreValue`: answered
 * at once once known, read again at most every `KEPT_VALUE_RECHECK_MS`, written only on change, a refused write
 * tried again later). Only `capabilities` (an object) and `protocolVersion` (a string) are kept, at most
 * {@link MAX_KEPT_PROFILE_BYTES} of JSON (a larger profile serves the process that learnt it, and is not written); a
 * stored value that does not open, or has another shape or size, counts as none.
 *
 * @example
 * const kept = keptUpstreamProfile({ store, sealer, server: 'notes' });
 * await kept.learnt({ capabilities: { tools: {} }, protocolVersion: '2025-11-25' });
 * await kept.read(); // { capabilities: { tools: {} }, protocolVersion: '2025-11-25' }
 */
export function keptUpstreamProfile(options: KeptUpstreamProfileOptions): KeptProfiles & Settles {
  const kept = keptStoreValue({
    records: keptSingleRecord({ store: options.store, sealer: options.sealer, key: upstreamProfileKey(options.server) }),
    keep: keptProfileOf,
    maxBytes: MAX_KEPT_PROFILE_BYTES,
    ...(options.now ? { now: options.now } : {}),
  });
  return { read: () => kept.read(), learnt: (profile) => kept.learnt(profile), settled: () => kept.settled() };
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
function keptProfileOf(value: unknown): KeptJson<KeptProfile> | undefined {
  const read = profileOfResult(value);
  // A stored revision that is not a string marks a record that is no profile.
  if (read === undefined || ((value as Record<string, unknown>).protocolVersion !== undefined && read.protocolVersion === undefined)) return undefined;
  // Only the capabilities MCP defines: `experimental` and vendor keys may carry what one user's session was given.
  const known = Object.fromEntries(Object.entries(read.capabilities).filter(([name]) => KEPT_CAPABILITIES.has(name)));
  const profile: KeptProfile = { capabilities: known, ...(read.protocolVersion !== undefined ? { protocolVersion: read.protocolVersion } : {}) };
  return { value: profile, json: JSON.stringify(profile) };
}
