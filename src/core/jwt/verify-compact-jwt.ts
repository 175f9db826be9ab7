/**
 * jose's `jwtVerify` for compact JWTs, with the signature checked synchronously by `node:crypto`
 * ({@link verifyJwsSignature}, which says why) instead of WebCrypto. Everything else is jose's, or follows it
 * step by step (jose 6, `lib/jws_verify.js` and `jwt/verify.js`): the same checks in the same order, the same
 * error classes and codes, so that a token gets the same verdict, and a refused token the same reason, either
 * way. `test/core/jwt/verify-compact-jwt.test.ts` runs generated tokens through both and compares.
 *
 * - The claims are checked as jose checks them ({@link checkJwtClaims}), once the signature checked out.
 * - Base64url decoding gives jose's results (`base64url.decode`, or `Buffer` where both read the same), so
 *   that exactly the same encodings are accepted.
 * - Algorithms not verified synchronously (ML-DSA) go to jose's `jwtVerify` unchanged.
 *
 * ## The JWT fast path (this folder)
 *
 * `src/core/jwt/` re-implements the part of jose's `jwtVerify` the guard uses: this file (the JWS steps),
 * `jws-signature.ts` (the key checks and the signature), `jwt-claim-checks.ts` (the claims) and
 * `jws-algorithms.ts` (the one algorithm table). It follows **jose 6.2.18**, the version `package.json` pins
 * exactly, so that an upgrade is a deliberate change. On a jose upgrade, re-read against the new version, in
 * `jose/dist/webapi/`:
 * - `jws/flattened/verify.js` and `jwt/verify.js`: the order of the checks, the error classes, codes and messages;
 * - `lib/jwt_claims_set.js` (`validateClaimsSet`): the claim checks, the clock tolerance, `requiredClaims`;
 * - `lib/jws_algorithms.js` and `lib/key.js` (`checkCryptoKey`, the RSA modulus length): the algorithm table,
 *   the key checks and their messages;
 * - `lib/buffer_utils.js` and `util/base64url.js`: which base64url and UTF-8 the decoder accepts;
 * then run the differential test (`test/core/jwt/verify-compact-jwt.test.ts`), which gives generated tokens to both
 * and compares the verdicts, and change the version named here.
 */
import { base64url, errors, jwtVerify, type CryptoKey, type FlattenedJWSInput, type JWTHeaderParameters, type JWTPayload } from 'jose';
import { verifiesSynchronously, verifyJwsSignature } from './jws-signature.js';
import { checkJwtClaims, checkJwtClaimsSet, isPlainObject, parseJwtClaims, strictUtf8, type JwtClaimOptions } from './jwt-claim-checks.js';

/** Resolves the verification key from the protected header, as jose's `JWTVerifyGetKey` (CryptoKeys only). */
export type CompactJwtKeyResolver = (protectedHeader: JWTHeaderParameters, token: FlattenedJWSInput) => Promise<CryptoKey>;

/**
 * The options of {@link verifyCompactJwt}: those of jose's `JWTVerifyOptions` the guard uses. No `crit`: no
 * extension beyond `b64` is recognized, as when jose is given none; no `typ`: the caller checks it.
 */
export interface CompactJwtVerifyOptions extends JwtClaimOptions {
  /** Accepted `alg` values (exact). Default: any jose supports. */
  algorithms?: string[];
}

/** A verified JWT: what `jwtVerify` returns, less the key. */
export interface VerifiedCompactJwt {
  payload: JWTPayload;
  protectedHeader: JWTHeaderParameters;
}

const NON_ASCII = /[^\x00-\x7f]/;
const BASE64URL = /^[A-Za-z0-9_-]*$/;

/** Unpadded base64url text, of a length that decodes: what every base64url decoder reads the same way. */
function isPlainBase64url(segment: string): boolean {
  return segment.length % 4 !== 1 && BASE64URL.test(segment);
}

/**
 * jose's base64url decoding, faster: for plain base64url text (every token a real issuer signs), `Buffer`'s
 * decoder gives exactly the bytes jose's does, several times faster (jose's runs `atob` and copies byte by
 * byte on Node 20). Anything else (padding, whitespace, other characters) goes to jose's decoder, which accepts
 * or refuses it as it always does.
 */
function decodeBase64url(segment: string): Uint8Array {
  return isPlainBase64url(segment) ? Buffer.from(segment, 'base64url') : base64url.decode(segment);
}

function decodeSegment(segment: string, label: string): Uint8Array {
  try {
    return decodeBase64url(segment);
  } catch (cause) {
    throw new errors.JWSInvalid(`Failed to base64url decode the ${label}`, { cause });
  }
}

/**
 * Protected headers parsed lately, frozen, by their encoded segment: an issuer signs every token with the same
 * header (`alg`, `kid`, `typ`), so a new token's header costs a lookup instead of a decoding and a parse. A header
 * holds no secret, and the keys are copies of it, never slices of a token. At most {@link RECENT_HEADERS} of at most {@link RECENT_HEADER_LENGTH} characters; when full it
 * starts again, so junk headers can only make it miss.
 */
const recentHeaders = new Map<string, JWTHeaderParameters>();
const RECENT_HEADERS = 16;
const RECENT_HEADER_LENGTH = 512;

function parseProtectedHeader(segment: string): JWTHeaderParameters {
  const recent = recentHeaders.get(segment);
  if (recent !== undefined) return recent;
  let parsed: unknown;
  try {
    parsed = JSON.parse(strictUtf8.decode(decodeBase64url(segment)));
  } catch (cause) {
    throw new errors.JWSInvalid('JWS Protected Header is invalid', { cause });
  }
  if (!isPlainObject(parsed)) throw new errors.JWSInvalid('JWS Protected Header is invalid');
  const header = Object.freeze(parsed) as JWTHeaderParameters;
  if (segment.length <= RECENT_HEADER_LENGTH) {
    if (recentHeaders.size >= RECENT_HEADERS) recentHeaders.clear();
    // `segment` is a slice of the token, and V8 keeps a slice's whole parent string alive: the key is a copy,
    // so that no token outlives its request here.
    recentHeaders.set(Buffer.from(segment, 'latin1').toString('latin1'), header);
  }
  return header;
}

/**
 * RFC 7515 §4.1.11 as jose applies it with no extension of the caller's: `crit`, when present, lists
 * non-empty names of parameters the header carries; `b64` (RFC 7797) is the only one understood, any other is
 * `JOSENotSupported`. Returns whether the payload is base64url-encoded (`b64`, true unless listed and false).
 */
function checkCritical(header: JWTHeaderParameters): boolean {
  const { crit } = header;
  if (crit === undefined) return true;
  if (!Array.isArray(crit) || crit.length === 0 || crit.some((name) => typeof name !== 'string' || name.length === 0)) {
    throw new errors.JWSInvalid('"crit" (Critical) Header Parameter MUST be an array of non-empty strings when present');
  }
  for (const name of crit as string[]) {
    if (name !== 'b64') throw new errors.JOSENotSupported(`Extension Header Parameter "${name}" is not recognized`);
    if (!Object.hasOwn(header, name) || header[name] === undefined) throw new errors.JWSInvalid(`Extension Header Parameter "${name}" is missing`);
  }
  if (typeof header.b64 !== 'boolean') throw new errors.JWSInvalid('The "b64" (base64url-encode payload) Header Parameter must be a boolean');
  return header.b64;
}

function asciiBytes(text: string, message: string): Buffer {
  if (NON_ASCII.test(text)) throw new errors.JWSInvalid(message);
  return Buffer.from(text, 'latin1');
}

/** A compact JWS split and its protected header checked: everything jose checks before it needs the key. */
interface CheckedCompactJws {
  readonly header: JWTHeaderParameters;
  readonly alg: string;
  readonly b64: boolean;
  readonly encodedHeader: string;
  readonly payloadSegment: string;
  readonly encodedSignature: string;
}

/** jose's checks up to the key, in jose's order: three segments, the header, `crit`, `alg` and its being allowed. */
function checkBeforeKey(token: string, options: CompactJwtVerifyOptions, peeked: PeekedJwtClaims | undefined): CheckedCompactJws {
  if (typeof token !== 'string') throw new errors.JWSInvalid('Compact JWS must be a string or Uint8Array');
  // The peek split this very token already.
  const { 0: encodedHeader, 1: payloadSegment, 2: encodedSignature, length } = peeked?.token === token ? peeked.segments : token.split('.');
  if (length !== 3) throw new errors.JWSInvalid('Invalid Compact JWS');
  const header = parseProtectedHeader(encodedHeader as string);
  const b64 = checkCritical(header);
  const { alg } = header;
  if (typeof alg !== 'string' || !alg) throw new errors.JWSInvalid('JWS "alg" (Algorithm) Header Parameter missing or invalid');
  const { algorithms } = options;
  if (algorithms !== undefined && !algorithms.includes(alg)) throw new errors.JOSEAlgNotAllowed('"alg" (Algorithm) Header Parameter value not allowed');
  return { header, alg, b64, encodedHeader: encodedHeader as string, payloadSegment: payloadSegment as string, encodedSignature: encodedSignature as string };
}

/** The check jose makes of an unencoded payload (RFC 7797) before the key: it is still signed as its ASCII bytes. */
function checkUnencodedPayload(jws: CheckedCompactJws): void {
  if (!jws.b64 && NON_ASCII.test(jws.payloadSegment)) throw new errors.JWSInvalid('JWS Compact Serialization payload must use only ASCII characters');
}

/** jose's checks from the key on: the signature, then the claims. */
function checkWithKey(token: string, jws: CheckedCompactJws, key: CryptoKey, options: CompactJwtVerifyOptions, peeked: PeekedJwtClaims | undefined): VerifiedCompactJwt {
  const signingInput = asciiBytes(token.slice(0, jws.encodedHeader.length + 1 + jws.payloadSegment.length), 'The payload is not a valid base64url string');
  const signature = decodeSegment(jws.encodedSignature, 'signature');
  if (!verifyJwsSignature(jws.alg, key, signingInput, signature)) throw new errors.JWSSignatureVerificationFailed();
  if (!jws.b64) throw new errors.JWTInvalid('JWTs MUST NOT use unencoded payload');
  // The signature covers the payload segment the peek parsed, so its claims are this token's verified claims.
  const payload = peeked?.token === token ? checkJwtClaimsSet(peeked.claims, options) : checkJwtClaims(decodeSegment(jws.payloadSegment, 'payload'), options);
  return { payload, protectedHeader: jws.header };
}

/**
 * Verifies a compact JWS JWT as jose's `jwtVerify(token, key, options)` would, signature by `node:crypto`.
 *
 * @param key - The verification key, or a resolver called with the protected header (after the header checks
 *   and before the signature, as jose calls it).
 * @throws jose's errors (`JWSInvalid`, `JWTInvalid`, `JOSEAlgNotAllowed`, `JOSENotSupported`,
 *   `JWSSignatureVerificationFailed`, `JWTClaimValidationFailed`, `JWTExpired`), the resolver's, and a
 *   `TypeError` for a key that does not fit the algorithm: whatever `jwtVerify` throws for the same token.
 */
export async function verifyCompactJwt(
  token: string,
  key: CryptoKey | CompactJwtKeyResolver,
  options: CompactJwtVerifyOptions,
  peeked?: PeekedJwtClaims,
): Promise<VerifiedCompactJwt> {
  const jws = checkBeforeKey(token, options, peeked);
  // Nothing so far depends on the key: jose repeats the same checks and then verifies as it always has.
  if (!verifiesSynchronously(jws.alg)) return jwtVerify(token, key, options);
  checkUnencodedPayload(jws);
  const verificationKey = typeof key === 'function' ? await key(jws.header, { payload: jws.payloadSegment, protected: jws.encodedHeader, signature: jws.encodedSignature }) : key;
  return checkWithKey(token, jws, verificationKey, options, peeked);
}

/**
 * {@link verifyCompactJwt} with no promise, for when the key is at hand: the same checks in the same order, and
 * the same errors, thrown. `undefined` when it cannot decide without waiting: `knownKey` has no key for the
 * header (it must be fetched), or the algorithm is one only jose verifies. Then call `verifyCompactJwt`.
 *
 * @param knownKey - The key for a protected header, when known without waiting.
 * @example
 * const verified = verifyCompactJwtNow(token, keySet.known, options) ?? (await verifyCompactJwt(token, keySet, options));
 */
export function verifyCompactJwtNow(
  token: string,
  knownKey: (protectedHeader: JWTHeaderParameters) => CryptoKey | undefined,
  options: CompactJwtVerifyOptions,
  peeked?: PeekedJwtClaims,
): VerifiedCompactJwt | undefined {
  const jws = checkBeforeKey(token, options, peeked);
  if (!verifiesSynchronously(jws.alg)) return undefined;
  checkUnencodedPayload(jws);
  const key = knownKey(jws.header);
  return key === undefined ? undefined : checkWithKey(token, jws, key, options, peeked);
}

/** A JWT's claims read before its signature is checked, by {@link peekJwtClaims}, with the token they came from. */
export interface PeekedJwtClaims {
  readonly token: string;
  /** Unverified: for choosing how to verify (which issuer) only, until {@link verifyCompactJwt} has checked them. */
  readonly claims: JWTPayload;
  /** The token's three segments (slices of it: kept no longer than the token itself). */
  readonly segments: readonly string[];
}

/**
 * The unverified claims of a compact JWT, decoded and parsed exactly as {@link verifyCompactJwt} decodes and
 * parses them once the signature checked out. Handing the result to `verifyCompactJwt` saves a second decoding
 * and parsing of the payload (a few KB for real providers' tokens, a measurable share of a verification).
 *
 * @throws jose's `JWSInvalid` (not three segments, payload not base64url) or `JWTInvalid` (not a JSON object).
 * @example
 * const peeked = peekJwtClaims(token);
 * const issuer = trusted.get(String(peeked.claims.iss)); // then: verifyCompactJwt(token, key, options, peeked)
 */
export function peekJwtClaims(token: string): PeekedJwtClaims {
  const segments = token.split('.');
  if (segments.length !== 3) throw new errors.JWSInvalid('Invalid Compact JWS');
  return { token, claims: parseJwtClaims(decodeSegment(segments[1] as string, 'payload')), segments };
}
