import { calculateJwkThumbprint, decodeJwt, decodeProtectedHeader, EmbeddedJWK, jwtVerify, type JWK } from 'jose';
import { InvalidDpopProofError, InvalidRequestError } from '../kernel/errors.js';
import { tokenDigest } from '../wire/token-digest.js';
import { DEFAULT_CLOCK_TOLERANCE_SECONDS } from '../token/verifier-defaults.js';
import { DEFAULT_JWT_ALGORITHMS } from '../jwt/jws-algorithms.js';
import { joseHeaderType } from '../jwt/jose-header-type.js';

/**
 * Algorithms a DPoP proof may be signed with, and what the metadata's `dpop_signing_alg_values_supported`
 * (RFC 9728 §2) and the `DPoP algs` challenge (RFC 9449 §7.1) list: asymmetric only (RFC 9449 §4.2: never `none`
 * nor a MAC), the same set the guard accepts for access tokens by default.
 */
export const DPOP_SIGNING_ALGORITHMS: readonly string[] = DEFAULT_JWT_ALGORITHMS;

/**
 * How far in the past a proof's `iat` may be, in seconds (before `clockToleranceSeconds` is added). RFC 9449 §11.1
 * asks for "a relatively brief period"; replay within it is caught by the `jti` cache, so it only needs to absorb
 * the client's clock skew and the request's transit. Ahead of the server's clock an `iat` may be by the clock
 * tolerance only: a proof dated in the future would be acceptable, and its `jti` held, for longer than the window
 * (up to twice it, were the window the same both ways), for no honest client's benefit.
 */
export const DPOP_PROOF_WINDOW_SECONDS = 60;

/** Longest accepted `jti`, in characters: a random 256-bit value in base64url is 43; a UUID is 36. */
export const MAX_DPOP_JTI_LENGTH = 128;

/**
 * Longest accepted proof, in characters. The largest honest proof, an RS512 one with a 4096-bit key, is about 1.9 KB;
 * this bounds what is decoded and hashed for each request.
 */
const MAX_DPOP_PROOF_LENGTH = 8_192;

/**
 * A compact JWS (RFC 7515 §7.1): three base64url segments. The signature may be empty, as in an unsecured JWS
 * (`alg: none`, RFC 7518 §3.6): that is a well-formed proof with a refused algorithm, so invalid (401), not
 * malformed (400).
 */
const COMPACT_JWS = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/;

/** JWK members that hold private or symmetric key material (RFC 7518 §6.2.2, §6.3.2, §6.4; AKP `priv`). */
const PRIVATE_JWK_MEMBERS = ['d', 'p', 'q', 'dp', 'dq', 'qi', 'oth', 'k', 'priv'] as const;

/** What a DPoP proof is checked against. */
export interface DpopProofExpectations {
  /** The request's HTTP method, compared exactly with `htm` (RFC 9449 §4.3 check 8). */
  method: string;
  /**
   * The canonical resource URL (the guard's `resource`). `htu` must name it, ignoring query and fragment (RFC 9449
   * §4.3 check 9), after URL normalization (case of scheme and host, default port) and with or without one trailing
   * slash. Not the `Host` header: behind a proxy or in the gateway that names the wrong server.
   */
  resource: string;
  /** The access token the proof came with; `ath` must be base64url(SHA-256(token)) (RFC 9449 §4.3 check 12). */
  accessToken: string;
  /** Accepted `alg` values. Default {@link DPOP_SIGNING_ALGORITHMS}. */
  algorithms?: readonly string[];
  /**
   * Clock skew tolerated on `iat`, in seconds: beyond {@link DPOP_PROOF_WINDOW_SECONDS} in the past, and all that
   * is allowed in the future. Default 5.
   */
  clockToleranceSeconds?: number;
  /** Current time in milliseconds since the epoch. Default `Date.now`. */
  now?: () => number;
}

/** A proof that passed every check of {@link verifyDpopProof}. */
export interface VerifiedDpopProof {
  /** The proof's one-time identifier, to claim in a {@link ReplayCache}. */
  jti: string;
  /**
   * When the proof stops being acceptable (its `iat` plus the window and tolerance), in ms since the epoch: at
   * most the window plus twice the tolerance from now (70 s by default).
   */
  expiresAtMs: number;
  /** RFC 7638 SHA-256 thumbprint of the proof's key, base64url: what a bound token's `cnf.jkt` must equal. */
  thumbprint: string;
}

/**
 * Reads the one DPoP proof of a request from its `DPoP` header values.
 *
 * @param values - Every `DPoP` header value (Node's `req.headersDistinct.dpop`), or the single value.
 * @throws InvalidDpopProofError (401, reason `dpop_proof_missing`) when there is none, or it is empty.
 * @throws InvalidRequestError (400, reason `dpop_proof_malformed`) for two `DPoP` headers (an array of several,
 *   or values joined by a comma): RFC 9449 §4.3 check 1.
 */
export function readDpopProofHeader(values: string | readonly string[] | undefined): string {
  let value = values;
  if (typeof value !== 'string') {
    if (value === undefined || value.length === 0) throw missingProof();
    if (value.length > 1) throw twoProofs();
    value = value[0] as string;
  }
  if (value.length === 0) throw missingProof();
  // A proof is one compact JWS, which holds no comma; Node and proxies join repeated headers with ", ".
  if (value.includes(',')) throw twoProofs();
  return value;
}

/**
 * Checks a DPoP proof presented with an access token at this resource (RFC 9449 §4.3, §7), in this order: a single
 * well-formed JWS; `typ` is `dpop+jwt`; `alg` is asymmetric and allowed; the `jwk` header is a public key (no
 * private or symmetric material); the signature verifies with that key (jose's `EmbeddedJWK`); `jti`, `htm`, `htu`
 * and `iat` are present; `htm` is the request method; `htu` is the resource; `iat` is at most
 * {@link DPOP_PROOF_WINDOW_SECONDS} plus the clock tolerance in the past, and at most the clock tolerance in the
 * future; `ath` is the token's hash.
 *
 * Not checked here: that the token is bound to the proof's key (compare `cnf.jkt` with the returned `thumbprint`)
 * and that `jti` was not seen before (claim it in a {@link ReplayCache} once everything else passed). A `nonce`
 * claim is ignored: this resource never issues `DPoP-Nonce` (RFC 9449 §9 makes it optional).
 *
 * @param proof - The `DPoP` header value, see {@link readDpopProofHeader}.
 * @returns The proof's `jti`, when it expires, and its key's thumbprint.
 * @throws InvalidRequestError (400, reason `dpop_proof_malformed`) when the value is not a compact JWS with JSON
 *   header and claims (RFC 9449 §4.3 check 2). An unsigned one (`alg: none`, empty signature) is well formed, and
 *   refused as invalid.
 * @throws InvalidDpopProofError (401, reason `dpop_proof_invalid`) for any failed check; the message says which.
 */
export async function verifyDpopProof(proof: string, expected: DpopProofExpectations): Promise<VerifiedDpopProof> {
  const algorithms = expected.algorithms ?? DPOP_SIGNING_ALGORITHMS;
  const tolerance = expected.clockToleranceSeconds ?? DEFAULT_CLOCK_TOLERANCE_SECONDS;
  const nowSeconds = (expected.now ?? Date.now)() / 1000;

  if (proof.length > MAX_DPOP_PROOF_LENGTH || !COMPACT_JWS.test(proof)) throw malformed();
  let header: ReturnType<typeof decodeProtectedHeader>;
  try {
    header = decodeProtectedHeader(proof);
    decodeJwt(proof);
  } catch {
    throw malformed();
  }

  if (typeof header.typ !== 'string' || joseHeaderType(header.typ) !== 'dpop+jwt') {
    throw invalid('DPoP proof must declare typ "dpop+jwt" (RFC 9449 section 4.2)');
  }
  if (typeof header.alg !== 'string' || !algorithms.includes(header.alg)) {
    throw invalid(`DPoP proof must be signed with an asymmetric algorithm: one of ${algorithms.join(', ')} (RFC 9449 section 4.2)`);
  }
  const jwk = header.jwk as Record<string, unknown> | undefined;
  if (typeof jwk !== 'object' || jwk === null || Array.isArray(jwk)) {
    throw invalid('DPoP proof must carry its public key in the "jwk" header (RFC 9449 section 4.2)');
  }
  if (jwk['kty'] === 'oct' || PRIVATE_JWK_MEMBERS.some((member) => jwk[member] !== undefined)) {
    throw invalid('DPoP proof "jwk" header must hold a public key only, never private or symmetric key material (RFC 9449 section 4.2)');
  }

  let claims: Record<string, unknown>;
  try {
    claims = (await jwtVerify(proof, EmbeddedJWK, { algorithms: [...algorithms] })).payload;
  } catch (error) {
    const code = (error as { code?: unknown } | null)?.code;
    if (code === 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED') throw invalid('DPoP proof signature is invalid', error);
    if (code === 'ERR_JWT_EXPIRED') throw invalid('DPoP proof expired (exp)', error);
    throw invalid('DPoP proof cannot be verified with its "jwk" header key', error);
  }

  const { jti, htm, htu, iat, ath } = claims;
  if (typeof jti !== 'string' || jti.length === 0 || jti.length > MAX_DPOP_JTI_LENGTH) {
    throw invalid(`DPoP proof must carry a "jti" of 1 to ${MAX_DPOP_JTI_LENGTH} characters (RFC 9449 section 4.2)`);
  }
  if (typeof htm !== 'string' || typeof htu !== 'string' || typeof iat !== 'number' || !Number.isFinite(iat)) {
    throw invalid('DPoP proof must carry "htm", "htu" and a numeric "iat" (RFC 9449 section 4.2)');
  }
  if (htm !== expected.method) {
    throw invalid(`DPoP proof "htm" does not match the request method ${expected.method} (RFC 9449 section 4.3)`);
  }
  if (!namesResource(htu, expected.resource)) {
    throw invalid(`DPoP proof "htu" does not name this resource, ${expected.resource} (RFC 9449 section 4.3)`);
  }
  const window = DPOP_PROOF_WINDOW_SECONDS + tolerance;
  if (nowSeconds - iat > window) {
    throw invalid(`DPoP proof "iat" is more than ${window} seconds old; send a fresh proof (RFC 9449 section 11.1)`);
  }
  if (iat - nowSeconds > tolerance) {
    throw invalid(`DPoP proof "iat" is more than ${tolerance} seconds ahead of the server's time; send a proof dated now, from a synchronized clock (RFC 9449 section 11.1)`);
  }
  if (typeof ath !== 'string' || ath !== accessTokenHash(expected.accessToken)) {
    throw invalid('DPoP proof "ath" does not match the access token (RFC 9449 section 4.3)');
  }

  let thumbprint: string;
  try {
    thumbprint = await calculateJwkThumbprint(jwk as JWK, 'sha256');
  } catch (error) {
    throw invalid('DPoP proof cannot be verified with its "jwk" header key', error);
  }
  return { jti, expiresAtMs: Math.ceil((iat + window) * 1000), thumbprint };
}

/** RFC 9449 §4.1 `ath`: base64url of the SHA-256 of the token's ASCII characters. */
export function accessTokenHash(accessToken: string): string {
  // RFC 9449's `ath` is the same base64url SHA-256 the caches key tokens by.
  return tokenDigest(accessToken);
}

/**
 * Whether `htu` names `resource`: the same origin (URL normalization makes scheme and host lowercase and drops a
 * default port, RFC 3986 §6.2.2–6.2.3) and path, with or without one trailing slash; query and fragment ignored.
 */
function namesResource(htu: string, resource: string): boolean {
  let url: URL;
  try {
    url = new URL(htu);
  } catch {
    return false;
  }
  const target = new URL(resource);
  if (url.origin !== target.origin || url.username !== '' || url.password !== '') return false;
  return trimSlash(url.pathname) === trimSlash(target.pathname);
}

function trimSlash(path: string): string {
  return path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path;
}

function invalid(message: string, cause?: unknown): InvalidDpopProofError {
  return new InvalidDpopProofError(message, 'dpop_proof_invalid', cause);
}

function malformed(): InvalidRequestError {
  return new InvalidRequestError('DPoP header is not a well-formed DPoP proof: expected one compact JWS (RFC 9449 section 4.3)', 'dpop_proof_malformed');
}

function missingProof(): InvalidDpopProofError {
  return new InvalidDpopProofError('A DPoP-bound access token needs a DPoP proof: send it in the DPoP header (RFC 9449 section 7)', 'dpop_proof_missing');
}

function twoProofs(): InvalidRequestError {
  return new InvalidRequestError('Send exactly one DPoP header (RFC 9449 section 4.3)', 'dpop_proof_malformed');
}
