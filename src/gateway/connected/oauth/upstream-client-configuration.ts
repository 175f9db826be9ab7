/**
 * The openid-client configuration of the gateway's client at an upstream's authorization server: its metadata,
 * the client id and how the client authenticates, every request bounded by a timeout.
 */
import * as client from 'openid-client';
import { createTimeoutFetch, isLoopbackHttpUrl, toOpenIdClientTimeout } from '../../../core/token/issuer-discovery.js';

/** How the gateway authenticates at the token endpoint (RFC 7591 §2 `token_endpoint_auth_method`). */
export type ClientAuthMethod = 'client_secret_basic' | 'client_secret_post' | 'none';

/** A client of the gateway at one authorization server. The secret is never logged. */
export interface RegisteredClient {
  /** The authorization server's issuer. */
  readonly issuer: string;
  readonly clientId: string;
  /** For `client_secret_basic` and `client_secret_post`. */
  readonly clientSecret?: string;
  readonly authMethod: ClientAuthMethod;
  /** How the client came to be. */
  readonly kind: 'pre-registered' | 'metadata-document' | 'dynamic';
  /** The redirect URI it was registered with. */
  readonly redirectUri: string;
  /** RFC 7591 `client_secret_expires_at`: seconds since the epoch, absent or 0 for never. */
  readonly secretExpiresAt?: number;
}

/**
 * Builds the configuration: `customFetch` aborting after `timeoutMs` milliseconds, openid-client's own timeout as
 * its whole-second upper bound, and plain http allowed only for a loopback issuer (development).
 */
export function upstreamClientConfiguration(metadata: client.ServerMetadata, registered: RegisteredClient, timeoutMs: number): client.Configuration {
  const auth =
    registered.authMethod === 'none'
      ? client.None()
      : registered.authMethod === 'client_secret_post'
        ? client.ClientSecretPost(registered.clientSecret)
        : client.ClientSecretBasic(registered.clientSecret);
  const config = new client.Configuration(metadata, registered.clientId, undefined, auth);
  config[client.customFetch] = createTimeoutFetch(timeoutMs, 'token');
  config.timeout = toOpenIdClientTimeout(timeoutMs);
  if (isLoopbackHttpUrl(new URL(metadata.issuer))) client.allowInsecureRequests(config);
  return config;
}

/**
 * The method for a client holding a secret: `client_secret_basic` (the RFC 8414 default), or
 * `client_secret_post` when the server lists only that.
 */
export function secretAuthMethod(metadata: client.ServerMetadata): 'client_secret_basic' | 'client_secret_post' {
  const methods = metadata.token_endpoint_auth_methods_supported;
  return methods && !methods.includes('client_secret_basic') && methods.includes('client_secret_post') ? 'client_secret_post' : 'client_secret_basic';
}
