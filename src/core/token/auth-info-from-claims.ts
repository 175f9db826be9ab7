import type { AuthInfo } from '../kernel/auth-info.js';
import { InvalidTokenError } from '../kernel/errors.js';
import { isScopeToken, scopeTokens } from '../wire/scope-token.js';

/** Inputs of {@link buildAuthInfo} besides the claims. */
export interface BuildAuthInfoOptions {
  /**
   * The resource the token was accepted for, parsed once at start-up. Every {@link AuthInfo} of a verifier
   * shares this one instance; `URL` objects cannot be frozen, so consumers must treat it as read-only.
   */
  resource: URL;
  /** How the claims were obtained. */
  tokenType: 'jwt' | 'introspection';
}

/**
 * Builds the {@link AuthInfo} handed to MCP handlers from verified claims (a JWT payload, RFC 9068 §2.2, or an
 * introspection response, RFC 7662 §2.2). Claims are trusted at this point; only their shapes are checked.
 *
 * - `scopes`: `scope` (space-separated string, RFC 6749 §3.3 / RFC 9068 §2.2.3), else `scp` (array of strings
 *   or space-separated string, as several authorization servers send it), else `[]`. Only valid scope tokens
 *   ({@link isScopeToken}) are kept: see {@link readScopes}.
 * - `clientId`: `client_id` (RFC 9068 §2.2, RFC 7662 §2.2), else `azp` (OpenID Connect), else `cid` (Okta),
 *   else `appid` (Entra v1), else `""`.
 * - `expiresAt`: `exp`, seconds since the epoch.
 *
 * The result, its `scopes`, `extra` and `extra.claims` are frozen: verified identities are cached and shared
 * between requests, so no request may alter what another one sees.
 *
 * @throws InvalidTokenError (reason `token_claims`) when `scope`, `scp`, `client_id`, `azp`, `sub` or `iss`
 *   has the wrong type, or when the subject, issuer or client id is not well-formed Unicode (a lone UTF-16
 *   surrogate, which JSON lets a token spell as `"\ud800"`): such a value has no UTF-8 form, so every
 *   spelling of it would read as U+FFFD wherever it is encoded, and two callers could share one identity.
 */
export function buildAuthInfo(token: string, claims: Readonly<Record<string, unknown>>, options: BuildAuthInfoOptions): AuthInfo {
  const scopes = readScopes(claims);
  const clientId = readClientId(claims);
  const sub = wellFormed(readOptionalString(claims, 'sub'), 'sub');
  const iss = wellFormed(readOptionalString(claims, 'iss'), 'iss');
  const exp = claims['exp'];
  if (exp !== undefined && typeof exp !== 'number') throw claimTypeError('exp');

  Object.freeze(claims);
  const extra = Object.freeze({ sub, iss, claims, tokenType: options.tokenType });
  return Object.freeze({
    token,
    clientId,
    scopes: Object.freeze(scopes) as string[],
    expiresAt: exp,
    resource: options.resource,
    extra,
  });
}

/**
 * Reads the granted scopes: `scope` as a space-separated string, else `scp` as an array of strings or a
 * space-separated string. Empty strings between repeated spaces are dropped, and so is every entry that is not
 * a scope token (RFC 6749 §3.3: visible ASCII without `"` or `\`): `scp: ["basic admin"]` or
 * `scope: "basic adminЖ"` grants neither `admin` nor anything named like it. Dropped here, once, so the
 * policy, the handler's `auth.scopes` and what the gateway tells its upstream all see the same list.
 *
 * @throws InvalidTokenError (reason `token_claims`) for any other shape.
 */
export function readScopes(claims: Readonly<Record<string, unknown>>): string[] {
  const scope = claims['scope'];
  if (scope !== undefined) {
    if (typeof scope !== 'string') throw claimTypeError('scope');
    return scopeTokens(scope);
  }
  const scp = claims['scp'];
  if (scp === undefined) return [];
  if (typeof scp === 'string') return scopeTokens(scp);
  if (Array.isArray(scp) && scp.every((s) => typeof s === 'string')) return (scp as string[]).filter(isScopeToken);
  throw claimTypeError('scp');
}

/** Claims naming the client, in order of preference: RFC 9068/7662, OpenID Connect, Okta, Microsoft Entra v1. */
const CLIENT_ID_CLAIMS = ['client_id', 'azp', 'cid', 'appid'] as const;

/**
 * Reads the OAuth client the token was issued to: `client_id`, else `azp`, else `cid` (Okta), else `appid`
 * (Microsoft Entra v1 tokens), else `""`.
 *
 * @throws InvalidTokenError (reason `token_claims`) when the claim used is not a string, or not well-formed
 *   Unicode (see {@link buildAuthInfo}).
 */
export function readClientId(claims: Readonly<Record<string, unknown>>): string {
  for (const name of CLIENT_ID_CLAIMS) {
    const value = claims[name];
    if (value === undefined) continue;
    if (typeof value !== 'string') throw claimTypeError(name);
    return wellFormed(value, name);
  }
  return '';
}


// In Unicode mode, a surrogate pair is one code point outside this class: only a lone surrogate matches.
const LONE_SURROGATE = /\p{Cs}/u;

/** `value`, unless it holds a lone surrogate (see {@link buildAuthInfo}). */
function wellFormed<T extends string | undefined>(value: T, name: string): T {
  if (value !== undefined && LONE_SURROGATE.test(value)) {
    throw new InvalidTokenError(`token claim "${name}" is not well-formed Unicode`, 'token_claims');
  }
  return value;
}

function readOptionalString(claims: Readonly<Record<string, unknown>>, name: string): string | undefined {
  const value = claims[name];
  if (value === undefined || typeof value === 'string') return value;
  throw claimTypeError(name);
}

function claimTypeError(name: string): InvalidTokenError {
  return new InvalidTokenError(`token claim "${name}" has an invalid type`, 'token_claims');
}
