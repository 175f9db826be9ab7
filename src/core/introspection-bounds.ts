import { addressGroup } from './address-group.js';
import { InvalidTokenError, RateLimitedError } from './errors.js';
import type { DecisionReason } from './decision.js';
import { estimateIdentityBytes } from './identity-size.js';
import { parseRateLimit, type RateLimit } from './rate-limit.js';
import { createMemoryRateLimiter, type MemoryRateLimiter } from './rate-limiter.js';
import { createTokenCache, type TokenCache } from './token-cache.js';
import type { VerificationContext } from './token-verifier.js';

/** How long a refusal from the introspection endpoint is reused, in seconds, unless `cacheTtlSeconds` is shorter. */
export const DEFAULT_INTROSPECTION_REFUSAL_TTL_SECONDS = 10;
/** Default `introspection.callsPerAddress`. */
export const DEFAULT_INTROSPECTION_CALLS_PER_ADDRESS = '20/s';
/** Most refusals held (least recently used evicted first). */
export const INTROSPECTION_REFUSALS_MAX_ENTRIES = 10_000;
/** Most estimated memory of the refusals held, in bytes (4 MiB): each a digest key, a reason and a message. */
export const INTROSPECTION_REFUSALS_MAX_BYTES = 4 * 1_048_576;
/**
 * Most memory of the per-address counts, in bytes (1 MiB: about 4 000 addresses counting at once; past it the
 * oldest count is forgotten, which lets its address start a new window, never refuses anyone).
 */
const PER_ADDRESS_MAX_BYTES = 1_048_576;

/** Options of {@link createIntrospectionBounds}. */
export interface IntrospectionBoundsOptions {
  /** How long a refusal is reused, in seconds; 0 reuses none. */
  refusalTtlSeconds: number;
  /** `introspection.callsPerAddress`, unchecked. */
  callsPerAddress: unknown;
  /** Current time in milliseconds since the epoch. Default `Date.now`. */
  now?: () => number;
}

/** What keeps junk opaque tokens from costing one introspection call each. */
export interface IntrospectionBounds {
  /** A fresh refusal for a token refused recently (by its digest), or undefined. */
  refused(key: string): InvalidTokenError | undefined;
  /** Remembers a definitive refusal of the token with digest `key`: never an outage (those are not `InvalidTokenError`s). */
  remember(key: string, error: InvalidTokenError): void;
  /** Counts one introspection call for the request's client address; throws a 429 `RateLimitedError` past the bound. */
  admit(context: VerificationContext | undefined): void;
  /** The per-address counts, for tests. */
  readonly perAddress: MemoryRateLimiter | undefined;
  /** The refusals held, for tests. */
  readonly refusals: TokenCache<Refusal> | undefined;
}

interface Refusal {
  readonly expiresAt?: number;
  readonly reason: DecisionReason;
  readonly message: string;
}

/**
 * Bounds what unauthenticated requests with made-up opaque tokens cost the authorization server:
 *
 * - definitive refusals (`active: false`, or an answer not valid for this resource) are reused for a short time,
 *   keyed by the token's digest, bounded in entries and bytes, so the same junk token costs one call per TTL; a
 *   token not valid *yet* (`nbf`) is not reused, as it may become valid within the TTL;
 * - the calls one client address (IPv6: its /64) can cause are bounded by a fixed-window rate, checked before
 *   the call, so a stream of ever-new tokens is refused with 429 and `Retry-After` instead of reaching the
 *   authorization server.
 *
 * @throws ConfigurationError naming `introspection.callsPerAddress` when it is neither a rate nor `false`.
 */
export function createIntrospectionBounds(options: IntrospectionBoundsOptions): IntrospectionBounds {
  const { refusalTtlSeconds, now } = options;
  const setting = options.callsPerAddress ?? DEFAULT_INTROSPECTION_CALLS_PER_ADDRESS;
  const limit: RateLimit | undefined = setting === false ? undefined : parseRateLimit(setting, 'introspection.callsPerAddress');
  const perAddress = limit === undefined ? undefined : createMemoryRateLimiter({ maxBytes: PER_ADDRESS_MAX_BYTES, now });
  const refusals =
    refusalTtlSeconds > 0
      ? createTokenCache<Refusal>({ maxEntries: INTROSPECTION_REFUSALS_MAX_ENTRIES, maxBytes: INTROSPECTION_REFUSALS_MAX_BYTES, maxTtlSeconds: refusalTtlSeconds, now })
      : undefined;

  return {
    refused(key) {
      const refusal = refusals?.get(key);
      // A new error each time: one request's answer (its challenge) must not be shared with another's.
      return refusal === undefined ? undefined : new InvalidTokenError(refusal.message, refusal.reason);
    },
    remember(key, error) {
      if (refusals === undefined || error.reason === 'token_not_yet_valid') return;
      const refusal: Refusal = { reason: error.reason, message: error.message };
      refusals.set(key, refusal, { bytes: estimateIdentityBytes(refusal) });
    },
    admit(context) {
      if (perAddress === undefined) return;
      const group = addressGroup(context?.clientAddress);
      if (group === undefined) return;
      const waitMs = perAddress.consume(group, limit as RateLimit);
      if (waitMs > 0) {
        throw new RateLimitedError(`Too many new access tokens to check from this address: at most ${(limit as RateLimit).text}; retry later`, waitMs);
      }
    },
    perAddress,
    refusals,
  };
}
