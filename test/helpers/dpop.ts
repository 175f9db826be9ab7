import { createHash, randomBytes } from 'node:crypto';
import { calculateJwkThumbprint, exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK } from 'jose';

/** A client's DPoP key pair, with the public JWK and its RFC 7638 thumbprint (`cnf.jkt`). */
export interface DpopKey {
  alg: string;
  privateKey: CryptoKey;
  publicJwk: JWK;
  thumbprint: string;
}

/** Makes a DPoP key pair (extractable, so a test can put the private key where it must not be). */
export async function makeDpopKey(alg = 'ES256'): Promise<DpopKey> {
  const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true });
  const publicJwk = await exportJWK(publicKey);
  return { alg, privateKey, publicJwk, thumbprint: await calculateJwkThumbprint(publicJwk, 'sha256') };
}

/** What {@link signDpopProof} puts in a proof; each field overrides one default, `undefined` leaves it out. */
export interface ProofParts {
  htm?: string;
  htu?: string;
  /** The token whose hash becomes `ath`. */
  token?: string;
  claims?: Record<string, unknown>;
  header?: Record<string, unknown>;
}

/**
 * Signs a DPoP proof (RFC 9449 §4.2) with jose: `typ` `dpop+jwt`, the public key in `jwk`, a fresh `jti`, `iat`
 * now, `htm`, `htu` and `ath`. `claims` and `header` override any of these (a value `undefined` removes it).
 */
export async function signDpopProof(key: DpopKey, parts: ProofParts = {}): Promise<string> {
  const claims: Record<string, unknown> = {
    jti: randomBytes(16).toString('base64url'),
    iat: Math.floor(Date.now() / 1000),
    htm: parts.htm ?? 'POST',
    htu: parts.htu,
    ...(parts.token === undefined ? {} : { ath: createHash('sha256').update(parts.token, 'ascii').digest('base64url') }),
    ...parts.claims,
  };
  const header: Record<string, unknown> = { alg: key.alg, typ: 'dpop+jwt', jwk: key.publicJwk, ...parts.header };
  for (const [k, v] of Object.entries(claims)) if (v === undefined) delete claims[k];
  for (const [k, v] of Object.entries(header)) if (v === undefined) delete header[k];
  return new SignJWT(claims).setProtectedHeader(header as { alg: string }).sign(key.privateKey);
}
