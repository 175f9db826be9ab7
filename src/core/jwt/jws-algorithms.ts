/**
 * The one list of JWS algorithms the guard knows, for access tokens and DPoP proofs. Asymmetric only: a
 * symmetric `HS*` key would let anyone holding it mint tokens, and `none` is no signature (RFC 8725 §3.1).
 */

/**
 * Accepted when `algorithms` is not set: RFC 7518 §3.3–3.5 (`RS*`, `PS*`, `ES*`), RFC 8037 `EdDSA`,
 * RFC 9864 `Ed25519`.
 */
export const DEFAULT_JWT_ALGORITHMS: readonly string[] = Object.freeze([
  'RS256', 'RS384', 'RS512',
  'PS256', 'PS384', 'PS512',
  'ES256', 'ES384', 'ES512',
  'EdDSA', 'Ed25519',
]);

/** Every asymmetric JWS algorithm jose 6 verifies: the defaults plus ML-DSA (opt-in). Anything else is a typo. */
export const SUPPORTED_JWS_ALGORITHMS: readonly string[] = Object.freeze([...DEFAULT_JWT_ALGORITHMS, 'ML-DSA-44', 'ML-DSA-65', 'ML-DSA-87']);

const SUPPORTED = new Set(SUPPORTED_JWS_ALGORITHMS);

/** Whether `alg` is one of {@link SUPPORTED_JWS_ALGORITHMS} (exact, case-sensitive, as JOSE compares). */
export function isSupportedJwsAlgorithm(alg: unknown): alg is string {
  return typeof alg === 'string' && SUPPORTED.has(alg);
}

/** The kind of public key that verifies a JWS algorithm: its JWK `kty` and, for EC and OKP keys, its `crv`. */
export interface JwsKeyType {
  readonly kty: string;
  readonly crv?: string;
}

/**
 * The key each supported algorithm needs (RFC 7518 §3.3–3.5 and §6, RFC 8037 §2, RFC 9864, ML-DSA's `AKP`), as
 * jose's key set selects keys for a token's `alg`: a key of another `kty` or `crv` is never tried.
 */
export const JWS_KEY_TYPES: Readonly<Record<string, JwsKeyType>> = Object.freeze({
  RS256: { kty: 'RSA' }, RS384: { kty: 'RSA' }, RS512: { kty: 'RSA' },
  PS256: { kty: 'RSA' }, PS384: { kty: 'RSA' }, PS512: { kty: 'RSA' },
  ES256: { kty: 'EC', crv: 'P-256' }, ES384: { kty: 'EC', crv: 'P-384' }, ES512: { kty: 'EC', crv: 'P-521' },
  EdDSA: { kty: 'OKP', crv: 'Ed25519' }, Ed25519: { kty: 'OKP', crv: 'Ed25519' },
  'ML-DSA-44': { kty: 'AKP' }, 'ML-DSA-65': { kty: 'AKP' }, 'ML-DSA-87': { kty: 'AKP' },
});
