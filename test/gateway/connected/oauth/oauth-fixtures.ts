// Real parts for the connected-accounts OAuth tests: a development authorization server (oidc-provider), an
// upstream that publishes RFC 9728 metadata naming it, a loopback "gateway" origin that answers the callback, and a
// plain JSON sealer standing in for the token store's JWE one.
import { createServer, type Server } from 'node:http';
import { DEMO_PASSWORD, DEMO_SCOPES, DEMO_USERNAME, startAuthorizationServer, type AuthorizationServer, type AuthorizationServerOptions } from '../../../../examples/dev/authorization-server.js';
import { signInToDevelopmentServer } from '../../../../src/client/development-sign-in.js';
import { createUpstreamTargetResolver } from '../../../../src/gateway/upstream-auth/upstream-resource-metadata.js';
import { createMemoryTokenStore } from '../../../../src/gateway/connected/store/memory-token-store.js';
import type { TokenStore } from '../../../../src/gateway/connected/store/token-store.js';
import type { Sealer } from '../../../../src/gateway/connected/oauth/sealer.js';
import { upstreamCallbackUrl } from '../../../../src/gateway/connected/oauth/gateway-client-urls.js';
import { createUpstreamAuthorization, type UpstreamAuthorization, type UpstreamAuthorizationOptions } from '../../../../src/gateway/connected/oauth/upstream-authorization.js';
import { closeServer, listenOnLoopback } from '../../../helpers/loopback-server.js';

/** Timeout of every request in these tests, in milliseconds. */
export const TIMEOUT_MS = 5_000;

/** The user of the tests' connections. */
export const ALICE = { issuer: 'https://id.example.test', subject: 'alice' } as const;

/**
 * Seals as JSON with the store key and an expiry inside, and opens only under the same key before the expiry:
 * the behaviour of the token store's sealer without its encryption.
 */
export function jsonSealer(): Sealer {
  return {
    seal: (key, value, ttlMs) => Promise.resolve(JSON.stringify({ key, value, exp: ttlMs === undefined ? null : Date.now() + ttlMs })),
    open<T>(key: string, sealed: string) {
      const parsed = JSON.parse(sealed) as { key: string; value: T; exp: number | null };
      return Promise.resolve(parsed.key === key && (parsed.exp === null || parsed.exp > Date.now()) ? parsed.value : undefined);
    },
  };
}

/** A running set: authorization server, upstream (its metadata only), gateway origin, store and sealer. */
export interface OAuthSetup {
  as: AuthorizationServer;
  /** The upstream's MCP URL, its resource identifier. */
  resource: string;
  gatewayOrigin: string;
  /** `<gatewayOrigin>/connect/callback/upstream`: the single upstream's redirect URI. */
  redirectUri: string;
  store: TokenStore;
  sealer: Sealer;
  /** The upstream's `WWW-Authenticate` to a request without a token. Default `Bearer`; a test may change it. */
  challenge: string;
  /** An authorization for the single upstream over the shared store; `overrides` win. */
  authorization(overrides?: Partial<UpstreamAuthorizationOptions>): UpstreamAuthorization;
  close(): Promise<void>;
}

/** What the setup builds the authorization server with, knowing the upstream's resource and the redirect URI. */
export type ServerOptionsFor = (context: { resource: string; redirectUri: string }) => AuthorizationServerOptions;

/** Starts the set. The upstream advertises `notes:read notes:write` in `scopes_supported`. */
export async function startOAuthSetup(serverOptions: ServerOptionsFor = () => ({}), gatewayOrigin?: string): Promise<OAuthSetup> {
  let issuer = '';
  let challenge = 'Bearer';
  const upstreamServer: Server = createServer((req, res) => {
    if (req.url === '/.well-known/oauth-protected-resource/mcp') {
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ resource, authorization_servers: [issuer], scopes_supported: ['notes:read', 'notes:write'] }));
    } else res.writeHead(401, { 'www-authenticate': challenge }).end();
  });
  const gatewayServer: Server = createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/plain' }).end('ok'));
  const resource = `${await listenOnLoopback(upstreamServer)}/mcp`;
  const origin = gatewayOrigin ?? (await listenOnLoopback(gatewayServer));
  const redirectUri = upstreamCallbackUrl(origin, '');
  const as = await startAuthorizationServer({ resources: { [resource]: { scopes: DEMO_SCOPES } }, ...serverOptions({ resource, redirectUri }) });
  issuer = as.issuer;
  const store = createMemoryTokenStore({ maxEntries: 1000 });
  const sealer = jsonSealer();
  return {
    as,
    resource,
    gatewayOrigin: origin,
    redirectUri,
    store,
    sealer,
    get challenge() {
      return challenge;
    },
    set challenge(value) {
      challenge = value;
    },
    authorization: (overrides = {}) =>
      createUpstreamAuthorization({
        server: '',
        target: createUpstreamTargetResolver({ upstream: new URL(resource), gatewayIssuers: [], timeoutMs: TIMEOUT_MS }),
        gatewayOrigin: origin,
        store,
        sealer,
        timeoutMs: TIMEOUT_MS,
        ...overrides,
      }),
    async close() {
      closeServer(upstreamServer);
      if (gatewayServer.listening) closeServer(gatewayServer);
      await store.close();
      // A test may have stopped the authorization server already, to see it unreachable.
      await as.close().catch(() => undefined);
    },
  };
}

/** The demo user signs in and approves at the authorization URL; returns where the server sent the browser back. */
export function signIn(authorizationUrl: URL, redirectUri: string, deny = false): Promise<URL> {
  return signInToDevelopmentServer(authorizationUrl, { username: DEMO_USERNAME, password: DEMO_PASSWORD, redirectUri, deny });
}

/** Runs a whole authorization: begin, sign-in, complete. */
export async function connect(authorization: UpstreamAuthorization, setup: OAuthSetup, scope?: string): Promise<Awaited<ReturnType<UpstreamAuthorization['complete']>>> {
  const url = await authorization.begin({ ticketId: 'ticket-1', ...(scope !== undefined ? { scope } : {}) });
  return authorization.complete(await signIn(url, setup.redirectUri));
}

/** Counts the grants the authorization server issued, by grant type. */
export function countGrants(as: AuthorizationServer): Map<string, number> {
  const counts = new Map<string, number>();
  as.provider.on('grant.success', (ctx: unknown) => {
    const type = String((ctx as { oidc: { params?: { grant_type?: unknown } } }).oidc.params?.grant_type);
    counts.set(type, (counts.get(type) ?? 0) + 1);
  });
  return counts;
}
