/**
 * `check` for connected accounts: the token store can be written and read back sealed, the connections it holds open
 * with the configured key (a few sampled), the gateway's sign-in issuer has what the connect page needs, and each
 * connected upstream names an authorization server the gateway can be a client of. The login client and each
 * pre-registered upstream client are shown to their token endpoint with a code that was never issued
 * (`checkClientAtTokenEndpoint`): a refusal of the client itself is a failure. What no check sees: the redirect URIs
 * registered at the authorization servers. Nothing is left in the store; no user is signed in and no token is issued.
 */
import { randomBytes } from 'node:crypto';
import { explainFailure } from '../../../core/kernel/explain-failure.js';
import { createIssuerDiscovery } from '../../../core/token/issuer-discovery.js';
import type { GatewayConfig } from '../../config/gateway-config.js';
import { clientKindFor, type ClientKind } from '../../connected/oauth/client-registration.js';
import type { ServerMetadata } from 'openid-client';
import type { ConnectedAccountsConfig } from '../../config/connected-accounts-config.js';
import { connectCallbackUrl, upstreamCallbackUrl } from '../../connected/oauth/gateway-client-urls.js';
import { checkClientAtTokenEndpoint } from '../../connected/oauth/token-endpoint-client-check.js';
import { secretAuthMethod, upstreamClientConfiguration, type RegisteredClient } from '../../connected/oauth/upstream-client-configuration.js';
import { loginClientConfiguration } from '../../connected/pages/gateway-login.js';
import { createUpstreamAuthorizationServerDiscovery } from '../../connected/oauth/upstream-authorization-server.js';
import { connectedUpstreamsOf, connectedUpstreamTarget, openConnectionStore, type ConnectedUpstream } from '../../connected/open-connections.js';
import { probeStoredConnections, STORE_KEY_ROTATION_HINT, STORED_CONNECTIONS_DO_NOT_OPEN } from '../../connected/store/stored-connections-probe.js';
import type { CheckResult } from './check-result.js';

/** The lines of connected accounts, in order: the store, the sign-in, then each connected upstream; none without any. */
export async function checkConnectedAccounts(config: GatewayConfig, resource: string, timeoutMs: number): Promise<CheckResult[]> {
  const connected = config.connectedAccounts;
  if (connected === undefined) return [];
  const origin = new URL(resource).origin;
  const upstreams = connectedUpstreamsOf(config);
  const [store, login, ...servers] = await Promise.all([
    checkStore(config, resource),
    checkLogin(connected.login, origin, timeoutMs),
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
      // A key other than the one the stored connections were sealed with writes and reads its own values well.
      const stored = await probeStoredConnections(store, sealer);
      if (stored !== undefined && stored.sampled > 0 && stored.opened === 0) return { ...base, status: 'fail', message: STORED_CONNECTIONS_DO_NOT_OPEN, fix: STORE_KEY_ROTATION_HINT };
      const sampled = stored === undefined ? '' : stored.sampled === 0 ? '; it holds no connection yet' : '; its connections open with this key';
      return { ...base, status: 'ok', message: `a sealed value was written, read back and deleted${sampled}` };
    } finally {
      await store.close();
    }
  } catch (error) {
    const fix = connected.store.kind === 'directory' ? 'give the gateway a directory of its own, writable by it alone (MCP_AUTH_TOKEN_STORE)' : 'check MCP_AUTH_REDIS_URL and that this host can reach Redis';
    return { ...base, status: 'fail', message: `the token store cannot be used: ${explainFailure(error, 300)}`, fix };
  }
}

/**
 * The sign-in issuer's metadata (the authorization and token endpoints the connect page uses), and whether its token
 * endpoint accepts the login client: a wrong id or secret would otherwise show first as the issuer's own error page.
 */
async function checkLogin(login: ConnectedAccountsConfig['login'], origin: string, timeoutMs: number): Promise<CheckResult> {
  const { issuer } = login;
  const base = { check: 'connected accounts', subject: `sign-in at ${issuer}` } as const;
  const redirect = connectCallbackUrl(origin);
  let metadata;
  try {
    metadata = await createIssuerDiscovery({ issuer, timeoutMs })();
  } catch (error) {
    return { ...base, status: 'fail', message: `the issuer's metadata could not be loaded: ${explainFailure(error, 300)}`, fix: 'check MCP_AUTH_LOGIN_ISSUER (or MCP_AUTH_ISSUER) and that this host reaches it' };
  }
  if (metadata.authorization_endpoint === undefined || metadata.token_endpoint === undefined) {
    return { ...base, status: 'fail', message: 'the issuer publishes no authorization_endpoint or token_endpoint', fix: 'name an OpenID Connect issuer (MCP_AUTH_LOGIN_ISSUER)' };
  }
  const checked = await checkClientAtTokenEndpoint(loginClientConfiguration(metadata, login, timeoutMs), redirect);
  const redirectText = `it must have the redirect URI ${redirect} (the sign-in's own; each upstream has another), which check cannot see`;
  const client = `the login client ${login.clientId} (MCP_AUTH_LOGIN_CLIENT_ID)`;
  if (checked.outcome === 'refused') {
    const settings = login.clientSecret === undefined ? 'MCP_AUTH_LOGIN_CLIENT_ID (a public client: no secret)' : 'MCP_AUTH_LOGIN_CLIENT_ID and MCP_AUTH_LOGIN_CLIENT_SECRET (or its file)';
    return { ...base, status: 'fail', message: `the issuer's token endpoint refuses ${client}: ${checked.error}`, fix: clientRefusalFix(checked.error, settings, login.clientId, issuer) };
  }
  if (checked.outcome === 'unknown') {
    return { ...base, status: 'warn', message: `the connect page signs users in here; whether the issuer accepts ${client} could not be told (${checked.detail}); ${redirectText}`, fix: `check that ${login.clientId} is registered at ${issuer}` };
  }
  return { ...base, status: 'ok', message: `the connect page signs users in here; the issuer's token endpoint accepts ${client}; ${redirectText}` };
}

/** What to do when an authorization server refuses one of the gateway's clients with `error`. */
function clientRefusalFix(error: 'invalid_client' | 'unauthorized_client', settings: string, clientId: string, issuer: string): string {
  return error === 'invalid_client' ? `check ${settings} against the client registered at ${issuer}` : `allow the authorization code grant for the client ${clientId} at ${issuer}`;
}

/** How each kind of client is described: the registered client's id, and the redirect URI it must have. */
const CLIENT_TEXT: Readonly<Record<ClientKind, (clientId: string, redirect: string) => string>> = {
  'pre-registered': (clientId, redirect) => `the registered client ${clientId}, which must have the redirect URI ${redirect}`,
  'metadata-document': (_, redirect) => `the client metadata document the gateway serves (on https), redirect URI ${redirect}`,
  dynamic: (_, redirect) => `a client it registers itself (RFC 7591), redirect URI ${redirect}`,
};

/**
 * The refusal of a pre-registered client by its authorization server's token endpoint (wrong id or secret, or the
 * code grant not allowed), in words with its fix; undefined when it accepts the client or cannot tell.
 */
async function registeredClientRefusal(server: string, auth: ConnectedUpstream['auth'], metadata: ServerMetadata, redirect: string, timeoutMs: number): Promise<{ message: string; fix: string } | undefined> {
  const registered: RegisteredClient = {
    issuer: metadata.issuer,
    clientId: auth.clientId!,
    authMethod: auth.clientSecret === undefined ? 'none' : secretAuthMethod(metadata),
    kind: 'pre-registered',
    redirectUri: redirect,
    ...(auth.clientSecret !== undefined ? { clientSecret: auth.clientSecret } : {}),
  };
  const checked = await checkClientAtTokenEndpoint(upstreamClientConfiguration(metadata, registered, timeoutMs), redirect);
  if (checked.outcome !== 'refused') return undefined;
  const settings =
    server === ''
      ? `MCP_AUTH_UPSTREAM_CLIENT_ID${auth.clientSecret === undefined ? ' (a public client: no secret)' : ' and MCP_AUTH_UPSTREAM_CLIENT_SECRET (or its file)'}`
      : `servers.${server}.auth.clientId${auth.clientSecret === undefined ? ' (a public client: no secret)' : ' and its secret (auth.clientSecretEnv or auth.clientSecretFile)'}`;
  return { message: `its token endpoint refuses that client: ${checked.error}`, fix: clientRefusalFix(checked.error, settings, registered.clientId, metadata.issuer) };
}

/** The configured scopes (space-separated) that `supported` does not list; none when the server lists none. */
function unlistedScopes(scope: string | undefined, supported: unknown): string[] {
  if (scope === undefined || !Array.isArray(supported)) return [];
  return scope.split(' ').filter((token) => token !== '' && !supported.includes(token));
}

/**
 * The upstream's authorization server, and how the gateway will be its client, with the redirect URI of this server
 * alone (RFC 9700 §4.4 mix-up defence) that a registered client must have.
 */
async function checkUpstreamServer({ server, auth }: ConnectedUpstream, origin: string, timeoutMs: number): Promise<CheckResult> {
  const base = { check: 'connected accounts', subject: server === '' ? `upstream ${auth.upstream}` : `server ${server}` } as const;
  try {
    const target = connectedUpstreamTarget(auth, timeoutMs);
    const { metadata, target: found } = await createUpstreamAuthorizationServerDiscovery({ target, timeoutMs })();
    // The rule registration follows, so that the line names the client the gateway will really be.
    const kind = clientKindFor(metadata, { clientId: auth.clientId, gatewayOrigin: origin });
    const redirect = upstreamCallbackUrl(origin, server);
    if (kind === 'dynamic' && metadata.registration_endpoint === undefined) {
      const documents = metadata.client_id_metadata_document_supported === true ? ' (its client metadata documents need the gateway on https)' : '';
      return { ...base, status: 'fail', message: `${found.issuer} offers no dynamic registration and no client metadata documents${documents}`, fix: 'register a client there and set its id (MCP_AUTH_UPSTREAM_CLIENT_ID, or auth.clientId)' };
    }
    const client = CLIENT_TEXT[kind](auth.clientId ?? '', redirect);
    const message = `users authorize at ${found.issuer} for ${found.resource}, with ${client}`;
    if (kind === 'pre-registered') {
      const refused = await registeredClientRefusal(server, auth, metadata, redirect, timeoutMs);
      if (refused !== undefined) return { ...base, status: 'fail', message: `${message}; ${refused.message}`, fix: refused.fix };
    }
    const unlisted = unlistedScopes(auth.scope, metadata.scopes_supported);
    if (unlisted.length > 0) {
      const setting = server === '' ? 'MCP_AUTH_UPSTREAM_SCOPE' : `servers.${server}.auth.scope`;
      return {
        ...base,
        status: 'warn',
        message: `${message}; its scopes_supported does not list ${unlisted.join(', ')}, which ${setting} asks for`,
        fix: `ask only for scopes ${found.issuer} lists (${setting}), or check their spelling: an unknown scope may be refused or dropped`,
      };
    }
    return { ...base, status: 'ok', message };
  } catch (error) {
    return { ...base, status: 'fail', message: `its authorization server could not be found or used: ${explainFailure(error, 300)}`, fix: 'check the upstream URL, or set MCP_AUTH_UPSTREAM_ISSUER (auth.issuer)' };
  }
}
