/**
 * The one error of the gateway's OAuth client steps towards an upstream's authorization server. Its `code` is
 * stable and safe to show or log; its message never holds a code, a verifier, a token or a client secret.
 */
import * as client from 'openid-client';
import { oauthErrorAnswer } from '../../upstream-auth/oauth-error-answer.js';
import type { RegisteredClient } from './upstream-client-configuration.js';

/**
 * Why a step failed:
 * - `unknown_state`: the callback's `state` names no pending authorization (never issued, already used, or another
 *   server's);
 * - `expired`: the pending authorization is older than its lifetime (10 minutes at most);
 * - `refused:<error>`: the authorization server answered with an OAuth error (RFC 6749 §4.1.2.1, §5.2), e.g.
 *   `refused:access_denied`, `refused:invalid_grant`;
 * - `invalid_response`: the authorization response or the token response failed a check (an `iss` of another
 *   server, RFC 9207; no `code`; a token type other than Bearer);
 * - `unsupported`: the authorization server cannot be used as required (no authorization or token endpoint, no
 *   PKCE S256, no way for the gateway to register);
 * - `unavailable`: the authorization server or the upstream could not be reached, timed out or answered badly.
 */
export type UpstreamAuthorizationErrorCode = 'unknown_state' | 'expired' | `refused:${string}` | 'invalid_response' | 'unsupported' | 'unavailable';

/** A step towards the upstream's authorization server failed; `code` says why (see {@link UpstreamAuthorizationErrorCode}). */
export class UpstreamAuthorizationError extends Error {
  readonly code: UpstreamAuthorizationErrorCode;
  /**
   * The setting an operator should check, when the server refused the gateway's configured client itself (a wrong
   * secret, an unknown client id): e.g. `MCP_AUTH_UPSTREAM_CLIENT_SECRET`. See {@link configuredClientSetting}.
   */
  setting?: string;
  /**
   * @param code - why, stable.
   * @param detail - a safe explanation for an operator's log: fixed text, never a value of the exchange.
   * @param cause - only an error that holds no secret (discovery, a network failure), for the operator's log.
   */
  constructor(code: UpstreamAuthorizationErrorCode, detail: string, cause?: Error) {
    super(`upstream authorization failed (${code}): ${detail}`, cause === undefined ? undefined : { cause });
    this.name = 'UpstreamAuthorizationError';
    this.code = code;
  }
}

/**
 * The setting to check when an authorization server refuses the gateway's pre-registered client with `code`
 * (`invalid_client`: its secret, or its id for a public client; `unauthorized_client`: its id, which the server
 * does not allow this grant), named as the operator wrote it: `MCP_AUTH_UPSTREAM_CLIENT_…` for the single upstream,
 * `servers.<name>.auth.…` in a configuration file. Undefined for other codes and for clients the gateway made itself
 * (a metadata document, a dynamic registration), whose settings are not the operator's.
 *
 * @example configuredClientSetting('', { kind: 'pre-registered', clientSecret: '…' }, 'invalid_client'); // 'MCP_AUTH_UPSTREAM_CLIENT_SECRET'
 */
export function configuredClientSetting(server: string, registered: Pick<RegisteredClient, 'kind' | 'clientSecret'>, code: string): string | undefined {
  if (registered.kind !== 'pre-registered' || (code !== 'invalid_client' && code !== 'unauthorized_client')) return undefined;
  const secret = code === 'invalid_client' && registered.clientSecret !== undefined;
  if (server === '') return secret ? 'MCP_AUTH_UPSTREAM_CLIENT_SECRET' : 'MCP_AUTH_UPSTREAM_CLIENT_ID';
  return `servers.${server}.${secret ? 'auth.clientSecretEnv or auth.clientSecretFile' : 'auth.clientId'}`;
}

/** openid-client codes of a response that failed a check (an `iss` of another server, a missing `code`, a bad token response). */
const INVALID_RESPONSE_CODES = new Set(['OAUTH_INVALID_RESPONSE', 'OAUTH_JSON_ATTRIBUTE_COMPARISON_FAILED', 'OAUTH_JWT_CLAIM_COMPARISON_FAILED', 'OAUTH_JWT_TIMESTAMP_CHECK_FAILED', 'OAUTH_PARSE_ERROR']);

/**
 * Sorts a failure of an openid-client call into an {@link UpstreamAuthorizationError}: an OAuth error answer
 * (`oauthErrorAnswer`: in the redirect, the body, or a 4xx challenge) is `refused:<error>`; a response failing a
 * check is `invalid_response`; anything else (no connection, a timeout, a 5xx, a 429, `temporarily_unavailable`)
 * is `unavailable`. The original error is not kept: openid-client's carry
 * the response parameters, which may hold a code or a token.
 *
 * @param what - what was attempted, in words, e.g. `the code exchange`.
 */
export function upstreamAuthorizationFailure(error: unknown, what: string): UpstreamAuthorizationError {
  if (error instanceof UpstreamAuthorizationError) return error;
  const answer = oauthErrorAnswer(error);
  if (answer !== undefined && !answer.transient) return new UpstreamAuthorizationError(`refused:${answer.code}`, `the upstream's authorization server refused ${what}`);
  if (error instanceof client.ClientError && error.code !== undefined && INVALID_RESPONSE_CODES.has(error.code)) {
    return new UpstreamAuthorizationError('invalid_response', `the answer to ${what} failed a check (${error.code})`);
  }
  const code = error instanceof client.ClientError && error.code !== undefined ? ` (${error.code})` : '';
  return new UpstreamAuthorizationError('unavailable', `the upstream's authorization server could not complete ${what}${code}`);
}
