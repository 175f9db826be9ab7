/**
 * A connected account: the tokens the upstream's authorization server issued to the gateway for one user and one
 * server, and who that user is. Kept only sealed (see `store/`), never shown to the MCP client.
 */
import { createHash } from 'node:crypto';

/** A user of the gateway: the issuer and subject of their verified token. */
export interface UserRef {
  readonly issuer: string;
  readonly subject: string;
}

/** The tokens of one connection. Never logged. */
export interface ConnectionRecord {
  accessToken: string;
  refreshToken?: string;
  /** When the access token expires, in milliseconds since the epoch; absent when the server did not say. */
  expiresAt?: number;
  /** The scope granted (space-separated), when the server said. */
  scope?: string;
  /**
   * The scope the connect link asked for when the connection was made for a step-up (an upstream's
   * `insufficient_scope`); absent otherwise. Kept across refreshes: a later refusal for scopes it covers means the
   * authorization server granted less than asked, and asking again would loop.
   */
  stepUpScope?: string;
  /** `token_type` of the token response, e.g. `Bearer`. */
  tokenType: string;
  /** The upstream authorization server that issued the tokens. */
  asIssuer: string;
  /** The gateway's client id at that server. */
  clientId: string;
  /** Milliseconds since the epoch. */
  createdAt: number;
  updatedAt: number;
}

/**
 * The store's name for a user: a digest of issuer and subject, so that no subject is kept in plain text.
 *
 * @example
 * userKey({ issuer: 'https://id.example.com', subject: 'alice' }); // 43 base64url characters
 */
export function userKey(user: UserRef): string {
  return createHash('sha256').update(`${user.issuer}\n${user.subject}`).digest('base64url');
}

/** The store key of `user`'s connection to `server` (`""` for the single upstream). */
export function connectionKey(user: UserRef, server: string): string {
  return `conn:${userKey(user)}:${server}`;
}
