/**
 * What the OAuth client part needs of the token store's sealer: values sealed (encrypted, bound to their store
 * key) before they reach a store, and opened when read back. It is the store's {@link RecordSealer}; tests pass a
 * plain JSON one of the same shape.
 */
import type { RecordSealer } from '../store/record-sealer.js';

/** Seals and opens values bound to a store key (the store's {@link RecordSealer}). */
export type Sealer = RecordSealer;
