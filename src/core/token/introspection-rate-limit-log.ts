/**
 * The warning an authorization server rate-limiting token introspection leaves in the log. The client gets the
 * guard's 503 with `Retry-After` (its token is not at fault), and its request log line says only that introspection
 * is unavailable; this line says why and which settings change it, at most once a minute while it lasts.
 */
import { emitWarning, type LineSink } from '../kernel/log-line.js';
import { WarningLimiter } from '../kernel/warning-limiter.js';
import { IntrospectionRateLimitedError } from './introspection-verifier.js';

/** The fixed `message` of the warning (log alerts match it). */
export const INTROSPECTION_RATE_LIMITED_MESSAGE = 'the authorization server rate-limits token introspection (HTTP 429); requests with new opaque tokens get 503 until it stops';

/** How long, in milliseconds, the warning is not repeated. */
export const INTROSPECTION_RATE_LIMITED_INTERVAL_MS = 60_000;

/** What the warning names: the settings as the operator wrote them, and the cache TTL in force. */
export interface IntrospectionRateLimitSettings {
  /** How the cache TTL is named: `MCP_AUTH_INTROSPECTION_CACHE_TTL`, or `options.introspection.cacheTtlSeconds`. */
  readonly cacheTtl: string;
  /** How the per-address bound on refusals is named (`MCP_AUTH_INTROSPECTION_RATE_LIMIT`, …). */
  readonly refusalsPerAddress: string;
  /** How the introspection client id is named (`MCP_AUTH_INTROSPECTION_CLIENT_ID`, …). */
  readonly clientId: string;
  /** The cache TTL in force, in seconds. */
  readonly cacheTtlSeconds: number;
}

/**
 * Returns a function to call with each error authentication ends in: it writes the warning, rate-limited, for an
 * {@link IntrospectionRateLimitedError}, and ignores any other error.
 *
 * @example
 * const noteRefusal = introspectionRateLimitWarnings(warn, { cacheTtl: 'MCP_AUTH_INTROSPECTION_CACHE_TTL', refusalsPerAddress: 'MCP_AUTH_INTROSPECTION_RATE_LIMIT', clientId: 'MCP_AUTH_INTROSPECTION_CLIENT_ID', cacheTtlSeconds: 60 });
 * // {"time":"…","event":"warning","message":"the authorization server rate-limits token introspection (HTTP 429); …","setting":"MCP_AUTH_INTROSPECTION_CACHE_TTL","retryAfterSeconds":30,"fix":"…"}
 */
export function introspectionRateLimitWarnings(warn: LineSink, settings: IntrospectionRateLimitSettings, now: () => number = Date.now): (error: unknown) => void {
  const limiter = new WarningLimiter(INTROSPECTION_RATE_LIMITED_INTERVAL_MS, 1, now);
  const fix =
    `raise ${settings.cacheTtl} (now ${settings.cacheTtlSeconds} s) so that each accepted token is introspected at most once in that time; ` +
    `lower ${settings.refusalsPerAddress} if made-up tokens cause the calls; ` +
    `or raise the authorization server's rate limit for the client of ${settings.clientId}`;
  return (error) => {
    if (!(error instanceof IntrospectionRateLimitedError) || !limiter.due('introspection')) return;
    emitWarning(warn, INTROSPECTION_RATE_LIMITED_MESSAGE, { setting: settings.cacheTtl, retryAfterSeconds: error.retryAfterSeconds, fix });
  };
}
