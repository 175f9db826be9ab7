/**
 * The OAuth error code an openid-client failure carries: the one place that reads it, for the gateway's token
 * requests to an upstream's authorization server, its connected accounts, and its own sign-in alike. Only the code, never `error_description` (a server may
 * echo the request in it) nor the response parameters (which may hold a code or a token).
 */
import * as client from 'openid-client';
import { printableOAuthErrorCode } from '../../http/oauth-error-code.js';

/** An OAuth error answer of an openid-client call: its code, and whether the server means "not now". */
export interface OAuthErrorAnswer {
  /** The `error` (RFC 6749 §4.1.2.1, §5.2) where it may be repeated (`printableOAuthErrorCode`), else `error`. */
  readonly code: string;
  /** A 429, or `temporarily_unavailable`: waited out like a 5xx, not a refusal. */
  readonly transient: boolean;
}

/**
 * The OAuth error answer in `error`: one in the authorization response, in a 4xx token, registration or revocation
 * response body, or in a 4xx `WWW-Authenticate` challenge (a 401 without an error code is a failed client
 * authentication, `invalid_client`, RFC 6749 §5.2). Undefined for anything else (no answer, a timeout, a 5xx, a
 * response that failed a check).
 *
 * @example
 * oauthErrorAnswer(error); // { code: 'invalid_client', transient: false }
 */
export function oauthErrorAnswer(error: unknown): OAuthErrorAnswer | undefined {
  const answer = (code: unknown, status?: number): OAuthErrorAnswer => {
    const printable = printableOAuthErrorCode(code) ?? 'error';
    return { code: printable, transient: status === 429 || printable === 'temporarily_unavailable' };
  };
  if (error instanceof client.AuthorizationResponseError) return answer(error.error);
  if (error instanceof client.ResponseBodyError && error.status < 500) return answer(error.error, error.status);
  if (error instanceof client.WWWAuthenticateChallengeError && error.status >= 400 && error.status < 500) {
    const code = error.cause.find((challenge) => typeof challenge.parameters.error === 'string')?.parameters.error;
    return answer(code ?? (error.status === 401 ? 'invalid_client' : 'error'), error.status);
  }
  return undefined;
}
