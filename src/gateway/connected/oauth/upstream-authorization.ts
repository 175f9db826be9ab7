/**
 * The gateway as the OAuth client of one upstream's authorization server, in connected mode: discovery,
 * registration, the authorization code flow, refresh and revocation, put together behind one interface.
 */
import type { LineSink } from '../../../core/kernel/log-line.js';
import type { UpstreamTarget } from '../../upstream-auth/upstream-resource-metadata.js';
import type { TokenStore } from '../store/token-store.js';
import { createAuthorizationCodeFlow, type CompletedAuthorization } from './authorization-code-flow.js';
import { createClientRegistration } from './client-registration.js';
import type { ConnectionRecord, UserRef } from './connection-record.js';
import { createConnectionRefresh, refreshLockTtlMs } from './connection-refresh.js';
import { createConnectionRevocation, type RevocationReport } from './connection-revocation.js';
import type { Sealer } from './sealer.js';
import { createUpstreamAuthorizationServerDiscovery } from './upstream-authorization-server.js';
import { createUpstreamClient } from './upstream-client.js';
import type { RegisteredClient } from './upstream-client-configuration.js';

/** Options of {@link createUpstreamAuthorization}. */
export interface UpstreamAuthorizationOptions {
  /** The configuration file's server name, `""` for the single upstream. */
  server: string;
  /** The upstream's target: `createUpstreamTargetResolver` (RFC 9728 metadata, a 401 challenge, or settings). */
  target: () => Promise<UpstreamTarget>;
  /** The gateway's public origin (redirect URI `<origin>/connect/callback`). */
  gatewayOrigin: string | URL;
  /** `MCP_AUTH_UPSTREAM_CLIENT_ID`; without it, a client metadata document or dynamic registration. */
  clientId?: string;
  /** `MCP_AUTH_UPSTREAM_CLIENT_SECRET[_FILE]`; without it a configured client is public. Never logged. */
  clientSecret?: string;
  /** `client_name` registered or published. Default `mcp-oauth-guard`. */
  clientName?: string;
  /** `MCP_AUTH_UPSTREAM_SCOPE` (space-separated). */
  scope?: string;
  store: TokenStore;
  sealer: Sealer;
  /** Timeout of each request to the upstream and its authorization server, in milliseconds. */
  timeoutMs: number;
  /** Life of a pending authorization, in milliseconds (at most 10 minutes, the default). */
  flowTtlMs?: number;
  /**
   * Longest hold of a connection's refresh lock, in milliseconds. Default `refreshLockTtlMs(timeoutMs)`: every
   * request that can run under it timing out, plus a margin (45 s with the default 5 s timeout).
   */
  lockTtlMs?: number;
  /** Receives a line when an expiring dynamic registration is replaced (see `createClientRegistration`); never a secret. */
  log?: LineSink;
  /** Clock for the expiry of a dynamic registration's secret, in milliseconds. Default `Date.now`. */
  now?: () => number;
}

/** One upstream's authorizations, refreshes and revocations. */
export interface UpstreamAuthorization {
  /** The configuration file's server name this is for. */
  readonly server: string;
  /** Authorization URL for a ticket (PKCE S256, one-time state ≤ 10 min, `resource`, scope). Stores the pending flow. */
  begin(input: { ticketId: string; scope?: string; owner?: string }): Promise<URL>;
  /** Handles the redirect back: state, `iss` (RFC 9207), code exchange. The caller stores the record. */
  complete(callbackUrl: URL): Promise<CompletedAuthorization>;
  /**
   * Refreshes `user`'s connection under its lock (see `ConnectionRefresh.refresh`); `server` must be this one's.
   *
   * @param replacing - the access token the caller wants replaced, when it has one.
   */
  refresh(user: UserRef, server: string, replacing?: string): Promise<ConnectionRecord | undefined>;
  /** Revokes (RFC 7009, refresh token first) and deletes `user`'s connection; `server` must be this one's. */
  revoke(user: UserRef, server: string): Promise<RevocationReport>;
  /** Revokes (RFC 7009) the tokens of a completed authorization whose connection could not be stored. */
  revokeUnstored(record: ConnectionRecord): Promise<RevocationReport>;
}

/**
 * Creates the upstream's authorization. Nothing is fetched until first used.
 *
 * @example
 * const upstream = createUpstreamAuthorization({ server: '', target, gatewayOrigin: 'https://gw.example.com', store, sealer, timeoutMs: 5000 });
 * const url = await upstream.begin({ ticketId });
 */
export function createUpstreamAuthorization(options: UpstreamAuthorizationOptions): UpstreamAuthorization {
  const registration = createClientRegistration(options);
  const upstreamClient = createUpstreamClient({
    authorizationServer: createUpstreamAuthorizationServerDiscovery({ target: options.target, timeoutMs: options.timeoutMs }),
    registration: (server) => registration.client(server),
    timeoutMs: options.timeoutMs,
  });
  const shared = { server: options.server, upstreamClient, store: options.store, sealer: options.sealer, lockTtlMs: options.lockTtlMs ?? refreshLockTtlMs(options.timeoutMs) };
  const forgetClient = (client: RegisteredClient): Promise<void> => registration.forget(client);
  const flow = createAuthorizationCodeFlow({ ...shared, forgetClient, gatewayOrigin: options.gatewayOrigin, ...(options.scope !== undefined ? { scope: options.scope } : {}), ...(options.flowTtlMs !== undefined ? { flowTtlMs: options.flowTtlMs } : {}) });
  const refresher = createConnectionRefresh({ ...shared, forgetClient });
  const revoker = createConnectionRevocation(shared);
  const ownServer = (server: string): void => {
    if (server !== options.server) throw new TypeError(`this authorization is for server "${options.server}", not "${server}"`);
  };
  return {
    server: options.server,
    begin: (input) => flow.begin(input),
    complete: (callbackUrl) => flow.complete(callbackUrl),
    async refresh(user, server, replacing) {
      ownServer(server);
      return refresher.refresh(user, replacing);
    },
    async revoke(user, server) {
      ownServer(server);
      return revoker.revoke(user);
    },
    revokeUnstored: (record) => revoker.revokeUnstored(record),
  };
}
