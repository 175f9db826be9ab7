/**
 * The token verifier's defaults, apart from the verifier itself (which loads jose and openid-client), so that a
 * settings table, `--help` or a configuration check can name them without loading either.
 */

/** Default `TokenVerifierOptions.clockToleranceSeconds`, in seconds. */
export const DEFAULT_CLOCK_TOLERANCE_SECONDS = 5;
/** Default `TokenVerifierOptions.httpTimeoutMs`, in milliseconds. */
export const DEFAULT_HTTP_TIMEOUT_MS = 5_000;
/** Default `TokenVerifierOptions.jwksCooldownMs`, in milliseconds. */
export const DEFAULT_JWKS_COOLDOWN_MS = 30_000;
/** Default `TokenVerifierOptions.jwksCacheMaxAgeMs`, in milliseconds. */
export const DEFAULT_JWKS_CACHE_MAX_AGE_MS = 600_000;
/** Default `IntrospectionOptions.cacheTtlSeconds`, in seconds. */
export const DEFAULT_INTROSPECTION_CACHE_TTL_SECONDS = 60;
