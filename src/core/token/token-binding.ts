import type { AuthInfo } from '../kernel/auth-info.js';
import { ConfigurationError, InvalidTokenError } from '../kernel/errors.js';

/**
 * What the guard does with DPoP (RFC 9449), option `dpop`:
 *
 * - `off`: the guard knows only Bearer. `Authorization: DPoP …` is another scheme (401, bare challenge), a token
 *   with a `cnf` claim is refused (it is sender-constrained and cannot be a bearer token), the `DPoP` header is
 *   never read, and the metadata and challenges say nothing of DPoP.
 * - `allow` (default): Bearer tokens without `cnf` work as before; a token bound to a key (`cnf.jkt`) is accepted
 *   only as `Authorization: DPoP <token>` with a valid proof, and refused as Bearer (RFC 9449 §7.2).
 * - `require`: only DPoP-bound tokens with a proof; a Bearer request is refused, and the metadata says
 *   `dpop_bound_access_tokens_required: true` (RFC 9728 §2).
 */
export type DpopMode = 'off' | 'allow' | 'require';

const DPOP_MODES: readonly DpopMode[] = ['off', 'allow', 'require'];

/**
 * Checks the `dpop` setting: `allow` when unset.
 *
 * @throws ConfigurationError naming `setting` for any other value.
 */
export function resolveDpopMode(value: unknown, setting: string): DpopMode {
  if (value === undefined) return 'allow';
  if (typeof value === 'string' && (DPOP_MODES as readonly string[]).includes(value)) return value as DpopMode;
  throw new ConfigurationError(setting, `must be one of ${DPOP_MODES.join(', ')} (got ${JSON.stringify(String(value))})`);
}

/**
 * The one rule on a verified token's confirmation claim (`cnf`, RFC 7800), for JWTs and introspection answers
 * alike (both land in `AuthInfo.extra.claims`): the key thumbprint it binds the token to (`cnf.jkt`, RFC 9449 §6),
 * or undefined for an unbound token.
 *
 * @throws InvalidTokenError (reason `token_binding`) for a `cnf` this resource cannot check: no string `jkt`
 *   (an mTLS-bound token, `x5t#S256`, RFC 8705, or a malformed claim).
 */
export function boundThumbprint(auth: AuthInfo): string | undefined {
  const cnf = auth.extra.claims['cnf'];
  if (cnf === undefined) return undefined;
  const jkt = typeof cnf === 'object' && cnf !== null ? (cnf as Record<string, unknown>)['jkt'] : undefined;
  if (typeof jkt === 'string' && jkt.length > 0) return jkt;
  throw new InvalidTokenError('token is bound to a key by a confirmation method this resource cannot check (cnf without jkt)', 'token_binding');
}

/**
 * Checks a token presented as `Authorization: Bearer`: it must not be sender-constrained (RFC 9449 §7.2: a
 * DPoP-bound token received as a bearer token is refused, else DPoP would be a mere downgrade away). Costs one
 * property read on the hot path.
 *
 * @returns `auth`, for chaining.
 * @throws InvalidTokenError (reason `token_binding`) for a token with `cnf`.
 */
export function checkBearerUse(auth: AuthInfo, mode: DpopMode): AuthInfo {
  if (auth.extra.claims['cnf'] === undefined) return auth;
  throw new InvalidTokenError(
    mode === 'off'
      ? 'token is sender-constrained (cnf) and cannot be used as a bearer token'
      : 'token is DPoP-bound: send it as "Authorization: DPoP <token>" with a DPoP proof (RFC 9449 section 7.1)',
    'token_binding',
  );
}

/**
 * Checks a token presented as `Authorization: DPoP` with a valid proof: it must be bound (`cnf.jkt`) to the key
 * that signed the proof (RFC 9449 §4.3 check 12, §6.1).
 *
 * @param thumbprint - The proof key's RFC 7638 SHA-256 thumbprint.
 * @throws InvalidTokenError (reason `token_binding`) for an unbound token, or one bound to another key.
 */
export function checkDpopBinding(auth: AuthInfo, thumbprint: string, mode: DpopMode = 'allow'): void {
  const jkt = boundThumbprint(auth);
  if (jkt === undefined) {
    throw new InvalidTokenError(
      mode === 'require'
        ? 'token is not DPoP-bound (no cnf.jkt), and this server accepts DPoP-bound tokens only: request one with a DPoP proof (RFC 9449 section 5)'
        : 'token is not DPoP-bound (no cnf.jkt): send it as "Authorization: Bearer <token>"',
      'token_binding',
    );
  }
  if (jkt !== thumbprint) throw new InvalidTokenError('token is bound to another key than the DPoP proof\'s (cnf.jkt)', 'token_binding');
}

/** Error of a Bearer request in `require` mode. */
export function dpopRequired(): InvalidTokenError {
  return new InvalidTokenError(
    'this resource accepts only DPoP-bound access tokens, sent as "Authorization: DPoP <token>" with a DPoP proof (RFC 9449 section 7.1)',
    'token_binding',
  );
}
