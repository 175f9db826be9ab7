/** The bounds every persistent token store applies unless told otherwise. */
import { DEFAULT_CALLER_SHARE_DIVISOR, defaultCallerShare, sharePressure } from '../../../core/limits/caller-share.js';


/**
 * Default most durable entries a store keeps: a connection per user and server, the registered clients and the
 * upstreams' profiles (ephemeral entries are bounded apart).
 */
export const DEFAULT_TOKEN_STORE_MAX_ENTRIES = 100_000;
/** Default most bytes of one value: 16 KiB, where a sealed connection is well under 2 KiB. */
export const DEFAULT_TOKEN_STORE_MAX_VALUE_BYTES = 16 * 1024;

/**
 * Default most ephemeral entries a store keeps (tickets and their index, pending sign-ins and upstream flows,
 * browser bindings, used states): counted apart from connections, so that a flood of them, which any signed-in
 * user can cause, cannot take the room of connections.
 */
export const DEFAULT_TOKEN_STORE_MAX_EPHEMERAL_ENTRIES = 20_000;

/**
 * Default share of one user, as a divisor of the most ephemeral entries (1 %: 200 with the defaults), enforced once
 * the store is half full, as the DPoP replay cache shares itself (see `core/limits/caller-share.ts`).
 */
export const DEFAULT_TOKEN_STORE_EPHEMERAL_SHARE_DIVISOR = DEFAULT_CALLER_SHARE_DIVISOR;

/** The default share of one user of a store of `maxEphemeralEntries`: 1 %, at least one. */
export const defaultEphemeralShare: (maxEphemeralEntries: number) => number = defaultCallerShare;

/** How many ephemeral entries a store must hold before the users' shares are enforced: half its most, rounded up. */
export const ephemeralPressure: (maxEphemeralEntries: number) => number = sharePressure;

/**
 * Prefixes of the keys that are kept until removed: connections, registered clients and upstreams' profiles. Every
 * other key is ephemeral.
 */
const DURABLE_KEY_PREFIXES: readonly string[] = ['conn:', 'client:', 'profile:'];

/**
 * Whether `key` is an ephemeral entry's, counted against {@link DEFAULT_TOKEN_STORE_MAX_EPHEMERAL_ENTRIES}.
 *
 * @example
 * isEphemeralKey('ticket:abc'); // true
 * isEphemeralKey('conn:u:notes'); // false
 */
export function isEphemeralKey(key: string): boolean {
  return !DURABLE_KEY_PREFIXES.some((prefix) => key.startsWith(prefix));
}
