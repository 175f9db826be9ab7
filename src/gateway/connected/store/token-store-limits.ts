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
