/**
 * `check` for connected accounts: the token store can be written and read back sealed, the gateway's sign-in issuer
 * has what the connect page needs, and each connected upstream names an authorization server the gateway can be a
 * client of. Nothing is left in the store; no user is signed in and no token is asked for.
 */
import { randomBytes } from 'node:crypto';
import { explainFailure } from '../../../core/kernel/explain-failure.js';
import { createIssuerDiscovery } from '../../../core/token/issuer-discovery.js';
import type { GatewayConfig } from '../../config/gateway-config.js';
import { createUpstreamTargetResolver } from '../../upstream-auth/upstream-resource-metadata.js';
import { connectCallbackUrl, upstreamCallbackUrl } from '../../connected/oauth/gateway-client-urls.js';
import { createUpstreamAuthorizationServerDiscovery } from '../../connected/oauth/upstream-authorization-server.js';
import { connectedUpstreamsOf, openConnectionStore, type ConnectedUpstream } from '../../connected/open-connections.js';
import type { CheckResult } from './check-result.js';

/** The lines of connected accounts, in order: the store, the sign-in, then each connected upstream; none without any. */
export async function checkConnectedAccounts(config: GatewayConfig, resource: string, timeoutMs: number): Promise<CheckResult[]> {
  const connected = config.connectedAccounts;
  if (connected === undefined) return [];
  const origin = new URL(resource).origin;
  const upstreams = connectedUpstreamsOf(config);
  const [store, login, ...servers] = await Promise.all([
    checkStore(config, resource),
    checkLogin(connected.login.issuer, origin, timeoutMs),
    ...upstreams.map((upstream) => checkUpstreamServer(upstream, origin, timeoutMs)),
  ]);
  return [store, login, ...servers];
}

/** Writes a sealed probe under a key of its own, reads it back and deletes it. */
async function checkStore(config: GatewayConfig, resource: string): Promise<CheckResult> {
  const connected = config.connectedAccounts!;
  const subject = connected.store.kind === 'directory' ? connected.store.directory : 'redis';
  const base = { check: 'connected accounts', subject: `token store ${subject}` } as const;
  try {
    // The failure is this line's (with a short reason), not a warning of its own on the console.
    const { store, sealer } = await openConnectionStore(connected, resource, config.redis, () => undefined);
    try {
      const key = `check:${randomBytes(12).toString('base64url')}`;
      await store.set(key, await sealer.seal(key, { probe: true }, 60_000), 60_000);
      const read = await store.get(key);
      const opened = read === undefined ? undefined : await sealer.open<{ probe?: boolean }>(key, read);
      await store.delete(key);
      if (opened?.probe !== true) return { ...base, status: 'fail', message: 'a value written could not be read back', fix: 'check that nothing else writes to the token store' };
      return { ...base, status: 'ok', message: 'a sealed value was written, read back and deleted' };
    } finally {
      await store.close();
    }
  } catch (error) {
    const fix = connected.store.kind === 'directory' ? 'give the gateway a directory of its own, writable by it alone (MCP_AUTH_TOKEN_STORE)' : 'check MCP_AUTH_REDIS_URL and that this host can reach Redis';
    return { ...base, status: 'fail', message: `the token store cannot be used: ${explainFailure(error, 300)}`, fix };
  }
}

/** The sign-in issuer's metadata: the authorization and token endpoints the connect page uses. */
async function checkLogin(issuer: string, origin: string, timeoutMs: number): Promise<CheckResult> {
  const base = { check: 'connected accounts', subject: `sign-in at ${issuer}` } as const;
  const redirect = connectCallbackUrl(origin);
  try {
    const metadata = await createIssuerDiscovery({ issuer, timeoutMs })();
    if (metadata.authorization_endpoint === undefined || metadata.token_endpoint === undefined) {
      return { ...base, status: 'fail', message: 'the issuer publishes no authorization_endpoint or token_endpoint', fix: 'name an OpenID Connect issuer (MCP_AUTH_LOGIN_ISSUER)' };
    }
    return { ...base, status: 'ok', message: `the connect page signs users in here; the login client (MCP_AUTH_LOGIN_CLIENT_ID) must have the redirect URI ${redirect} (the sign-in's own; each upstream has another)` };
  } catch (error) {
    return { ...base, status: 'fail', message: `the issuer's metadata could not be loaded: ${explainFailure(error, 300)}`, fix: 'check MCP_AUTH_LOGIN_ISSUER (or MCP_AUTH_ISSUER) and that this host reaches it' };
  }
}

/**
 * The upstream's authorization server, and how the gateway will be its client, with the redirect URI of this server
 * alone (RFC 9700 §4.4 mix-up defence) that a registered client must have.
 */
async function checkUpstreamServer({ server, auth }: ConnectedUpstream, origin: string, timeoutMs: number): Promise<CheckResult> {
  const base = { check: 'connected accounts', subject: server === '' ? `upstream ${auth.upstream}` : `server ${server}` } as const;
  try {
    const target = createUpstreamTargetResolver({
      upstream: new URL(auth.upstream),
      // The user's authorization comes from the upstream's own server, never the gateway's issuer.
          gatewayIssuers: [],
      timeoutMs,
      ...(auth.issuer !== undefined ? { issuer: auth.issuer } : {}),
      ...(auth.resource !== undefined ? { resource: auth.resource } : {}),
    });
    const { metadata, target: found } = await createUpstreamAuthorizationServerDiscovery({ target, timeoutMs })();
    const client =
      auth.clientId !== undefined
        ? `the registered client ${auth.clientId}, which must have the redirect URI ${upstreamCallbackUrl(origin, server)}`
        : metadata.client_id_metadata_document_supported === true
          ? `the client metadata document the gateway serves (on https), redirect URI ${upstreamCallbackUrl(origin, server)}`
          : metadata.registration_endpoint !== undefined
            ? `a client it registers itself (RFC 7591), redirect URI ${upstreamCallbackUrl(origin, server)}`
            : undefined;
    if (client === undefined) {
      return { ...base, status: 'fail', message: `${found.issuer} offers no dynamic registration and no client metadata documents`, fix: 'register a client there and set its id (MCP_AUTH_UPSTREAM_CLIENT_ID, or auth.clientId)' };
    }
    return { ...base, status: 'ok', message: `users authorize at ${found.issuer} for ${found.resource}, with ${client}` };
  } catch (error) {
    return { ...base, status: 'fail', message: `its authorization server could not be found or used: ${explainFailure(error, 300)}`, fix: 'check the upstream URL, or set MCP_AUTH_UPSTREAM_ISSUER (auth.issuer)' };
  }
}
