/** The bounds every persistent token store applies unless told otherwise. */

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
 * Default share of one user, as a divisor of the most ephemeral entries: while the store holds at least half its
 * most ephemeral entries, a user holding 1 % of them (200 with the defaults) gets no new one until its oldest expires,
 * as the DPoP replay cache shares itself between callers. Below half, nobody is limited; one user alone thus fills
 * at most half, and the other half stays for the users within their share.
 */
export const DEFAULT_TOKEN_STORE_EPHEMERAL_SHARE_DIVISOR = 100;

/**
 * The default share of one user of a store of `maxEphemeralEntries`: 1 %, at least one.
 *
 * @example
 * defaultEphemeralShare(20_000); // 200
 */
export function defaultEphemeralShare(maxEphemeralEntries: number): number {
  return Math.max(1, Math.floor(maxEphemeralEntries / DEFAULT_TOKEN_STORE_EPHEMERAL_SHARE_DIVISOR));
}

/** How many ephemeral entries a store must hold before the users' shares are enforced: half its most, rounded up. */
export function ephemeralPressure(maxEphemeralEntries: number): number {
  return Math.ceil(maxEphemeralEntries / 2);
}

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
