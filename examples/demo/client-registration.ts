/**
 * Step 4 of the demo client's flow when no client id is configured: RFC 7591 dynamic registration of a
 * public native client (no secret, PKCE instead) with its loopback redirect URI.
 *
 * @module
 */
import * as oidc from 'openid-client';
import { isLoopbackHttpUrl } from './resource-url.js';
import { redactToken, type EmitTranscript } from './transcript.js';

/** What to register besides the redirect URI. */
export interface PublicClientRegistration {
  /** `client_name`. */
  clientName: string;
  /** The first challenge's scope, registered as the client's `scope` when known. */
  scope?: string;
}

/** Registers a public native client and returns the openid-client configuration for its client id. */
export async function registerPublicClient(
  server: oidc.ServerMetadata,
  redirectUri: string,
  registration: PublicClientRegistration,
  emit: EmitTranscript,
): Promise<oidc.Configuration> {
  if (!server.registration_endpoint) {
    throw new Error('the authorization server offers no dynamic registration; pass a client id');
  }
  const metadata = {
    client_name: registration.clientName,
    application_type: 'native',
    redirect_uris: [redirectUri],
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
    token_endpoint_auth_method: 'none',
    // Like the MCP TypeScript SDK 1.x client: register with the first challenge's scope.
    ...(registration.scope ? { scope: registration.scope } : {}),
  };
  const response = await fetch(server.registration_endpoint, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json' },
    body: JSON.stringify(metadata),
  });
  const registered = (await response.json()) as Record<string, unknown> & { client_id?: string };
  if (response.status !== 201 || typeof registered.client_id !== 'string') {
    throw new Error(`dynamic client registration failed: HTTP ${response.status} ${JSON.stringify(registered)}`);
  }
  const { client_secret: secret, registration_access_token: rat, ...shown } = registered;
  emit('registration', `registered client ${registered.client_id}`, {
    ...shown,
    ...(secret ? { client_secret: redactToken(String(secret)) } : {}),
    ...(rat ? { registration_access_token: redactToken(String(rat)) } : {}),
  });
  const config = new oidc.Configuration(server, registered.client_id, undefined, oidc.None());
  if (isLoopbackHttpUrl(server.issuer)) oidc.allowInsecureRequests(config);
  return config;
}
