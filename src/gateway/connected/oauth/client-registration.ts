/**
 * The gateway's client at an upstream's authorization server, in MCP's order of preference: a client the operator
 * registered; a Client ID Metadata Document the gateway serves itself, where the server accepts them; RFC 7591
 * dynamic registration, kept sealed in the token store so that a restart or another replica reuses it.
 */
import { createHash } from 'node:crypto';
import * as client from 'openid-client';
import { formatLogLine, writeSafely, type LineSink } from '../../../core/kernel/log-line.js';
import { createTimeoutFetch, isLoopbackHttpUrl, toOpenIdClientTimeout } from '../../../core/token/issuer-discovery.js';
import { deleteIfUnchanged } from '../store/delete-if-unchanged.js';
import type { TokenStore } from '../store/token-store.js';
import { clientMetadataDocumentUrl, serverPublicName, upstreamCallbackUrl } from './gateway-client-urls.js';
import type { Sealer } from './sealer.js';
import { UpstreamAuthorizationError, upstreamAuthorizationFailure } from './upstream-authorization-error.js';
import type { UpstreamAuthorizationServer } from './upstream-authorization-server.js';
import { secretAuthMethod, type ClientAuthMethod, type RegisteredClient } from './upstream-client-configuration.js';

/** Options of {@link createClientRegistration}. */
export interface ClientRegistrationOptions {
  /** The gateway's public origin; the redirect URI is `<origin>/connect/callback/<server>` (`upstreamCallbackUrl`). */
  gatewayOrigin: string | URL;
  /** The configuration file's server name, `""` for the single upstream (names the metadata document). */
  server: string;
  /** `MCP_AUTH_UPSTREAM_CLIENT_ID`: a client the operator registered. */
  clientId?: string;
  /** Its secret; without one the client is public (`none`, PKCE only). Never logged. */
  clientSecret?: string;
  /** `client_name` registered or published. Default `mcp-oauth-guard`. */
  clientName?: string;
  /** Where a dynamic registration is kept, sealed, per issuer and server ({@link registeredClientKey}). */
  store: TokenStore;
  sealer: Sealer;
  /** Timeout of the registration request, in milliseconds. */
  timeoutMs: number;
  /**
   * Receives one log line (`formatLogLine`) when a dynamic registration kept in memory is dropped because its secret
   * has expired: `{"time":…,"event":"client_registration_expired","server":…,"issuer":…}`, never the secret.
   */
  log?: LineSink;
  /** Clock for the secret's expiry, in milliseconds, e.g. a fake one in tests. Default `Date.now`. */
  now?: () => number;
}

/**
 * Whether `registered` has a secret that has expired at `at`. Not earlier: sign-ins begun and connections made with
 * it keep working until then (a new client id would refuse their codes and drop their connections), and a server
 * giving secrets a short life is not sent a registration per request.
 */
function secretExpiring(registered: RegisteredClient, at: number): boolean {
  return registered.secretExpiresAt !== undefined && registered.secretExpiresAt > 0 && registered.secretExpiresAt * 1000 <= at;
}

/**
 * The store key of the dynamic registration at `issuer` for `server` (`""` for the single upstream). Each server has
 * its own redirect URI, hence a client of its own (the mix-up defence), so two servers behind one authorization
 * server keep one registration each. A digest, so that keys have one short shape.
 *
 * @example registeredClientKey('https://as.example.com', 'wiki'); // 'client:' + 43 base64url characters
 */
export function registeredClientKey(issuer: string, server: string): string {
  return `client:${createHash('sha256').update(`${issuer}\n${server}`).digest('base64url')}`;
}

/**
 * The key registrations were kept under by earlier versions, per issuer alone: read only to take over a registration
 * made for this server's redirect URI, so that an upgrade keeps the connections made with it.
 */
export function issuerOnlyClientKey(issuer: string): string {
  return `client:${createHash('sha256').update(issuer).digest('base64url')}`;
}

/** The gateway's client at an upstream's authorization servers; see {@link createClientRegistration}. */
export interface ClientRegistration {
  /** The client at `server` (see {@link createClientRegistration} for the order). */
  client(server: UpstreamAuthorizationServer): Promise<RegisteredClient>;
  /**
   * The authorization server refused `client` itself (`invalid_client`): when it is a dynamic registration, it is
   * forgotten here and deleted from the store (unless another replica replaced it meanwhile), so that the next
   * call registers afresh. A configured client or a metadata document is kept: registering again would not help.
   */
  forget(client: RegisteredClient): Promise<void>;
}

/** Which client the gateway is at an authorization server; see {@link clientKindFor}. */
export type ClientKind = RegisteredClient['kind'];

/**
 * Which kind of client the gateway is at the authorization server of `metadata`, in MCP's order of preference: the
 * one rule that registration follows and `check` reports. `dynamic` also when the server offers no
 * `registration_endpoint`, where registration then fails as `unsupported` (unless a stored registration is reused).
 * A metadata document needs an https gateway: the server fetches the document from the gateway's origin.
 *
 * @example
 * clientKindFor({ issuer, client_id_metadata_document_supported: true }, { gatewayOrigin: 'http://127.0.0.1:8080' }); // 'dynamic'
 */
export function clientKindFor(
  metadata: Readonly<Record<string, unknown>>,
  options: { readonly clientId?: string | undefined; readonly gatewayOrigin: string | URL },
): ClientKind {
  if (options.clientId !== undefined) return 'pre-registered';
  if (metadata.client_id_metadata_document_supported === true && new URL(options.gatewayOrigin).protocol === 'https:') return 'metadata-document';
  return 'dynamic';
}

/**
 * Returns the gateway's client at an authorization server, in this order ({@link clientKindFor}):
 * 1. `clientId` configured: that client, confidential (`client_secret_basic`, or `client_secret_post` when the
 *    server lists only that) with `clientSecret`, public (`none`) without;
 * 2. the server's metadata says `client_id_metadata_document_supported: true` and the gateway's origin is https:
 *    the document URL as client id (see `clientMetadataDocument`), a public client;
 * 3. RFC 7591 dynamic registration at its `registration_endpoint`: a registration kept in the store is reused
 *    while it is for the same redirect URI and its secret has not expired; otherwise the gateway registers
 *    (confidential when the server takes a secret method) and writes it with compare-and-set, so that replicas
 *    registering at once settle on one.
 * The answer is memoized per issuer; a failure is not. A memoized dynamic registration whose secret has expired
 * (RFC 7591 `client_secret_expires_at`) is treated as gone before it is used: the gateway
 * registers again and logs one line, rather than waiting for the server to refuse it with `invalid_client`.
 *
 * @throws (from `client`) UpstreamAuthorizationError `unsupported` when none applies, `refused:<error>` when
 *   registration is refused, `unavailable` when the server cannot be reached.
 */
export function createClientRegistration(options: ClientRegistrationOptions): ClientRegistration {
  const redirectUri = upstreamCallbackUrl(options.gatewayOrigin, options.server);
  const known = new Map<string, Promise<RegisteredClient>>();
  const now = options.now ?? Date.now;
  const choose = async ({ metadata }: UpstreamAuthorizationServer): Promise<RegisteredClient> => {
    const issuer = metadata.issuer;
    const kind = clientKindFor(metadata, options);
    if (kind === 'pre-registered') {
      const authMethod: ClientAuthMethod = options.clientSecret === undefined ? 'none' : secretAuthMethod(metadata);
      return { issuer, clientId: options.clientId!, authMethod, kind, redirectUri, ...(options.clientSecret !== undefined ? { clientSecret: options.clientSecret } : {}) };
    }
    if (kind === 'metadata-document') {
      return { issuer, clientId: clientMetadataDocumentUrl(options.gatewayOrigin, options.server), authMethod: 'none', kind, redirectUri };
    }
    return storedOrNewRegistration(options, metadata, redirectUri, now);
  };
  const remember = (issuer: string, pending: Promise<RegisteredClient>): Promise<RegisteredClient> => {
    pending.catch(() => known.get(issuer) === pending && known.delete(issuer));
    if (known.size >= 4) known.clear();
    known.set(issuer, pending);
    return pending;
  };
  return {
    async client(server) {
      const issuer = server.metadata.issuer;
      const pending = known.get(issuer);
      if (pending === undefined) return remember(issuer, choose(server));
      const kept = await pending.catch(() => undefined);
      if (kept === undefined || !secretExpiring(kept, now())) return pending;
      // Concurrent callers that found the same expiring one share one new registration.
      const current = known.get(issuer);
      if (current !== undefined && current !== pending) return current;
      if (options.log) writeSafely(options.log, formatLogLine('client_registration_expired', { server: serverPublicName(options.server), issuer }));
      return remember(issuer, choose(server));
    },
    async forget(refused) {
      if (refused.kind !== 'dynamic') return;
      const pending = known.get(refused.issuer);
      if (pending !== undefined && (await pending.catch(() => undefined))?.clientId === refused.clientId) known.delete(refused.issuer);
      // The issuer-only key too: a refused client kept there must not be taken over again.
      for (const key of [registeredClientKey(refused.issuer, options.server), issuerOnlyClientKey(refused.issuer)]) {
        const { sealed, stored } = await readRegistration(options, key);
        if (stored?.clientId === refused.clientId) await deleteIfUnchanged(options.store, key, sealed!);
      }
    },
  };
}

/** The registration sealed under `key`, and the sealed string (the `expected` of a later compare-and-set). */
async function readRegistration(options: ClientRegistrationOptions, key: string): Promise<{ sealed: string | undefined; stored: RegisteredClient | undefined }> {
  const sealed = await options.store.get(key);
  return { sealed, stored: sealed === undefined ? undefined : await options.sealer.open<RegisteredClient>(key, sealed) };
}

/**
 * A dynamic registration from the store when still usable, else a new one written with compare-and-set. Where this
 * server has none yet, one kept under the issuer alone by an earlier version is taken over when it names this
 * server's redirect URI (it is copied; the old key is left to replicas not yet upgraded).
 */
async function storedOrNewRegistration(options: ClientRegistrationOptions, metadata: client.ServerMetadata, redirectUri: string, now: () => number): Promise<RegisteredClient> {
  const key = registeredClientKey(metadata.issuer, options.server);
  const usable = (stored: RegisteredClient | undefined): stored is RegisteredClient =>
    stored !== undefined && stored.issuer === metadata.issuer && stored.redirectUri === redirectUri && !secretExpiring(stored, now());
  const before = await readRegistration(options, key);
  if (usable(before.stored)) return before.stored;
  const earlier = before.sealed === undefined ? (await readRegistration(options, issuerOnlyClientKey(metadata.issuer))).stored : undefined;
  const registered = usable(earlier) ? earlier : await registerDynamically(options, metadata, redirectUri);
  if (await options.store.compareAndSet(key, before.sealed, await options.sealer.seal(key, registered))) return registered;
  // Another replica registered meanwhile: use its client, so that every replica's tokens belong to one.
  const after = await readRegistration(options, key);
  return usable(after.stored) ? after.stored : registered;
}

/** RFC 7591 §3.1 registration through openid-client, with the metadata already discovered and checked. */
async function registerDynamically(options: ClientRegistrationOptions, metadata: client.ServerMetadata, redirectUri: string): Promise<RegisteredClient> {
  if (metadata.registration_endpoint === undefined) {
    throw new UpstreamAuthorizationError('unsupported', "no client id is configured and the upstream's authorization server offers neither client metadata documents nor dynamic registration");
  }
  const methods = metadata.token_endpoint_auth_methods_supported;
  const asked: ClientAuthMethod = methods === undefined || methods.includes('client_secret_basic') || methods.includes('client_secret_post') ? secretAuthMethod(metadata) : 'none';
  const issuer = new URL(metadata.issuer);
  const timeoutFetch = createTimeoutFetch(options.timeoutMs, 'token');
  // openid-client discovers before registering; it is answered with the metadata already read and checked,
  // rather than a second request that might find another document.
  const fetchWithKnownMetadata: client.CustomFetch = (url, init) =>
    init.method === 'GET' && new URL(url).origin === issuer.origin && new URL(url).pathname.startsWith('/.well-known/oauth-authorization-server')
      ? Promise.resolve(Response.json(metadata))
      : timeoutFetch(url, init);
  let config: client.Configuration;
  try {
    config = await client.dynamicClientRegistration(
      issuer,
      {
        client_name: options.clientName ?? 'mcp-oauth-guard',
        redirect_uris: [redirectUri],
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
        token_endpoint_auth_method: asked,
      },
      undefined,
      { algorithm: 'oauth2', [client.customFetch]: fetchWithKnownMetadata, timeout: toOpenIdClientTimeout(options.timeoutMs), execute: isLoopbackHttpUrl(issuer) ? [client.allowInsecureRequests] : [] },
    );
  } catch (error) {
    throw upstreamAuthorizationFailure(error, 'the registration');
  }
  const answer = config.clientMetadata();
  const secret = typeof answer.client_secret === 'string' ? answer.client_secret : undefined;
  const given = answer.token_endpoint_auth_method;
  const authMethod: ClientAuthMethod = secret === undefined ? 'none' : given === 'client_secret_post' || given === 'client_secret_basic' ? given : secretAuthMethod(metadata);
  const expiresAt = typeof answer.client_secret_expires_at === 'number' ? answer.client_secret_expires_at : undefined;
  return {
    issuer: metadata.issuer,
    clientId: answer.client_id,
    authMethod,
    kind: 'dynamic',
    redirectUri,
    ...(secret !== undefined ? { clientSecret: secret } : {}),
    ...(expiresAt ? { secretExpiresAt: expiresAt } : {}),
  };
}
