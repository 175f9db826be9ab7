/** The bounds every persistent token store applies unless told otherwise. */

/** Default most entries a store keeps: a connection per user and server, plus tickets and flows under way. */
export const DEFAULT_TOKEN_STORE_MAX_ENTRIES = 100_000;
/** Default most bytes of one value: 16 KiB, where a sealed connection is well under 2 KiB. */
export const DEFAULT_TOKEN_STORE_MAX_VALUE_BYTES = 16 * 1024;
