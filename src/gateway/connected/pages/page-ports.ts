/**
 * What the pages need from the rest of connected accounts, as interfaces: the record sealer of the token store and
 * the upstream authorization. The pages know them only by these shapes, so each is built and tested on its own.
 */
import type { RecordSealer } from '../store/record-sealer.js';
import type { UserRef } from '../oauth/connection-record.js';

/**
 * Seals values for the token store (JWE; see the store's record sealer). `key` is bound into the sealed value, so a
 * value sealed under one key does not open under another; `ttlMs` bounds its life.
 */
export type PageSealer = RecordSealer;

/**
 * The upstream authorization as the pages see it: one for every server in connected mode, selected by `server`.
 */
export interface UpstreamAuthorizationPort {
  /**
   * The upstream authorization server's authorization URL for the ticket's user and `server` (PKCE S256, a
   * one-time `state` of at most 10 minutes, `resource` the upstream URL, `scope`). The URL must carry `state`.
   * `owner`, the `userKey` of the ticket's user, whose share of the store the pending authorization counts against.
   */
  begin(input: { ticketId: string; scope?: string; server: string; owner?: string }): Promise<URL>;
  /**
   * Handles the browser's return to `<gateway origin>/connect/callback/<server>` from `server`'s authorization
   * server: checks `state` and `iss` (RFC 9207), exchanges the code, stores the connection. Undefined, with nothing
   * taken or exchanged, when `state` is not one of its pending authorizations or was started with another server
   * than the one the callback's path names (a mix-up, RFC 9700 §4.4); throws when the authorization failed.
   */
  complete(callbackUrl: URL, server: string): Promise<{ ticketId: string } | undefined>;
  /**
   * Revokes `user`'s connection to `server` (RFC 7009 where offered) and deletes it: `revoked`. A connection to a
   * server no longer in connected mode is deleted without revocation (nothing says where to send it): `deleted`.
   */
  revoke(user: UserRef, server: string): Promise<'revoked' | 'deleted'>;
}
