/**
 * A user's connection in the token store: the {@link ConnectionRecord} sealed under `conn:<userKey>:<server>`, so
 * that a record copied under another user's key does not open.
 */
import type { TokenStore } from '../store/token-store.js';
import { connectionKey, type ConnectionRecord, type UserRef } from './connection-record.js';
import type { Sealer } from './sealer.js';

/** A connection as read: the record and the sealed string it came from (the `expected` of a later compare-and-set). */
export interface StoredConnection {
  readonly record: ConnectionRecord;
  readonly sealed: string;
}

/**
 * Reads `user`'s connection to `server`; undefined when there is none, or it does not open (another key, an old
 * secret no longer configured).
 */
export async function readConnection(store: TokenStore, sealer: Sealer, user: UserRef, server: string): Promise<StoredConnection | undefined> {
  const key = connectionKey(user, server);
  const sealed = await store.get(key);
  if (sealed === undefined) return undefined;
  const record = await sealer.open<ConnectionRecord>(key, sealed);
  return record === undefined ? undefined : { record, sealed };
}

/**
 * Whether `user`'s connection to `server` opens with `sealer`'s keys: undefined when there is none. A record that is
 * there but does not open was sealed with another token store secret (or altered): its tokens may still be live at
 * the upstream, so an operator's revocation keeps it rather than delete it unrevoked.
 */
export async function connectionOpens(store: TokenStore, sealer: Sealer, user: UserRef, server: string): Promise<boolean | undefined> {
  const key = connectionKey(user, server);
  const sealed = await store.get(key);
  return sealed === undefined ? undefined : (await sealer.open<ConnectionRecord>(key, sealed)) !== undefined;
}

/**
 * Forgets the step-up `user`'s connection to `server` was made for (`ConnectionRecord.stepUpScope`), unless the
 * connection was rewritten meanwhile (compare-and-set): after one final refusal, the user's next request is asked to
 * connect again, since the authorization server may grant the scope by then.
 */
export async function clearStepUpScope(store: TokenStore, sealer: Sealer, user: UserRef, server: string): Promise<void> {
  const current = await readConnection(store, sealer, user, server);
  if (current?.record.stepUpScope === undefined) return;
  const { stepUpScope: _cleared, ...record } = current.record;
  const key = connectionKey(user, server);
  await store.compareAndSet(key, current.sealed, await sealer.seal(key, record));
}

/**
 * Seals `record` for `user` and `server` and writes it, replacing any connection there (a new authorization).
 *
 * @returns the sealed string written.
 */
export async function writeConnection(store: TokenStore, sealer: Sealer, user: UserRef, server: string, record: ConnectionRecord): Promise<string> {
  const key = connectionKey(user, server);
  const sealed = await sealer.seal(key, record);
  await store.set(key, sealed);
  return sealed;
}
