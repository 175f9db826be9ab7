import { checkNumber, checkStringList } from './settings.js';
import type { ServerMetadata } from 'openid-client';
import type { AuthInfo } from './auth-info.js';
import { buildAuthInfo } from './auth-info-from-claims.js';
import { AuthorizationServerUnavailableError, ConfigurationError, InvalidTokenError } from './errors.js';
import { DEFAULT_INTROSPECTION_CACHE_TTL_SECONDS, createIntrospectionVerifier, resolveIntrospectionEndpoint, type IntrospectToken } from './introspection-verifier.js';
import { assertSecureUrl, createIssuerDiscovery, type DiscoverIssuer } from './issuer-discovery.js';
import { createJwtVerifier, resolveJwtAlgorithms } from './jwt-verifier.js';
import { createTokenCache, type TokenCache } from './token-cache.js';
import type { TokenVerifier, TokenVerifierOptions } from './token-verifier.js';

/** Default {@link TokenVerifierOptions.clockToleranceSeconds}, in seconds. */
export const DEFAULT_CLOCK_TOLERANCE_SECONDS = 5;
/** Default {@link TokenVerifierOptions.httpTimeoutMs}, in milliseconds. */
export const DEFAULT_HTTP_TIMEOUT_MS = 5_000;
/** Default {@link TokenVerifierOptions.jwksCooldownMs}, in milliseconds. */
export const DEFAULT_JWKS_COOLDOWN_MS = 30_000;
/** Default {@link TokenVerifierOptions.jwksCacheMaxAgeMs}, in milliseconds. */
export const DEFAULT_JWKS_CACHE_MAX_AGE_MS = 600_000;

/**
 * Creates the {@link TokenVerifier} of a resource server: JWT access tokens (RFC 9068) are checked locally
 * against the issuer's JWKS; other tokens are introspected (RFC 7662) when `introspection` is configured and
 * refused otherwise. Verified tokens are cached until `exp` (bounded by the cache's TTL).
 *
 * Every option is checked here, at start-up, and everything derivable is computed once: the issuer's metadata
 * is discovered on first use (or by `ready()`), never per request, and only when `jwksUri` or the
 * introspection endpoint is not configured. A cached token costs a map lookup and a clock read.
 *
 * Routing by token shape: three dot-separated parts (compact JWS) go to JWT verification, unless the issuer
 * publishes no `jwks_uri` and introspection is configured; five parts (compact JWE, RFC 7516 §7.1) and
 * anything else go to introspection when configured, else they are `invalid_token` (reason `token_invalid`).
 *
 * Returned identities are frozen and shared by every request presenting the same token (see `buildAuthInfo`);
 * concurrent requests with the same not-yet-cached token share one verification. Failures are not cached:
 * every request with a bad token is checked again (an unknown `kid` refetches the JWKS at most once per
 * `jwksCooldownMs`; each unknown opaque token costs one introspection call, so rate-limit upstream).
 *
 * @throws ConfigurationError naming the faulty setting (`issuer`, `resource`, `audiences`, `jwksUri`,
 *   `algorithms`, `clockToleranceSeconds`, `httpTimeoutMs`, `jwksCooldownMs`, `jwksCacheMaxAgeMs`,
 *   `introspection.clientId`, `introspection.clientSecret`, `introspection.endpoint`,
 *   `introspection.cacheTtlSeconds`, `tokenCache.maxEntries`, `tokenCache.maxTtlSeconds`).
 */
export function createTokenVerifier(options: TokenVerifierOptions): TokenVerifier {
  if (options === null || typeof options !== 'object') throw new ConfigurationError('options', 'token verifier options are required');

  const issuer = requireString('issuer', options.issuer);
  const issuerUrl = assertSecureUrl('issuer', issuer);
  if (issuerUrl.search !== '') throw new ConfigurationError('issuer', 'must not contain a query string (RFC 8414 §2)');

  const resource = requireString('resource', options.resource);
  let resourceUrl: URL;
  try {
    resourceUrl = new URL(resource);
  } catch {
    throw new ConfigurationError('resource', `"${resource}" is not an absolute URL`);
  }
  const audiences = [resource, ...readAudiences(options.audiences)];

  const jwksUri = options.jwksUri === undefined ? undefined : assertSecureUrl('jwksUri', options.jwksUri);
  const algorithms = resolveJwtAlgorithms(options.algorithms);
  const clockToleranceSeconds = checkNumber(options.clockToleranceSeconds, 'clockToleranceSeconds', DEFAULT_CLOCK_TOLERANCE_SECONDS);
  const httpTimeoutMs = checkNumber(options.httpTimeoutMs, 'httpTimeoutMs', DEFAULT_HTTP_TIMEOUT_MS, { integer: true, positive: true });
  const jwksCooldownMs = checkNumber(options.jwksCooldownMs, 'jwksCooldownMs', DEFAULT_JWKS_COOLDOWN_MS);
  const jwksCacheMaxAgeMs = checkNumber(options.jwksCacheMaxAgeMs, 'jwksCacheMaxAgeMs', DEFAULT_JWKS_CACHE_MAX_AGE_MS);
  const strictJwtAccessTokens = options.strictJwtAccessTokens ?? false;
  if (typeof strictJwtAccessTokens !== 'boolean') throw new ConfigurationError('strictJwtAccessTokens', 'must be true or false');

  const introspection = options.introspection;
  let introspectionEndpoint: URL | undefined;
  let introspectionTtlSeconds = DEFAULT_INTROSPECTION_CACHE_TTL_SECONDS;
  if (introspection !== undefined) {
    requireString('introspection.clientId', introspection.clientId);
    requireString('introspection.clientSecret', introspection.clientSecret);
    introspectionEndpoint = resolveIntrospectionEndpoint(introspection.endpoint);
    introspectionTtlSeconds = checkNumber(introspection.cacheTtlSeconds, 'introspection.cacheTtlSeconds', DEFAULT_INTROSPECTION_CACHE_TTL_SECONDS);
  }

  const cache: TokenCache | undefined = options.tokenCache === false ? undefined : createTokenCache(options.tokenCache ?? {});

  // Discovery only when something is left to learn from the issuer's metadata.
  const needsDiscovery = jwksUri === undefined || (introspection !== undefined && introspectionEndpoint === undefined);
  const discover: DiscoverIssuer = needsDiscovery
    ? createIssuerDiscovery({ issuer, timeoutMs: httpTimeoutMs })
    : fixedMetadata({ issuer, jwks_uri: jwksUri?.href, introspection_endpoint: introspectionEndpoint?.href });

  const verifyJwt = createJwtVerifier({
    issuer,
    audiences,
    algorithms,
    clockToleranceSeconds,
    strictJwtAccessTokens,
    jwksUri: jwksUri ?? (() => discover().then(readJwksUri)),
    httpTimeoutMs,
    jwksCooldownMs,
    jwksCacheMaxAgeMs,
  });

  const introspect: IntrospectToken | undefined =
    introspection === undefined
      ? undefined
      : createIntrospectionVerifier({
          issuer,
          audiences,
          clientId: introspection.clientId,
          clientSecret: introspection.clientSecret,
          metadata: discover,
          endpoint: introspectionEndpoint,
          timeoutMs: httpTimeoutMs,
          clockToleranceSeconds,
        });

  const verifyByIntrospection = async (token: string): Promise<AuthInfo> => {
    const response = await (introspect as IntrospectToken)(token);
    const info = buildAuthInfo(token, response, { resource: resourceUrl, tokenType: 'introspection' });
    cache?.set(token, info, introspectionTtlSeconds);
    return info;
  };

  const verifyAsJwt = async (token: string): Promise<AuthInfo> => {
    const { payload } = await verifyJwt(token);
    const info = buildAuthInfo(token, payload, { resource: resourceUrl, tokenType: 'jwt' });
    cache?.set(token, info);
    return info;
  };

  const verifyUncached = async (token: string): Promise<AuthInfo> => {
    const dots = countDots(token);
    if (dots === 2) {
      // An issuer without a JWKS can still be served when it introspects its (JWT-shaped) tokens.
      if (introspect !== undefined && jwksUri === undefined && (await discover()).jwks_uri === undefined) {
        return verifyByIntrospection(token);
      }
      return verifyAsJwt(token);
    }
    if (introspect !== undefined) return verifyByIntrospection(token);
    throw new InvalidTokenError(
      dots === 4 ? 'encrypted (JWE) access tokens are not supported' : 'access token is not a JWT and introspection is not configured',
      'token_invalid',
    );
  };

  // Concurrent requests with the same new token (a client fanning out right after sign-in) share one
  // verification: one signature check, one introspection call. Entries live only while in flight.
  const inFlight = new Map<string, Promise<AuthInfo>>();

  return {
    verify(token: string): Promise<AuthInfo> {
      const cached = cache?.get(token);
      if (cached !== undefined) return Promise.resolve(cached);
      let pending = inFlight.get(token);
      if (pending === undefined) {
        pending = verifyUncached(token).finally(() => inFlight.delete(token));
        inFlight.set(token, pending);
      }
      return pending;
    },
    cached(token: string): AuthInfo | undefined {
      return cache?.get(token);
    },
    async ready(): Promise<void> {
      await discover();
    },
  };
}

function fixedMetadata(metadata: ServerMetadata): DiscoverIssuer {
  const resolved = Promise.resolve(metadata);
  return () => resolved;
}

function readJwksUri(metadata: ServerMetadata): URL {
  if (metadata.jwks_uri === undefined) {
    throw new AuthorizationServerUnavailableError(
      "the authorization server's signing keys (JWKS) are unavailable",
      5,
      new ConfigurationError('jwksUri', 'the issuer metadata has no jwks_uri; set jwksUri or configure introspection'),
    );
  }
  // Checked by discovery (https, or http on loopback).
  return new URL(metadata.jwks_uri);
}

/** Number of `.` in the token: 2 for a compact JWS, 4 for a compact JWE. Stops counting past 4. */
function countDots(token: string): number {
  let dots = 0;
  for (let i = token.indexOf('.'); i !== -1 && dots <= 4; i = token.indexOf('.', i + 1)) dots++;
  return dots;
}

function requireString(setting: string, value: unknown): string {
  if (typeof value !== 'string' || value.length === 0) throw new ConfigurationError(setting, 'is required (a non-empty string)');
  return value;
}

function readAudiences(value: readonly string[] | undefined): string[] {
  return checkStringList(value, 'audiences') ?? [];
}

