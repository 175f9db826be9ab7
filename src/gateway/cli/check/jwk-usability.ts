import { JWS_KEY_TYPES } from '../../../core/jwt/jws-algorithms.js';

/** Longest member value shown, in characters: keys come from the network. */
const MAX_SHOWN_LENGTH = 80;
/** Smallest RSA modulus jose accepts, in bits. */
const MIN_RSA_BITS = 2048;

/** One key of a JWKS, as `check` shows it. */
export interface KeyUsability {
  /** `kid "…" kty … crv … alg … use …`, the members present. */
  readonly description: string;
  /** The allowed algorithms the key can verify tokens of; empty when it can verify none. */
  readonly algorithms: readonly string[];
  /** Why it can verify none, when it cannot. */
  readonly reason?: string;
}

/**
 * Which of the `allowed` algorithms a JWK can verify, by the rules jose applies when it picks a key for a token's
 * `alg`: a matching `kty` (and `crv` for EC and OKP keys), `use` absent or `sig`, `key_ops` absent or with
 * `verify`, and `alg`, when the key names one, equal to the token's (an `AKP` key must name it). An RSA key shorter
 * than 2 048 bits is refused by jose when it is imported, and a symmetric (`oct`) key never verifies a token here.
 */
export function assessKey(jwk: Readonly<Record<string, unknown>>, allowed: readonly string[]): KeyUsability {
  const description = describeKey(jwk);
  const unusable = (reason: string): KeyUsability => ({ description, algorithms: [], reason });
  const { kty, crv, use, alg } = jwk;
  const keyOps = jwk['key_ops'];
  if (kty === 'oct') return unusable('a symmetric key (kty oct): the guard accepts asymmetric signatures only');
  if (use !== undefined && use !== 'sig') return unusable(`its use is ${show(use)}, not "sig"`);
  if (keyOps !== undefined && !(Array.isArray(keyOps) && keyOps.includes('verify'))) return unusable('its key_ops do not include "verify"');
  if (kty === 'RSA' && typeof jwk['n'] === 'string') {
    const bits = Buffer.from(jwk['n'], 'base64url').length * 8;
    if (bits < MIN_RSA_BITS) return unusable(`an RSA key of ${bits} bits; at least ${MIN_RSA_BITS} are required`);
  }
  const fits = (candidate: string): boolean => {
    const type = JWS_KEY_TYPES[candidate];
    return type !== undefined && type.kty === kty && (type.crv === undefined || type.crv === crv);
  };
  if (typeof alg === 'string') {
    if (!allowed.includes(alg)) return unusable(`its alg ${alg} is not allowed (MCP_AUTH_ALGORITHMS)`);
    return fits(alg) ? { description, algorithms: [alg] } : unusable(`its alg ${alg} does not fit its kty ${show(kty)}${crv === undefined ? '' : ` and crv ${show(crv)}`}`);
  }
  if (kty === 'AKP') return unusable('an ML-DSA (AKP) key must name its alg');
  const algorithms = allowed.filter(fits);
  if (algorithms.length === 0) {
    const kinds = Object.keys(JWS_KEY_TYPES).filter(fits);
    return unusable(kinds.length === 0 ? `its kty ${show(kty)}${crv === undefined ? '' : ` and crv ${show(crv)}`} fit no supported algorithm` : `it verifies ${kinds.join(', ')}, none of them allowed (MCP_AUTH_ALGORITHMS)`);
  }
  return { description, algorithms };
}

/** The identifying members of a key, quoted where they are free text. */
function describeKey(jwk: Readonly<Record<string, unknown>>): string {
  const parts = [`kid ${jwk['kid'] === undefined ? '(none)' : show(jwk['kid'])}`, `kty ${show(jwk['kty'])}`];
  for (const member of ['crv', 'alg', 'use']) if (jwk[member] !== undefined) parts.push(`${member} ${show(jwk[member])}`);
  return parts.join(' ');
}

/** A member's value for a terminal: plain when it is a short token, otherwise quoted (escaping control characters). */
function show(value: unknown): string {
  if (typeof value === 'string' && /^[A-Za-z0-9._+-]{1,40}$/.test(value)) return value;
  const text = typeof value === 'string' ? value : JSON.stringify(value) ?? String(value);
  return JSON.stringify(text.length > MAX_SHOWN_LENGTH ? `${text.slice(0, MAX_SHOWN_LENGTH)}…` : text);
}
