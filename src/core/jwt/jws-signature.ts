/**
 * A JWS signature check done synchronously with `node:crypto`, with the key checks jose makes first.
 *
 * Why: jose 6 verifies with WebCrypto (`crypto.subtle.verify`), which queues every check on the libuv thread
 * pool and resolves a promise when it is done. Measured on one CPU (the benchmark pins the server), that hop
 * cost about as much CPU time again as the ES256 verification itself (about 160 µs against 100-120 µs for the
 * same check with `crypto.verify`), and a server with a new token on every request spent it on every request.
 * `crypto.verify` runs the same OpenSSL code on the calling thread, with no queue and no promise.
 */
import { constants, KeyObject, verify, type VerifyKeyObjectInput, type webcrypto } from 'node:crypto';
import type { CryptoKey } from 'jose';
import { JWS_ALGORITHMS, type JwsSignatureCheck } from './jws-algorithms.js';

/**
 * The algorithms checked here: those of the one algorithm table with a `signature` check. Others (ML-DSA, which
 * Node 20 cannot verify) are left to jose. A `Map`, so that no `alg` from a token reaches an object's prototype.
 */
const ALGORITHMS: ReadonlyMap<string, JwsSignatureCheck> = new Map(
  Object.entries(JWS_ALGORITHMS).flatMap(([alg, { signature }]) => (signature === undefined ? [] : [[alg, signature] as const])),
);

/** Whether {@link verifyJwsSignature} handles `alg`. */
export function verifiesSynchronously(alg: string): boolean {
  return ALGORITHMS.has(alg);
}

/**
 * What `crypto.verify` is given for each `CryptoKey` (its `KeyObject`, with the signature encoding or the
 * padding), made once: jose's key set imports each JWK once and hands out the same `CryptoKey` after that,
 * so a key costs one conversion, and a key dropped from the set is collected. A `CryptoKey` is bound to one
 * algorithm family and hash (checked by {@link checkKey} before every use), so one entry per key suffices.
 */
const verificationKeys = new WeakMap<CryptoKey, KeyObject | VerifyKeyObjectInput>();

function verificationKeyOf(key: CryptoKey, algorithm: JwsSignatureCheck): KeyObject | VerifyKeyObjectInput {
  let input = verificationKeys.get(key);
  if (input === undefined) {
    const keyObject = KeyObject.from(key as webcrypto.CryptoKey);
    input =
      algorithm.name === 'ECDSA'
        ? // JOSE signatures are r||s (RFC 7518 §3.4), not DER.
          { key: keyObject, dsaEncoding: 'ieee-p1363' }
        : algorithm.name === 'RSA-PSS'
          ? { key: keyObject, padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: algorithm.saltLength as number }
          : keyObject;
    verificationKeys.set(key, input);
  }
  return input;
}

function unusable(expected: string, property = 'algorithm.name'): TypeError {
  return new TypeError(`CryptoKey does not support this operation, its ${property} must be ${expected}`);
}

/**
 * The checks jose makes of a resolved key before it verifies (`prepareKey`, `checkCryptoKey`,
 * `checkModulusLength`), with jose's messages: a key of another type, curve, hash or usage, or an RSA key
 * under 2048 bits, is a `TypeError`, never a failed signature.
 */
function checkKey(alg: string, algorithm: JwsSignatureCheck, key: CryptoKey): void {
  const tag = (key as { [Symbol.toStringTag]?: unknown } | null)?.[Symbol.toStringTag];
  if (tag !== 'CryptoKey') throw new TypeError(`Key for the ${alg} algorithm must be of type CryptoKey`);
  if (key.type !== 'public' && ['secret', 'public', 'private'].includes(key.type)) {
    throw new TypeError(`CryptoKey instances must be of type "public" for the ${alg} algorithm`);
  }
  const keyAlgorithm = key.algorithm as { name: string; hash?: { name?: string }; namedCurve?: string; modulusLength?: unknown };
  if (keyAlgorithm.name !== algorithm.name) throw unusable(algorithm.name);
  if (algorithm.keyHash !== undefined && keyAlgorithm.hash?.name !== algorithm.keyHash) throw unusable(algorithm.keyHash, 'algorithm.hash');
  if (algorithm.namedCurve !== undefined && keyAlgorithm.namedCurve !== algorithm.namedCurve) throw unusable(algorithm.namedCurve, 'algorithm.namedCurve');
  if (!key.usages.includes('verify')) throw new TypeError('CryptoKey does not support this operation, its usages must include verify.');
  if (algorithm.minRsaBits !== undefined) {
    const { modulusLength } = keyAlgorithm;
    if (typeof modulusLength !== 'number' || modulusLength < algorithm.minRsaBits) {
      throw new TypeError(`${alg} requires key modulusLength to be 2048 bits or larger`);
    }
  }
}

/**
 * Checks a JWS signature over `signingInput` (the ASCII `header.payload`) with `key`, synchronously.
 *
 * @returns whether the signature is valid; `false` as well when `crypto.verify` throws on it (a signature of
 *   the wrong length, say), as jose answers a WebCrypto failure with a failed signature.
 * @throws TypeError when the key does not fit `alg` (jose's checks and messages), or `alg` is not one of
 *   {@link verifiesSynchronously}'s.
 */
export function verifyJwsSignature(alg: string, key: CryptoKey, signingInput: Uint8Array, signature: Uint8Array): boolean {
  const algorithm = ALGORITHMS.get(alg);
  if (algorithm === undefined) throw new TypeError(`${alg} is not verified synchronously`);
  checkKey(alg, algorithm, key);
  const input = verificationKeyOf(key, algorithm);
  try {
    return verify(algorithm.digest, signingInput, input, signature);
  } catch {
    return false;
  }
}
