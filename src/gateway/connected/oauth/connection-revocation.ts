/**
 * Disconnecting a user from an upstream: the tokens are revoked at the authorization server where it offers
 * RFC 7009 revocation, and the connection is deleted whatever the server answered.
 */
import * as client from 'openid-client';
import type { TokenStore } from '../store/token-store.js';
import { connectionKey, type ConnectionRecord, type UserRef } from './connection-record.js';
import { refreshLockName } from './connection-refresh.js';
import { readConnection } from './sealed-connections.js';
import type { Sealer } from './sealer.js';
import { upstreamAuthorizationFailure } from './upstream-authorization-error.js';
import type { UpstreamClient } from './upstream-client.js';

/** A token of a connection, by its RFC 7009 §2.1 `token_type_hint`. */
export type ConnectionTokenType = 'refresh_token' | 'access_token';

/** What a disconnection did. Every text is safe to show the user or log. */
export interface RevocationReport {
  /** Whether there was a connection (it is deleted now). */
  found: boolean;
  /** Tokens the authorization server accepted to revoke, in the order sent. */
  revoked: ConnectionTokenType[];
  /** Tokens not revoked at the server, each with why (e.g. `refused:invalid_client`, no revocation endpoint). */
  notRevoked: { token: ConnectionTokenType; reason: string }[];
}

/** Options of {@link createConnectionRevocation}. */
export interface ConnectionRevocationOptions {
  /** The configuration file's server name, `""` for the single upstream. */
  server: string;
  /** `createUpstreamClient(...)`. */
  upstreamClient: () => Promise<UpstreamClient>;
  store: TokenStore;
  sealer: Sealer;
  /** Longest hold of the connection's lock (shared with refresh), in milliseconds (`refreshLockTtlMs`). */
  lockTtlMs: number;
}

/** Disconnects users from one upstream. */
export interface ConnectionRevocation {
  /**
   * Revokes `user`'s connection: the refresh token first (RFC 7009 §2.1: the server may then revoke the access
   * tokens of the grant too), then the access token, then deletes it. Holding the refresh lock, so that a refresh
   * running at the same time cannot write the connection back.
   */
  revoke(user: UserRef): Promise<RevocationReport>;
  /**
   * Revokes at the server (RFC 7009, refresh token first) the tokens of a record that was never stored: an
   * exchange whose connection could not be kept must not leave live tokens behind.
   */
  revokeUnstored(record: ConnectionRecord): Promise<RevocationReport>;
}

/** Creates the revoker. A failure to revoke is reported, never thrown: the connection is deleted all the same. */
export function createConnectionRevocation(options: ConnectionRevocationOptions): ConnectionRevocation {
  const revokeAtServer = async (record: ConnectionRecord, report: RevocationReport): Promise<void> => {
    const tokens: [ConnectionTokenType, string][] = [...(record.refreshToken !== undefined ? [['refresh_token', record.refreshToken] as [ConnectionTokenType, string]] : []), ['access_token', record.accessToken]];
    const skip = (reason: string): void => void report.notRevoked.push(...tokens.map(([token]) => ({ token, reason })));
    let upstream: UpstreamClient;
    try {
      upstream = await options.upstreamClient();
    } catch (error) {
      return skip(upstreamAuthorizationFailure(error, 'the revocation').code);
    }
    if (record.asIssuer !== upstream.client.issuer || record.clientId !== upstream.client.clientId) return skip('issued to another client or server than the current one');
    if (upstream.server.metadata.revocation_endpoint === undefined) return skip('the authorization server offers no revocation');
    for (const [token, value] of tokens) {
      try {
        await client.tokenRevocation(upstream.config, value, { token_type_hint: token });
        report.revoked.push(token);
      } catch (error) {
        report.notRevoked.push({ token, reason: upstreamAuthorizationFailure(error, 'the revocation').code });
      }
    }
  };
  return {
    async revokeUnstored(record) {
      const report: RevocationReport = { found: false, revoked: [], notRevoked: [] };
      await revokeAtServer(record, report);
      return report;
    },
    revoke(user) {
      return options.store.withLock(refreshLockName(user, options.server), options.lockTtlMs, async () => {
        const report: RevocationReport = { found: false, revoked: [], notRevoked: [] };
        const current = await readConnection(options.store, options.sealer, user, options.server);
        if (current !== undefined) {
          report.found = true;
          await revokeAtServer(current.record, report);
        }
        await options.store.delete(connectionKey(user, options.server));
        return report;
      });
    },
  };
}
