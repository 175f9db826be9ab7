/**
 * The claim checks of jose's `jwtVerify` (jose 6, `validateClaimsSet` in `lib/jwt_claims_set.js`), step by step
 * and with jose's errors, for the options the guard uses. jose does not export them: they run inside
 * `jwtVerify`, which verifies with WebCrypto, and inside `UnsecuredJWT.decode`, which costs a second decoding
 * and parsing of every token (measured: about a tenth of a new token's whole verification on one CPU).
 * `test/core/jwt/verify-compact-jwt.test.ts` holds the two to the same verdicts.
 */
import { errors, type JWTPayload } from 'jose';

/** The claim options of jose's `JWTVerifyOptions` the guard uses (no `subject`, `maxTokenAge` or `typ`). */
export interface JwtClaimOptions {
  /** `iss` must equal this (exact string comparison). */
  issuer?: string;
  /** `aud` (a string, or a list of strings) must contain one of these. */
  audience?: string | string[];
  /** Claims that must be present, whatever their value. */
  requiredClaims?: string[];
  /** Seconds of clock skew tolerated on `nbf` and `exp`. Default 0. */
  clockTolerance?: number;
  /** The time to check against. Default now. */
  currentDate?: Date;
}

/** jose's `isObject`: a plain object (JSON objects always are; arrays and `null` are not). */
export function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Object.prototype.toString.call(value) !== '[object Object]') return false;
  const prototype = Object.getPrototypeOf(value) as object | null;
  return prototype === null || Object.getPrototypeOf(prototype) === null;
}

/** jose's `TextDecoder` for headers and claims: malformed UTF-8 is an error, not U+FFFD. */
export const strictUtf8 = new TextDecoder('utf-8', { fatal: true });

function unexpected(claims: JWTPayload, claim: string): errors.JWTClaimValidationFailed {
  return new errors.JWTClaimValidationFailed(`unexpected "${claim}" claim value`, claims, claim, 'check_failed');
}

/** A NumericDate claim (RFC 7519 §2), when present (or required): a number, of any value. */
function numericDate(claims: JWTPayload, claim: string): number | undefined {
  const value = claims[claim];
  if (value === undefined) return undefined;
  if (typeof value !== 'number') throw new errors.JWTClaimValidationFailed(`"${claim}" claim must be a number`, claims, claim, 'invalid');
  return value;
}

function audienceMatches(aud: unknown, accepted: readonly string[]): boolean {
  if (typeof aud === 'string') return accepted.includes(aud);
  if (Array.isArray(aud)) return accepted.some((value) => aud.includes(value));
  return false;
}

/**
 * Parses the claims (UTF-8 JSON, a top-level object) of a JWT whose signature was verified, and checks them
 * as jose does, in jose's order: presence (`iss`, then `aud`, then the required claims, last listed first),
 * `iss`, `aud`, then the types of `iat` and `nbf`, `nbf`, the type of `exp`, `exp`.
 *
 * @throws jose's `JWTInvalid` (not a JSON object), `JWTClaimValidationFailed` (claim `iss`, `aud`, `nbf`, a
 *   required or mistyped one) or `JWTExpired`.
 */
export function checkJwtClaims(payload: Uint8Array, options: JwtClaimOptions): JWTPayload {
  return checkJwtClaimsSet(parseJwtClaims(payload), options);
}

/**
 * The claims set of a JWT payload (UTF-8 JSON, a top-level object), parsed as jose parses it, unchecked.
 *
 * @throws jose's `JWTInvalid` when it is not a JSON object.
 */
export function parseJwtClaims(payload: Uint8Array): JWTPayload {
  let claims: unknown;
  try {
    claims = JSON.parse(strictUtf8.decode(payload));
  } catch (cause) {
    throw new errors.JWTInvalid('JWT Claims Set must be a top-level JSON object', { cause });
  }
  if (!isPlainObject(claims)) throw new errors.JWTInvalid('JWT Claims Set must be a top-level JSON object');
  return claims as JWTPayload;
}

/**
 * The claims that must be present, in the order jose checks them, worked out once per options object: an options
 * object must not change once used (the JWT verifier freezes its own).
 */
const presenceOrders = new WeakMap<JwtClaimOptions, readonly string[]>();

function presenceOrder(options: JwtClaimOptions): readonly string[] {
  let order = presenceOrders.get(options);
  if (order === undefined) {
    const present = [...(options.requiredClaims ?? [])];
    if (options.audience !== undefined) present.push('aud');
    if (options.issuer !== undefined) present.push('iss');
    order = [...new Set(present.reverse())];
    presenceOrders.set(options, order);
  }
  return order;
}

/** The checks of {@link checkJwtClaims} on claims already parsed by {@link parseJwtClaims}; returns them. */
export function checkJwtClaimsSet(set: JWTPayload, options: JwtClaimOptions): JWTPayload {
  const { issuer, audience } = options;

  for (const claim of presenceOrder(options)) {
    if (!Object.hasOwn(set, claim)) throw new errors.JWTClaimValidationFailed(`missing required "${claim}" claim`, set, claim, 'missing');
  }
  if (issuer !== undefined && set.iss !== issuer) throw unexpected(set, 'iss');
  if (audience !== undefined && !audienceMatches(set.aud, typeof audience === 'string' ? [audience] : audience)) throw unexpected(set, 'aud');

  const tolerance = options.clockTolerance ?? 0;
  if (!Number.isFinite(tolerance) || tolerance < 0) throw new TypeError('Invalid clockTolerance option input');
  const now = Math.floor((options.currentDate ?? new Date()).getTime() / 1000);
  if (!Number.isFinite(now)) throw new TypeError('Invalid currentDate option input');
  numericDate(set, 'iat');
  const nbf = numericDate(set, 'nbf');
  if (nbf !== undefined && nbf > now + tolerance) throw new errors.JWTClaimValidationFailed('"nbf" claim timestamp check failed', set, 'nbf', 'check_failed');
  const exp = numericDate(set, 'exp');
  if (exp !== undefined && exp <= now - tolerance) throw new errors.JWTExpired('"exp" claim timestamp check failed', set, 'exp', 'check_failed');
  return set;
}
