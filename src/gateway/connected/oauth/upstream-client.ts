/**
 * One upstream's authorization server and the gateway's client there, put together for the grants: discovered,
 * registered and configured on first use.
 */
import type * as client from 'openid-client';
import type { UpstreamAuthorizationServer } from './upstream-authorization-server.js';
import { upstreamClientConfiguration, type RegisteredClient } from './upstream-client-configuration.js';

/** An authorization server, the gateway's client at it, and the openid-client configuration of the two. */
export interface UpstreamClient {
  readonly server: UpstreamAuthorizationServer;
  readonly client: RegisteredClient;
  readonly config: client.Configuration;
}

/** Options of {@link createUpstreamClient}. */
export interface UpstreamClientOptions {
  /** `createUpstreamAuthorizationServerDiscovery(...)`. */
  authorizationServer: () => Promise<UpstreamAuthorizationServer>;
  /** `createClientRegistration(...).client`. */
  registration: (server: UpstreamAuthorizationServer) => Promise<RegisteredClient>;
  /** Timeout of each request to the authorization server, in milliseconds. */
  timeoutMs: number;
}

/**
 * Returns the upstream client; the configuration is rebuilt only when the server's metadata or the client
 * changes (both memoized by their makers).
 *
 * @throws UpstreamAuthorizationError from discovery or registration.
 */
export function createUpstreamClient(options: UpstreamClientOptions): () => Promise<UpstreamClient> {
  let last: UpstreamClient | undefined;
  return async () => {
    const server = await options.authorizationServer();
    const registered = await options.registration(server);
    if (last?.server.metadata !== server.metadata || last.client !== registered || last.server.target !== server.target) {
      last = { server, client: registered, config: upstreamClientConfiguration(server.metadata, registered, options.timeoutMs) };
    }
    return last;
  };
}
