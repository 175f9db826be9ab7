/**
 * The token store and the upstream authorizations of connected accounts, opened from the gateway's configuration:
 * one way for the gateway and for the operator's `connections` command, so that both read and seal records under the
 * same keys, with the same Redis prefix, and revoke at the same authorization servers.
 */
import type { LineSink } from '../../core/kernel/log-line.js';
import type { ConnectedAccountsConfig } from '../config/connected-accounts-config.js';
import type { GatewayConfig } from '../config/gateway-config.js';
import type { SharedStoreConfig } from '../config/shared-store-config.js';
import type { UpstreamAuthConfig } from '../upstream-auth/upstream-auth-config.js';
import { createUpstreamTargetResolver, type UpstreamTarget } from '../upstream-auth/upstream-resource-metadata.js';
import { createUpstreamAuthorization, type UpstreamAuthorization } from './oauth/upstream-authorization.js';
import { createTokenStore } from './store/create-token-store.js';
import { createRecordSealer, type RecordSealer } from './store/record-sealer.js';
import type { TokenStore } from './store/token-store.js';

/** An upstream in connected mode: its server name (`""` for the single upstream) and its settings. */
export interface ConnectedUpstream {
  readonly server: string;
  readonly auth: Extract<UpstreamAuthConfig, { mode: 'connected' }>;
}

/** The token store named by `MCP_AUTH_TOKEN_STORE` and the sealer of `MCP_AUTH_TOKEN_STORE_SECRET`. */
export interface OpenedConnectionStore {
  readonly store: TokenStore;
  readonly sealer: RecordSealer;
}

/**
 * Opens the token store and its sealer. With Redis, keys are under `<MCP_AUTH_REDIS_KEY_PREFIX>tokens:`, the
 * prefix defaulting to `mcp-guard:<resource>:` as the gateway's other shared stores do: every replica of one
 * gateway (one resource) shares them.
 *
 * @param resource - the gateway's canonical resource URI.
 * @param onWarning - told when Redis is lost (with a short reason) and back; default a JSON warning line on stderr.
 * @throws ConfigurationError when the directory cannot be used (named `MCP_AUTH_TOKEN_STORE`);
 *   TokenStoreUnavailableError when Redis cannot be reached.
 * @example
 * const { store, sealer } = await openConnectionStore(config.connectedAccounts, resource, config.redis);
 */
export async function openConnectionStore(
  config: ConnectedAccountsConfig,
  resource: string,
  redis: SharedStoreConfig | undefined,
  onWarning?: (message: string, reason?: string) => void,
): Promise<OpenedConnectionStore> {
  if (config.store.kind === 'redis' && redis === undefined) throw new TypeError('MCP_AUTH_TOKEN_STORE=redis needs the shared Redis settings');
  const store = await createTokenStore(
    config.store.kind === 'directory'
      ? { kind: 'directory', directory: config.store.directory, setting: 'MCP_AUTH_TOKEN_STORE' }
      : { kind: 'redis', url: redis!.url, keyPrefix: `${redis!.keyPrefix ?? `mcp-guard:${resource}:`}tokens:`, ...(onWarning ? { onWarning } : {}) },
  );
  const sealer = createRecordSealer(config.storeKeys);
  await warmUp(store, sealer);
  return { store, sealer };
}

/** The store key the start-up warm-up reads, which no record has. */
const WARM_UP_KEY = 'warm-up:start';

/**
 * Runs once at start-up what the first request of a user would otherwise run cold (the AES-GCM key's import, jose's
 * JWE code, the store's read path): the first request after a restart then costs what the next ones do. A failure
 * is left for the first request to meet and report.
 */
async function warmUp(store: TokenStore, sealer: RecordSealer): Promise<void> {
  try {
    await sealer.open(WARM_UP_KEY, await sealer.seal(WARM_UP_KEY, {}, 60_000));
    await store.get(WARM_UP_KEY);
  } catch {
    // Nothing to do: see above.
  }
}

/** Every upstream in connected mode of `config`: the single upstream (`""`) and the configuration file's servers. */
export function connectedUpstreamsOf(config: Pick<GatewayConfig, 'upstreamAuth' | 'servers'>): ConnectedUpstream[] {
  const upstreams: ConnectedUpstream[] = [];
  if (config.upstreamAuth?.mode === 'connected') upstreams.push({ server: '', auth: config.upstreamAuth });
  for (const server of config.servers ?? []) if (server.upstreamAuth?.mode === 'connected') upstreams.push({ server: server.name, auth: server.upstreamAuth });
  return upstreams;
}

/**
 * Where the user's authorization for a connected upstream comes from: the upstream's own metadata (or its
 * `MCP_AUTH_UPSTREAM_ISSUER` and `_RESOURCE`), never the gateway's issuers, which are no fallback here.
 *
 * @param timeoutMs - each request's timeout, in milliseconds. Default: the upstream's own.
 */
export function connectedUpstreamTarget(auth: ConnectedUpstream['auth'], timeoutMs: number = auth.timeoutMs): () => Promise<UpstreamTarget> {
  return createUpstreamTargetResolver({
    upstream: new URL(auth.upstream),
    gatewayIssuers: [],
    timeoutMs,
    // The scope to ask for when none is configured: the challenge's, as MCP clients do, before scopes_supported.
    challengeScope: true,
    ...(auth.issuer !== undefined ? { issuer: auth.issuer } : {}),
    ...(auth.resource !== undefined ? { resource: auth.resource } : {}),
  });
}

/**
 * The gateway as OAuth client of each upstream's authorization server, by server name. Nothing is fetched until
 * one is used.
 *
 * @param gatewayOrigin - the gateway's public origin (its redirect URI is `<origin>/connect/callback`).
 * @param log - receives a log line when a dynamic registration whose secret has expired is replaced. Default none.
 */
export function connectedAuthorizations(upstreams: readonly ConnectedUpstream[], gatewayOrigin: string, opened: OpenedConnectionStore, log?: LineSink): Map<string, UpstreamAuthorization> {
  const authorizations = new Map<string, UpstreamAuthorization>();
  for (const { server, auth } of upstreams) {
    authorizations.set(
      server,
      createUpstreamAuthorization({
        server,
        target: connectedUpstreamTarget(auth),
        gatewayOrigin,
        store: opened.store,
        sealer: opened.sealer,
        timeoutMs: auth.timeoutMs,
        ...(auth.clientId !== undefined ? { clientId: auth.clientId } : {}),
        ...(auth.clientSecret !== undefined ? { clientSecret: auth.clientSecret } : {}),
        ...(auth.scope !== undefined ? { scope: auth.scope } : {}),
        ...(log ? { log } : {}),
      }),
    );
  }
  return authorizations;
}
