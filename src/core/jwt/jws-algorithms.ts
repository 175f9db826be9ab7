/**
 * The one table of JWS algorithms the guard knows, for access tokens and DPoP proofs: for each, the key that
 * verifies it, whether it is accepted by default, and how `node:crypto` checks its signature. The supported list,
 * the defaults, the key types and the synchronous verification all derive from it.
 *
 * Asymmetric only: a symmetric `HS*` key would let anyone holding it mint tokens, and `none` is no signature
 * (RFC 8725 §3.1).
 */

/** The kind of public key that verifies a JWS algorithm: its JWK `kty` and, for EC and OKP keys, its `crv`. */
export interface JwsKeyType {
  readonly kty: string;
  readonly crv?: string;
}

/**
 * How a JWS signature is checked synchronously: what jose requires of the key (`checkCryptoKey`,
 * `checkModulusLength`), and the `node:crypto` parameters of `crypto.verify`.
 */
export interface JwsSignatureCheck {
  /** The WebCrypto algorithm the key must have been imported for (jose's `checkCryptoKey`). */
  readonly name: 'RSASSA-PKCS1-v1_5' | 'RSA-PSS' | 'ECDSA' | 'Ed25519';
  /** The key's WebCrypto hash (RSA keys are bound to one), when jose checks it. */
  readonly keyHash?: string;
  /** The key's curve (ECDSA), when jose checks it. */
  readonly namedCurve?: string;
  /** The digest for `crypto.verify`; `null` for EdDSA, which hashes internally. */
  readonly digest: string | null;
  /** RSA-PSS salt length in bytes: RFC 7518 §3.5 fixes it to the hash size. */
  readonly saltLength?: number;
  /** RSA keys below this size are refused (RFC 7518 §3.3, jose's `checkModulusLength`). */
  readonly minRsaBits?: number;
}

/** One JWS algorithm of {@link JWS_ALGORITHMS}. */
export interface JwsAlgorithm {
  /** The key it needs, as jose's key set selects keys for a token's `alg`: a key of another `kty` or `crv` is never tried. */
  readonly key: JwsKeyType;
  /** Whether it is accepted when `algorithms` is not set. */
  readonly byDefault: boolean;
  /** How `node:crypto` checks its signature; absent: left to jose (ML-DSA, which Node 20 cannot verify). */
  readonly signature?: JwsSignatureCheck;
}

const rsa = (bits: number): JwsAlgorithm => ({
  key: { kty: 'RSA' },
  byDefault: true,
  signature: { name: 'RSASSA-PKCS1-v1_5', keyHash: `SHA-${bits}`, digest: `sha${bits}`, minRsaBits: 2048 },
});
const pss = (bits: number): JwsAlgorithm => ({
  key: { kty: 'RSA' },
  byDefault: true,
  signature: { name: 'RSA-PSS', keyHash: `SHA-${bits}`, digest: `sha${bits}`, saltLength: bits / 8, minRsaBits: 2048 },
});
const ecdsa = (curve: string, bits: number): JwsAlgorithm => ({
  key: { kty: 'EC', crv: curve },
  byDefault: true,
  signature: { name: 'ECDSA', namedCurve: curve, digest: `sha${bits}` },
});
/** `EdDSA` means Ed25519 only, in jose 6 too (RFC 9864 deprecates the polymorphic name). */
const ed25519: JwsAlgorithm = { key: { kty: 'OKP', crv: 'Ed25519' }, byDefault: true, signature: { name: 'Ed25519', digest: null } };
/** Opt-in: post-quantum keys are new to authorization servers, and jose verifies them itself. */
const mlDsa: JwsAlgorithm = { key: { kty: 'AKP' }, byDefault: false };

/**
 * Every asymmetric JWS algorithm jose 6 verifies (its `lib/jws_algorithms.js`), in the order lists show them:
 * RFC 7518 §3.3–3.5 (`RS*`, `PS*`, `ES*`), RFC 8037 `EdDSA`, RFC 9864 `Ed25519`, and ML-DSA (`AKP` keys).
 */
export const JWS_ALGORITHMS: Readonly<Record<string, JwsAlgorithm>> = Object.freeze({
  RS256: rsa(256),
  RS384: rsa(384),
  RS512: rsa(512),
  PS256: pss(256),
  PS384: pss(384),
  PS512: pss(512),
  ES256: ecdsa('P-256', 256),
  ES384: ecdsa('P-384', 384),
  ES512: ecdsa('P-521', 512),
  EdDSA: ed25519,
  Ed25519: ed25519,
  'ML-DSA-44': mlDsa,
  'ML-DSA-65': mlDsa,
  'ML-DSA-87': mlDsa,
});

/** Every algorithm of `JWS_ALGORITHMS`. Anything else is a typo. */
export const SUPPORTED_JWS_ALGORITHMS: readonly string[] = Object.freeze(Object.keys(JWS_ALGORITHMS));

/** Accepted when `algorithms` is not set: every supported algorithm but ML-DSA (opt-in). */
export const DEFAULT_JWT_ALGORITHMS: readonly string[] = Object.freeze(SUPPORTED_JWS_ALGORITHMS.filter((alg) => JWS_ALGORITHMS[alg]!.byDefault));

/** The key each supported algorithm needs (RFC 7518 §6, RFC 8037 §2, RFC 9864, ML-DSA's `AKP`). */
export const JWS_KEY_TYPES: Readonly<Record<string, JwsKeyType>> = Object.freeze(
  Object.fromEntries(Object.entries(JWS_ALGORITHMS).map(([alg, algorithm]) => [alg, algorithm.key])),
);

const SUPPORTED = new Set(SUPPORTED_JWS_ALGORITHMS);

/** Whether `alg` is one of {@link SUPPORTED_JWS_ALGORITHMS} (exact, case-sensitive, as JOSE compares). */
export function isSupportedJwsAlgorithm(alg: unknown): alg is string {
  return typeof alg === 'string' && SUPPORTED.has(alg);
}
