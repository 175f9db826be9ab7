/**
 * A token endpoint response turned into the {@link ConnectionRecord} kept for the user.
 */
import type * as client from 'openid-client';
import type { ConnectionRecord } from './connection-record.js';
import { UpstreamAuthorizationError } from './upstream-authorization-error.js';

/** What the record needs besides the response. */
export interface RecordContext {
  /** The issuer that answered. */
  issuer: string;
  clientId: string;
  /** When the request was sent, in milliseconds since the epoch: `expires_in` counts from about then. */
  requestedAt: number;
  /** The record a refresh replaces: its refresh token is kept when the server sends none, its creation time kept. */
  previous?: ConnectionRecord;
  /** The scope the authorization asked for: granted as asked when the server names none (RFC 6749 §5.1). */
  requestedScope?: string;
  /** The step-up the authorization was made for (see `ConnectionRecord.stepUpScope`); a refresh keeps the previous one. */
  stepUpScope?: string;
}

/**
 * Builds the record: the access token, the refresh token (the new one, else the previous one, RFC 6749 §6),
 * `expiresAt` from `expires_in`, the granted scope (when the server does not say, RFC 6749 §5.1: the previous
 * record's, else the scope asked for).
 *
 * @throws UpstreamAuthorizationError `invalid_response` for a token type other than Bearer: the gateway sends
 *   the token as a Bearer token (RFC 6750), and a sender-constrained one would be refused upstream.
 */
export function tokenResponseRecord(response: client.TokenEndpointResponse, context: RecordContext): ConnectionRecord {
  if (response.token_type.toLowerCase() !== 'bearer') throw new UpstreamAuthorizationError('invalid_response', 'the token is not a Bearer token');
  const now = Date.now();
  const refreshToken = response.refresh_token ?? context.previous?.refreshToken;
  const scope = response.scope ?? context.previous?.scope ?? context.requestedScope;
  const stepUpScope = context.stepUpScope ?? context.previous?.stepUpScope;
  return {
    accessToken: response.access_token,
    ...(refreshToken !== undefined ? { refreshToken } : {}),
    ...(typeof response.expires_in === 'number' ? { expiresAt: context.requestedAt + response.expires_in * 1000 } : {}),
    ...(scope !== undefined ? { scope } : {}),
    ...(stepUpScope !== undefined ? { stepUpScope } : {}),
    tokenType: 'Bearer',
    asIssuer: context.issuer,
    clientId: context.clientId,
    createdAt: context.previous?.createdAt ?? now,
    updatedAt: now,
  };
}
