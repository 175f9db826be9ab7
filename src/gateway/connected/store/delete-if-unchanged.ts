/**
 * Deleting an entry only while it still holds what was read: a value rewritten meanwhile (a new connection, a new
 * registration by another replica) stays.
 */
import type { TokenStore } from './token-store.js';

/**
 * Deletes `key` unless it was rewritten since `sealed` was read. The read and the delete are two steps: a write
 * between them is lost, which costs the writer a repeat (a new sign-in, a new registration), never a wrong value.
 *
 * @returns true when deleted.
 * @example
 * await deleteIfUnchanged(store, connectionKey(user, server), sealedRead);
 */
export async function deleteIfUnchanged(store: TokenStore, key: string, sealed: string): Promise<boolean> {
  return (await store.get(key)) === sealed && store.delete(key);
}
