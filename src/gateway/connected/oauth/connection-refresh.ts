/**
 * Refreshing a user's connection before its access token expires, or after the upstream refused it: one refresh
 * at a time per user and server, across replicas too, so that a rotated refresh token (RFC 9700 §4.14.2) is never
 * used twice nor lost.
 */
import * as client from 'openid-client';
import type { TokenStore } from '../store/token-store.js';
import { connectionKey, userKey, type ConnectionRecord, type UserRef } from './connection-record.js';
import { readConnection } from './sealed-connections.js';
import type { Sealer } from './sealer.js';
import { tokenResponseRecord } from './token-response-record.js';
import { upstreamAuthorizationFailure } from './upstream-authorization-error.js';
import type { UpstreamClient } from './upstream-client.js';

/** Default longest hold of the refresh lock, in milliseconds: past it a waiting replica goes ahead. */
export const DEFAULT_REFRESH_LOCK_TTL_MS = 30_000;

/** Options of {@link createConnectionRefresh}. */
export interface ConnectionRefreshOptions {
  /** The configuration file's server name, `""` for the single upstream. */
  server: string;
  /** `createUpstreamClient(...)`. */
  upstreamClient: () => Promise<UpstreamClient>;
  store: TokenStore;
  sealer: Sealer;
  /** Longest hold of the lock, in milliseconds; more than the token request's timeout. Default {@link DEFAULT_REFRESH_LOCK_TTL_MS}. */
  lockTtlMs?: number;
}

/** Refreshes connections to one upstream. */
export interface ConnectionRefresh {
  /**
   * Refreshes `user`'s connection, unless it was refreshed while this call waited for the lock (by this process or
   * another replica): then the newer record is returned as it is.
   *
   * @param replacing - the access token the caller holds and wants replaced (it expires, or the upstream refused
   *   it): a stored record with another access token is fresh. Without it, a record written after this call began
   *   is fresh.
   * @returns the current record; undefined when there is no connection, it has no refresh token, or the server
   *   answered `invalid_grant` (the record is then deleted): the caller starts the connect flow.
   * @throws UpstreamAuthorizationError for any other refusal (`refused:<error>`) or `unavailable`; the record is kept.
   */
  refresh(user: UserRef, replacing?: string): Promise<ConnectionRecord | undefined>;
}

/** The name of the lock of `user`'s connection to `server`. */
export function refreshLockName(user: UserRef, server: string): string {
  return `lock:${userKey(user)}:${server}`;
}

/**
 * Creates the refresher. Concurrent calls in one process for the same user share one flight; across processes
 * they take turns through `store.withLock`, each re-reading the record once it holds the lock; the new record is
 * written with `compareAndSet` against the one read, so a write that lost a race never overwrites the winner.
 */
export function createConnectionRefresh(options: ConnectionRefreshOptions): ConnectionRefresh {
  const lockTtlMs = options.lockTtlMs ?? DEFAULT_REFRESH_LOCK_TTL_MS;
  const flights = new Map<string, Promise<ConnectionRecord | undefined>>();

  const refreshHoldingLock = async (user: UserRef, startedAt: number, replacing: string | undefined): Promise<ConnectionRecord | undefined> => {
    const key = connectionKey(user, options.server);
    const current = await readConnection(options.store, options.sealer, user, options.server);
    if (current === undefined) return undefined;
    const { record, sealed } = current;
    if (replacing !== undefined ? record.accessToken !== replacing : record.updatedAt >= startedAt) return record;
    if (record.refreshToken === undefined) return undefined;
    const upstream = await options.upstreamClient();
    // A refresh token goes back only to the server and client it was issued to.
    if (record.asIssuer !== upstream.client.issuer || record.clientId !== upstream.client.clientId) {
      await deleteIfUnchanged(options.store, key, sealed);
      return undefined;
    }
    const requestedAt = Date.now();
    let response: client.TokenEndpointResponse;
    try {
      response = await client.refreshTokenGrant(upstream.config, record.refreshToken, { resource: upstream.server.target.resource });
    } catch (error) {
      const failure = upstreamAuthorizationFailure(error, 'the refresh');
      if (failure.code !== 'refused:invalid_grant') throw failure;
      await deleteIfUnchanged(options.store, key, sealed);
      return undefined;
    }
    const next = tokenResponseRecord(response, { issuer: record.asIssuer, clientId: record.clientId, requestedAt, previous: record });
    if (await options.store.compareAndSet(key, sealed, await options.sealer.seal(key, next))) return next;
    // Written meanwhile (a new connection, or a lock held past its time): the stored record wins.
    return (await readConnection(options.store, options.sealer, user, options.server))?.record;
  };

  return {
    refresh(user, replacing) {
      const name = refreshLockName(user, options.server);
      let flight = flights.get(name);
      if (flight === undefined) {
        const startedAt = Date.now();
        flight = options.store.withLock(name, lockTtlMs, () => refreshHoldingLock(user, startedAt, replacing)).finally(() => flights.delete(name));
        flights.set(name, flight);
      }
      return flight;
    },
  };
}

/** Deletes `key` unless it was rewritten since `sealed` was read (a new connection made meanwhile stays). */
async function deleteIfUnchanged(store: TokenStore, key: string, sealed: string): Promise<void> {
  if ((await store.get(key)) === sealed) await store.delete(key);
}
