import { decodeJwt, errors as joseErrors, type JWTHeaderParameters, type JWTPayload } from 'jose';
import type { DecisionReason } from '../kernel/decision.js';
import { AuthorizationServerUnavailableError, ConfigurationError, GuardError, InvalidTokenError } from '../kernel/errors.js';
import { createJwksKeySet } from './jwks-key-set.js';
import { DEFAULT_JWT_ALGORITHMS, isSupportedJwsAlgorithm, SUPPORTED_JWS_ALGORITHMS } from '../jwt/jws-algorithms.js';
import { joseHeaderType } from '../jwt/jose-header-type.js';
import type { JwksFetchResult } from './token-verifier.js';
import { verifyCompactJwt, verifyCompactJwtNow, type CompactJwtKeyResolver, type CompactJwtVerifyOptions, type PeekedJwtClaims } from '../jwt/verify-compact-jwt.js';

export { DEFAULT_JWT_ALGORITHMS } from '../jwt/jws-algorithms.js';


/** Claims RFC 9068 §2.2 requires of a JWT access token, beyond `iss`, `aud` and `exp`. */
const RFC9068_CLAIMS = ['exp', 'iat', 'jti', 'sub', 'client_id'];

/** Options of {@link createJwtVerifier}, already validated and defaulted by the caller. */
export interface JwtVerifierOptions {
  /** Expected `iss`, compared exactly (RFC 7519 §4.1.1, RFC 9068 §4). */
  issuer: string;
  /** Accepted audiences; `aud` must contain one of them (RFC 7519 §4.1.3, RFC 8707 §2). Non-empty. */
  audiences: readonly string[];
  /** Accepted `alg` values, as returned by {@link resolveJwtAlgorithms}. */
  algorithms: readonly string[];
  /** Clock skew tolerated on `exp` and `nbf`, in seconds. */
  clockToleranceSeconds: number;
  /** Require RFC 9068: `typ` `at+jwt` and claims `client_id`, `iat`, `jti`, `sub`. */
  strictJwtAccessTokens: boolean;
  /** The JWKS location, or how to learn it (issuer discovery) on first use. */
  jwksUri: URL | (() => Promise<URL>);
  /** Timeout of a JWKS fetch, in milliseconds (integer). */
  httpTimeoutMs: number;
  /** Minimum time between two JWKS fetches, successful or not, in milliseconds. */
  jwksCooldownMs: number;
  /** Maximum age of the cached JWKS, in milliseconds. */
  jwksCacheMaxAgeMs: number;
  /** Told the outcome of each JWKS request, for metrics; must not throw. */
  onJwksFetch?: (result: JwksFetchResult) => void;
}

/** A verified JWT access token. */
export interface VerifiedJwt {
  /** The claims, validated (issuer, audience, times, required claims). */
  payload: JWTPayload;
  /** The protected header. */
  protectedHeader: JWTHeaderParameters;
}

/**
 * Verifies a compact JWS access token: signature with a key from the issuer's JWKS, then `iss`, `aud`, `exp`,
 * `nbf`, `typ` and, in strict mode, the RFC 9068 claims.
 *
 * @throws InvalidTokenError (401) with reason `token_expired`, `token_not_yet_valid`, `token_issuer`,
 *   `token_audience`, `token_signature`, `token_algorithm`, `token_type`, `token_claims` or `token_invalid`.
 * @throws AuthorizationServerUnavailableError (503) when the JWKS cannot be fetched, parsed, or times out.
 * @param peeked - The token's claims as `peekJwtClaims` read them before (to pick the issuer), so that the
 *   payload is not decoded and parsed a second time. Optional.
 */
export interface VerifyJwt {
  (token: string, peeked?: PeekedJwtClaims): Promise<VerifiedJwt>;
  /**
   * The same verification with no promise, when the issuer's key for the token is already at hand: the same
   * verdict, thrown instead of rejected. `undefined` when it must wait (keys to fetch, an algorithm only jose
   * verifies); then call the verifier itself.
   */
  now(token: string, peeked?: PeekedJwtClaims): VerifiedJwt | undefined;
}

/**
 * Checks the `algorithms` setting and returns the list to use.
 *
 * @param algorithms - Configured algorithms; default {@link DEFAULT_JWT_ALGORITHMS}.
 * @throws ConfigurationError naming `algorithms` when the list is empty, contains `none` or an HMAC algorithm
 *   (RFC 8725 §3.1–3.2: the resource server would hold a key able to mint tokens), or an unknown name.
 */
export function resolveJwtAlgorithms(algorithms: readonly string[] | undefined): readonly string[] {
  if (algorithms === undefined) return DEFAULT_JWT_ALGORITHMS;
  if (!Array.isArray(algorithms) || algorithms.length === 0) {
    throw new ConfigurationError('algorithms', 'must be a non-empty list of JWS algorithms, e.g. ["RS256", "ES256"]');
  }
  for (const alg of algorithms) {
    if (typeof alg !== 'string') throw new ConfigurationError('algorithms', 'must contain strings only');
    if (alg.toLowerCase() === 'none') {
      throw new ConfigurationError('algorithms', '"none" means unsigned tokens and is never accepted (RFC 8725 §3.1)');
    }
    if (/^HS\d+$/i.test(alg)) {
      throw new ConfigurationError('algorithms', `"${alg}" is symmetric: a resource server must not hold a key that can mint tokens; use an asymmetric algorithm`);
    }
    if (!isSupportedJwsAlgorithm(alg)) {
      throw new ConfigurationError('algorithms', `"${alg}" is not a supported asymmetric JWS algorithm (${SUPPORTED_JWS_ALGORITHMS.join(', ')})`);
    }
  }
  return Object.freeze([...algorithms]);
}

/**
 * Creates a {@link VerifyJwt} over jose's `jwtVerify` checks and the issuer's key set ({@link createJwksKeySet}),
 * the signature being checked synchronously by `node:crypto` ({@link verifyCompactJwt}: on one CPU, WebCrypto's
 * thread-pool round trip cost about as much as the signature check itself, on every new token).
 *
 * Keys come only from the configured or discovered `jwks_uri`: jose's remote key set never follows a token's
 * `jku` or `x5u` header and never uses an embedded `jwk` (RFC 8725 §3.10), so an attacker cannot supply the key
 * that checks their own signature. At most one JWKS fetch starts per cooldown, whether fetches succeed or fail.
 */
export function createJwtVerifier(options: JwtVerifierOptions): VerifyJwt {
  // Frozen: the claim checks work out what they can from it once (see `checkJwtClaimsSet`).
  const verifyOptions: CompactJwtVerifyOptions = Object.freeze({
    issuer: options.issuer,
    audience: [...options.audiences],
    algorithms: [...options.algorithms],
    requiredClaims: options.strictJwtAccessTokens ? RFC9068_CLAIMS : ['exp'],
    clockTolerance: options.clockToleranceSeconds,
  });
  const strict = options.strictJwtAccessTokens;
  const expected: Expected = { issuer: options.issuer, audiences: options.audiences };

  const keySet = createJwksKeySet({
    jwksUri: options.jwksUri,
    httpTimeoutMs: options.httpTimeoutMs,
    cooldownMs: options.jwksCooldownMs,
    maxAgeMs: options.jwksCacheMaxAgeMs,
    onFetch: options.onJwksFetch,
  });

  // Separates "the token names no key we know" (the token's fault) from "the key set is unreachable or
  // broken" (the authorization server's): only the key resolver talks to the network.
  const getKey: CompactJwtKeyResolver = async (protectedHeader, token) => {
    try {
      return await keySet(protectedHeader, token);
    } catch (error) {
      // The key set's own 503 carries the Retry-After of its backoff.
      if (isTokenKeyError(error) || error instanceof GuardError) throw error;
      throw new AuthorizationServerUnavailableError("the authorization server's signing keys (JWKS) are unavailable", 5, error);
    }
  };

  const verify = async (token: string, peeked?: PeekedJwtClaims): Promise<VerifiedJwt> => {
    let verified: VerifiedJwt;
    try {
      verified = await verifyCompactJwt(token, getKey, verifyOptions, peeked);
    } catch (error) {
      if (error instanceof joseErrors.JWKSMultipleMatchingKeys) {
        verified = await verifyWithEachCandidate(token, error, verifyOptions, expected, peeked);
      } else {
        // A token from another issuer is refused as such even while this issuer's keys are unknown or unreachable.
        const keyless = error instanceof joseErrors.JWKSNoMatchingKey || error instanceof AuthorizationServerUnavailableError;
        throw toGuardError(keyless ? (foreignIssuer(token, expected) ?? error) : error, expected);
      }
    }
    checkTokenType(verified.protectedHeader.typ, strict);
    // A `cnf` (sender-constrained token) is the guard's to judge, with the scheme and proof the token came with.
    return verified;
  };
  // With the key at hand no step waits: a new token then costs no promise (on one CPU, the promises and
  // microtasks of the asynchronous path were a measurable share of a new token's verification).
  const now = (token: string, peeked?: PeekedJwtClaims): VerifiedJwt | undefined => {
    let verified: VerifiedJwt | undefined;
    try {
      verified = verifyCompactJwtNow(token, keySet.known, verifyOptions, peeked);
    } catch (error) {
      // With the key known, none of the key-set errors `verify` handles can occur.
      throw toGuardError(error, expected);
    }
    if (verified !== undefined) checkTokenType(verified.protectedHeader.typ, strict);
    return verified;
  };
  return Object.assign(verify, { now });
}

/**
 * Without a `kid`, several keys of the JWKS may fit (RFC 7517 §4.5 makes `kid` optional); jose then yields
 * the candidates and the signature decides.
 */
async function verifyWithEachCandidate(
  token: string,
  candidates: joseErrors.JWKSMultipleMatchingKeys,
  verifyOptions: CompactJwtVerifyOptions,
  expected: Expected,
  peeked: PeekedJwtClaims | undefined,
): Promise<VerifiedJwt> {
  let lastError: unknown = candidates;
  for await (const key of candidates) {
    try {
      return await verifyCompactJwt(token, key, verifyOptions, peeked);
    } catch (error) {
      if (!(error instanceof joseErrors.JWSSignatureVerificationFailed)) throw toGuardError(error, expected);
      lastError = error;
    }
  }
  throw new InvalidTokenError('access token signature is invalid', 'token_signature', lastError);
}

/**
 * RFC 8725 §3.11 / RFC 7515 §4.1.9: a `typ` naming another kind of JWT (`dpop+jwt`, `logout+jwt`, an ID token
 * profile…) means the token is not an access token, even though it is signed by the issuer. Compared
 * case-insensitively, with or without the `application/` prefix.
 */
function checkTokenType(typ: unknown, strict: boolean): void {
  if (typ === undefined) {
    if (strict) throw new InvalidTokenError('access token must declare typ "at+jwt" (RFC 9068 section 2.1)', 'token_type');
    return;
  }
  if (typeof typ !== 'string') throw wrongType();
  const type = joseHeaderType(typ);
  if (type === 'at+jwt') return;
  if (type === 'jwt' && !strict) return;
  throw wrongType();
}

function wrongType(): InvalidTokenError {
  return new InvalidTokenError('token is not a JWT access token (unexpected typ)', 'token_type');
}

/** The token's own key problems, as opposed to a JWKS that cannot be fetched or parsed. */
function isTokenKeyError(error: unknown): boolean {
  return (
    error instanceof joseErrors.JWKSNoMatchingKey ||
    error instanceof joseErrors.JWKSMultipleMatchingKeys ||
    // The `alg` has no usable key type in a JWKS; unreachable with the allow-list, kept for safety.
    error instanceof joseErrors.JOSENotSupported
  );
}

/**
 * For a token signed with a key the issuer does not publish: when its (unverified) `iss` names another issuer,
 * that is the clearer refusal (a token from another identity provider), else `undefined`. Cold path only.
 */
function foreignIssuer(token: string, expected: Expected): InvalidTokenError | undefined {
  let iss: unknown;
  try {
    iss = decodeJwt(token).iss;
  } catch {
    return undefined;
  }
  if (iss === expected.issuer) return undefined;
  return new InvalidTokenError(
    `access token was issued by ${describeClaimValue(iss)} (iss), not by the expected issuer ${expected.issuer}`,
    'token_issuer',
  );
}

/** What a token was checked against, named in refusals so that a mismatch can be seen at a glance. */
interface Expected {
  readonly issuer: string;
  /** This resource first, then the extra audiences. */
  readonly audiences: readonly string[];
}

/**
 * A claim value from an unverified token, fit to quote in an `error_description` and a log line: strings as
 * they are (printable ASCII, quotes and backslashes replaced, at most 120 characters), arrays as a list of at
 * most three, anything else by its type. Issuers and audiences are not secrets; the token itself is never quoted.
 */
export function describeClaimValue(value: unknown): string {
  if (typeof value === 'string') {
    const printable = value.replace(/[^\x20-\x7e]|["\\]/g, '?');
    return printable.length > 120 ? `${printable.slice(0, 120)}...` : printable;
  }
  if (Array.isArray(value)) {
    const shown = value.slice(0, 3).map(describeClaimValue).join(', ');
    return `[${shown}${value.length > 3 ? `, and ${value.length - 3} more` : ''}]`;
  }
  return value === undefined ? 'nothing' : `a ${value === null ? 'null' : typeof value}`;
}

/** Maps a jose failure (by its stable `code`) to the answer the client gets. Messages never quote the token. */
function toGuardError(error: unknown, expected: Expected): GuardError {
  if (error instanceof GuardError) return error;
  const code = (error as { code?: unknown } | null)?.code;
  switch (code) {
    case 'ERR_JWT_EXPIRED':
      return invalid('access token expired', 'token_expired', error);
    case 'ERR_JWT_CLAIM_VALIDATION_FAILED': {
      const { claim, reason, payload } = error as joseErrors.JWTClaimValidationFailed;
      // A missing `iss` or `aud` is as much "not for us" as a wrong one.
      if (claim === 'iss') {
        return invalid(`access token was issued by ${describeClaimValue(payload.iss)} (iss), not by the expected issuer ${expected.issuer}`, 'token_issuer', error);
      }
      if (claim === 'aud') {
        const accepted = expected.audiences.length === 1 ? (expected.audiences[0] as string) : `one of ${expected.audiences.join(', ')}`;
        return invalid(`access token was issued for ${describeClaimValue(payload.aud)} (aud), not for this resource: expected ${accepted}`, 'token_audience', error);
      }
      if (reason === 'check_failed') {
        if (claim === 'nbf') return invalid('access token is not valid yet (nbf)', 'token_not_yet_valid', error);
        if (claim === 'typ') return invalid('token is not a JWT access token (unexpected typ)', 'token_type', error);
      }
      // jose names only claims we asked for (exp, iat, jti, sub, client_id, iss, aud, nbf): safe to echo.
      return invalid(`access token claim "${claim}" is missing or invalid`, 'token_claims', error);
    }
    case 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED':
      return invalid('access token signature is invalid', 'token_signature', error);
    case 'ERR_JWKS_NO_MATCHING_KEY':
      return invalid('access token is signed with an unknown key', 'token_signature', error);
    case 'ERR_JOSE_ALG_NOT_ALLOWED':
      return invalid('access token signing algorithm is not allowed', 'token_algorithm', error);
    default:
      // ERR_JWS_INVALID, ERR_JWT_INVALID, ERR_JOSE_NOT_SUPPORTED (unknown `crit`), and key-shape TypeErrors
      // (e.g. an RSA key under 2048 bits): the token cannot be accepted, and retrying will not help.
      return invalid('access token is malformed or cannot be verified', 'token_invalid', error);
  }
}

function invalid(message: string, reason: DecisionReason, cause: unknown): InvalidTokenError {
  return new InvalidTokenError(message, reason, cause);
}
