/**
 * Refreshing a user's connection before its access token expires, or after the upstream refused it: one refresh
 * at a time per user and server, across replicas too, so that a rotated refresh token (RFC 9700 §4.14.2) is never
 * used twice nor lost.
 */
import * as client from 'openid-client';
import { deleteIfUnchanged } from '../store/delete-if-unchanged.js';
import { lockTtlMs } from '../store/lock-ttl.js';
import type { TokenStore } from '../store/token-store.js';
import { connectionKey, userKey, type ConnectionRecord, type UserRef } from './connection-record.js';
import { readConnection } from './sealed-connections.js';
import type { Sealer } from './sealer.js';
import { tokenResponseRecord } from './token-response-record.js';
import { upstreamAuthorizationFailure } from './upstream-authorization-error.js';
import type { UpstreamClient } from './upstream-client.js';
import type { RegisteredClient } from './upstream-client-configuration.js';

/**
 * Requests to the upstream and its authorization server that can run while a connection's lock is held, each
 * bounded by the upstream's timeout: the upstream's RFC 9728 metadata (its well-known URI, a `ping` for its 401
 * challenge, the document that challenge names), the authorization server's RFC 8414 metadata (two well-known URIs),
 * a dynamic registration, and then the refresh grant, or for a disconnection the two RFC 7009 revocations.
 */
export const REQUESTS_UNDER_REFRESH_LOCK = 8;

/** Added to those requests' time for the store's reads and writes under the lock, in milliseconds. */
export const REFRESH_LOCK_MARGIN_MS = 5_000;

/**
 * The longest hold of a connection's lock (refresh and disconnection) for an upstream whose requests time out after
 * `timeoutMs` milliseconds: every request that can run under it ({@link REQUESTS_UNDER_REFRESH_LOCK}) timing out,
 * plus {@link REFRESH_LOCK_MARGIN_MS}. Past it a waiting replica goes ahead; were that before the holder's refresh
 * ended, both would send the same refresh token, and a server that detects the reuse of a rotated refresh token
 * (RFC 9700 §4.14.2) revokes the user's grant.
 *
 * @example refreshLockTtlMs(5_000); // 45 000: the default timeout of 5 s
 */
export function refreshLockTtlMs(timeoutMs: number): number {
  return lockTtlMs(REQUESTS_UNDER_REFRESH_LOCK, timeoutMs, REFRESH_LOCK_MARGIN_MS);
}

/** Options of {@link createConnectionRefresh}. */
export interface ConnectionRefreshOptions {
  /** The configuration file's server name, `""` for the single upstream. */
  server: string;
  /** `createUpstreamClient(...)`. */
  upstreamClient: () => Promise<UpstreamClient>;
  store: TokenStore;
  sealer: Sealer;
  /** Longest hold of the lock, in milliseconds: more than all that can run under it ({@link refreshLockTtlMs}). */
  lockTtlMs: number;
  /**
   * The authorization server refused the gateway's client itself (`invalid_client`): drops a dynamic registration
   * so that the next connection registers afresh (`ClientRegistration.forget`). Default: nothing.
   */
  forgetClient?: (client: RegisteredClient) => Promise<void>;
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
   *   refused the refresh with an OAuth error (`invalid_grant`, and also `invalid_client`, `unauthorized_client`,
   *   …: the record is then deleted, and on `invalid_client` a dynamic registration too): the caller starts the
   *   connect flow.
   * @throws UpstreamAuthorizationError `unavailable` (no answer, a timeout, a 5xx, 429) or `invalid_response`: the
   *   record is kept, the failure is transient or the operator's to fix.
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
  const { lockTtlMs } = options;
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
      if (!failure.code.startsWith('refused:')) throw failure;
      // A refusal is final for this refresh token: waiting will not change it, and a 503 would repeat for good. The
      // user connects again; a forgotten client is registered again first.
      await deleteIfUnchanged(options.store, key, sealed);
      if (failure.code === 'refused:invalid_client') await options.forgetClient?.(upstream.client);
      return undefined;
    }
    const next = tokenResponseRecord(response, { issuer: record.asIssuer, clientId: record.clientId, requestedAt, previous: record });
    if (await options.store.compareAndSet(key, sealed, await options.sealer.seal(key, next))) return next;
    // Written meanwhile (a new connection, or a lock held past its time): the stored record wins. The tokens just
    // issued are not revoked: where they belong to the same grant as the winner's (a refresh from the same
    // connection), revoking them would revoke the winner's too; they are dropped and expire unused.
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
