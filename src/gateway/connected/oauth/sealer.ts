/**
 * What the OAuth client part needs of the token store's sealer: values sealed (encrypted, bound to their store
 * key) before they reach a store, and opened when read back. The store's `RecordSealer` has exactly this shape,
 * so it is passed as is; tests pass a plain JSON one.
 */

/** Seals and opens values bound to a store key. `open` answers undefined for a value sealed under another key, expired or not opening. */
export interface Sealer {
  /** Seals `value` for the store key `key`, valid for `ttlMs` milliseconds when given. */
  seal(key: string, value: object, ttlMs?: number): Promise<string>;
  /** The value sealed under `key`, or undefined. */
  open<T>(key: string, sealed: string): Promise<T | undefined>;
}
