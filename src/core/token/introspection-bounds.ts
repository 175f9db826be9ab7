import { addressGroup } from '../kernel/address-group.js';
import { InvalidTokenError, RateLimitedError } from '../kernel/errors.js';
import { parseOffOr } from '../kernel/settings.js';
import type { DecisionReason } from '../kernel/decision.js';
import { estimateIdentityBytes } from '../kernel/identity-size.js';
import { createSecondUseFilter, type SecondUseFilter } from '../limits/second-use-filter.js';
import { parseRateLimit, type RateLimit } from '../limits/rate-limit.js';
import { createMemoryRateLimiter, type MemoryRateLimiter } from '../limits/rate-limiter.js';
import { createTokenCache, type TokenCache } from './token-cache.js';
import type { VerificationContext } from './token-verifier.js';

/** How long a refusal from the introspection endpoint is reused, in seconds, unless `cacheTtlSeconds` is shorter. */
export const DEFAULT_INTROSPECTION_REFUSAL_TTL_SECONDS = 10;
/** Default `introspection.refusalsPerAddress`. */
export const DEFAULT_INTROSPECTION_REFUSALS_PER_ADDRESS = '20/s';
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
  /** `introspection.refusalsPerAddress`, unchecked. */
  refusalsPerAddress: unknown;
  /** Current time in milliseconds since the epoch. Default `Date.now`. */
  now?: () => number;
}

/** What keeps junk opaque tokens from costing one introspection call each. */
export interface IntrospectionBounds {
  /** A fresh refusal for a token refused recently (by its digest), or undefined. */
  refused(key: string): InvalidTokenError | undefined;
  /**
   * Records a definitive refusal of the token with digest `key` (never an outage: those are not
   * `InvalidTokenError`s): it counts against the request's client address, and from the token's second refusal
   * on it is reused.
   */
  remember(key: string, error: InvalidTokenError, context: VerificationContext | undefined): void;
  /** Throws a 429 `RateLimitedError` when the request's client address is past its refusals; counts nothing. */
  admit(context: VerificationContext | undefined): void;
  /** The per-address counts of refusals, for tests. */
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
 *   keyed by the token's digest, bounded in entries and bytes, so the same junk token costs two calls per TTL. A
 *   token is remembered on its second refusal only, so that an authorization server that briefly answers
 *   `active: false` for a token it just issued (a replica not yet in sync) does not get it refused for the whole
 *   TTL: the client's retry asks again. A token not valid *yet* (`nbf`) is not reused, as it may become valid
 *   within the TTL;
 * - the refusals one client address (IPv6: its /64) causes are counted in fixed windows, and while an address is
 *   past its count, its requests with new tokens are refused with 429 and `Retry-After` before any call. Tokens the
 *   endpoint accepts never count: behind a reverse proxy, where every client shares one address, a client sending
 *   junk locks out only the new tokens that arrive through that address while it is past the bound, and never
 *   a client sending valid ones at any rate. Calls already in flight when the bound is reached still finish, so
 *   an address causes at most the bound plus its concurrent requests per window.
 *
 * @throws ConfigurationError naming `introspection.refusalsPerAddress` when it is neither a rate nor `false`.
 */
/**
 * Reads `introspection.refusalsPerAddress` (`MCP_AUTH_INTROSPECTION_RATE_LIMIT`): a rate such as `"20/s"`, or
 * `false` / `"off"` for no bound (undefined), by the rule of every setting that takes `off` (see `parseOffOr`).
 * Zero is refused, not taken for `off`: a bound of no refusal would lock an address out of new opaque tokens at its
 * first made-up one, which nobody means.
 *
 * @example
 * parseRefusalsPerAddress('20/s', 'MCP_AUTH_INTROSPECTION_RATE_LIMIT'); // { points: 20, windowMs: 1000, text: '20/s' }
 * @throws ConfigurationError naming `setting` when the value is neither (zero: "use off to disable").
 */
export function parseRefusalsPerAddress(value: unknown, setting: string): RateLimit | undefined {
  return parseOffOr(value, setting, 'refused', (text) => parseRateLimit(text, setting));
}

export function createIntrospectionBounds(options: IntrospectionBoundsOptions): IntrospectionBounds {
  const { refusalTtlSeconds, now } = options;
  const setting = options.refusalsPerAddress ?? DEFAULT_INTROSPECTION_REFUSALS_PER_ADDRESS;
  const limit = parseRefusalsPerAddress(setting, 'introspection.refusalsPerAddress');
  const perAddress = limit === undefined ? undefined : createMemoryRateLimiter({ maxBytes: PER_ADDRESS_MAX_BYTES, now });
  const refusals =
    refusalTtlSeconds > 0
      ? createTokenCache<Refusal>({ maxEntries: INTROSPECTION_REFUSALS_MAX_ENTRIES, maxBytes: INTROSPECTION_REFUSALS_MAX_BYTES, maxTtlSeconds: refusalTtlSeconds, now })
      : undefined;
  // Which tokens were refused once already: only a second refusal is remembered.
  const firstRefusals = refusals === undefined ? undefined : createSecondUseFilter(2 * INTROSPECTION_REFUSALS_MAX_ENTRIES);

  return {
    refused(key) {
      const refusal = refusals?.get(key);
      // A new error each time: one request's answer (its challenge) must not be shared with another's.
      return refusal === undefined ? undefined : new InvalidTokenError(refusal.message, refusal.reason);
    },
    remember(key, error, context) {
      const group = perAddress === undefined ? undefined : addressGroup(context?.clientAddress);
      if (group !== undefined) perAddress?.consume(group, limit as RateLimit);
      if (refusals === undefined || error.reason === 'token_not_yet_valid') return;
      if (!(firstRefusals as SecondUseFilter).seenBefore(key)) return;
      const refusal: Refusal = { reason: error.reason, message: error.message };
      refusals.set(key, refusal, { bytes: estimateIdentityBytes(refusal) });
    },
    admit(context) {
      if (perAddress === undefined) return;
      const group = addressGroup(context?.clientAddress);
      if (group === undefined) return;
      const waitMs = perAddress.peek(group, limit as RateLimit);
      if (waitMs > 0) {
        throw new RateLimitedError(`Too many refused access tokens from this address: at most ${(limit as RateLimit).text}; retry later`, waitMs);
      }
    },
    perAddress,
    refusals,
  };
}
