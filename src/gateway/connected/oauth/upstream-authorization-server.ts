/**
 * Which authorization server issues tokens for an upstream, and its metadata: the upstream's RFC 9728 metadata
 * (or the configured issuer and resource) names the server, whose RFC 8414 metadata is then read and checked for
 * what the connect flow needs.
 */
import type * as client from 'openid-client';
import { ConfigurationError } from '../../../core/kernel/errors.js';
import { assertSecureUrl, createIssuerDiscovery, type DiscoverIssuer } from '../../../core/token/issuer-discovery.js';
import type { UpstreamTarget } from '../../upstream-auth/upstream-resource-metadata.js';
import { UpstreamAuthorizationError } from './upstream-authorization-error.js';

/** An upstream's authorization server, as discovered and checked. */
export interface UpstreamAuthorizationServer {
  /** RFC 8414 metadata; `authorization_endpoint` and `token_endpoint` are present and secure. */
  readonly metadata: client.ServerMetadata;
  /** The issuer and the upstream's resource identifier (RFC 8707), with the upstream's `scopes_supported`. */
  readonly target: UpstreamTarget;
}

/** Options of {@link createUpstreamAuthorizationServerDiscovery}. */
export interface UpstreamAuthorizationServerOptions {
  /** The upstream's target: `createUpstreamTargetResolver` (RFC 9728 metadata, a 401 challenge, or settings). */
  target: () => Promise<UpstreamTarget>;
  /** Timeout of each metadata request, in milliseconds. */
  timeoutMs: number;
  /** Wait after a failed discovery before the next attempt, in milliseconds. Default: that of `createIssuerDiscovery` (5 s). */
  retryMs?: number;
}

/**
 * Returns the upstream's authorization server, discovered on first use and memoized (failures are retried after
 * `retryMs`, as the guard's own discovery is).
 *
 * @throws UpstreamAuthorizationError `unavailable` when the upstream or its authorization server cannot be
 *   reached, `unsupported` when the server is unfit (see {@link checkAuthorizationServerMetadata}) or insecure.
 * @example
 * const discover = createUpstreamAuthorizationServerDiscovery({ target: createUpstreamTargetResolver({ upstream, gatewayIssuers: [], timeoutMs: 5000 }), timeoutMs: 5000 });
 * const { metadata, target } = await discover();
 */
export function createUpstreamAuthorizationServerDiscovery(options: UpstreamAuthorizationServerOptions): () => Promise<UpstreamAuthorizationServer> {
  const discoveries = new Map<string, DiscoverIssuer>();
  return async () => {
    let target: UpstreamTarget;
    let metadata: client.ServerMetadata;
    try {
      target = await options.target();
      assertSecureUrl('issuer', target.issuer);
      let discover = discoveries.get(target.issuer);
      if (discover === undefined) {
        discover = createIssuerDiscovery({ issuer: target.issuer, timeoutMs: options.timeoutMs, ...(options.retryMs !== undefined ? { retryMs: options.retryMs } : {}) });
        // One target per upstream, memoized by the resolver: the map holds one entry, two after a change.
        if (discoveries.size >= 4) discoveries.clear();
        discoveries.set(target.issuer, discover);
      }
      metadata = await discover();
    } catch (error) {
      if (error instanceof ConfigurationError) throw new UpstreamAuthorizationError('unsupported', "the upstream's authorization server is not at a secure URL", error);
      throw new UpstreamAuthorizationError('unavailable', "the upstream's authorization server metadata could not be read", error instanceof Error ? error : undefined);
    }
    checkAuthorizationServerMetadata(metadata);
    return { metadata, target };
  };
}

/**
 * Checks that an authorization server can run the connect flow: an `authorization_endpoint` and a
 * `token_endpoint` (RFC 8414 §2), every endpoint the gateway uses on https (http on loopback only), and PKCE
 * with S256: MCP 2025-11-25 requires it, so a server listing `code_challenge_methods_supported` without `S256`
 * is refused. A server that lists none is tried (RFC 8414 makes the list optional; the code exchange fails if it
 * ignores PKCE).
 *
 * @throws UpstreamAuthorizationError `unsupported`.
 */
export function checkAuthorizationServerMetadata(metadata: client.ServerMetadata): void {
  for (const endpoint of ['authorization_endpoint', 'token_endpoint'] as const) {
    if (typeof metadata[endpoint] !== 'string') throw new UpstreamAuthorizationError('unsupported', `the upstream's authorization server publishes no ${endpoint}`);
  }
  const methods = metadata.code_challenge_methods_supported;
  if (methods !== undefined && !methods.includes('S256')) {
    throw new UpstreamAuthorizationError('unsupported', "the upstream's authorization server does not support PKCE with S256");
  }
  for (const endpoint of ['authorization_endpoint', 'token_endpoint', 'registration_endpoint', 'revocation_endpoint'] as const) {
    const url = metadata[endpoint];
    if (url === undefined) continue;
    try {
      assertSecureUrl(endpoint, url);
    } catch (error) {
      throw new UpstreamAuthorizationError('unsupported', `the upstream's authorization server has an insecure ${endpoint}`, error as Error);
    }
  }
}
