/**
 * What `mcp-oauth-guard connections revoke` does once its settings are read: every connection of one user is found
 * in the token store, revoked at its upstream's authorization server (RFC 7009, refresh token first) and deleted.
 * A connection to a server no longer in connected mode is deleted without revocation: nothing says where to send it.
 * A record that does not open with the configured token store secret is kept, unless deleting it is asked for.
 * The user's connects in progress end too: their tickets, pending sign-ins and pending upstream authorizations, so
 * that none completes after the revocation.
 */
import { flowKey, pendingUpstreamFlow } from '../../connected/oauth/authorization-code-flow.js';
import { endUserTickets } from '../../connected/pages/connect-ticket.js';
import { DEFAULT_TOKEN_STORE_MAX_EPHEMERAL_ENTRIES } from '../../connected/store/token-store-limits.js';
import { connectionKey, userKey, type UserRef } from '../../connected/oauth/connection-record.js';
import { connectionOpens } from '../../connected/oauth/sealed-connections.js';
import type { RevocationReport } from '../../connected/oauth/connection-revocation.js';
import type { UpstreamAuthorization } from '../../connected/oauth/upstream-authorization.js';
import type { OpenedConnectionStore } from '../../connected/open-connections.js';

/** Most connections of one user handled in one run (as many as the connections page lists). */
export const MAX_REVOKED_CONNECTIONS = 1000;

/** What happened to one connection. Every text is safe to print: no token, subject or digest. */
export interface ConnectionRevocationOutcome {
  /** The configuration file's server name, `""` for the single upstream. */
  readonly server: string;
  /**
   * `revoked`: every token revoked, then deleted; `partly`: some token revoked, some not, deleted; `deleted`: deleted
   * without any revocation; `failed`: still stored; `unreadable`: still stored, as its record does not open with
   * the configured token store secret (its tokens could not be revoked).
   */
  readonly outcome: 'revoked' | 'partly' | 'deleted' | 'failed' | 'unreadable';
  /** The tokens revoked, in words (`refresh token`, `access token`). */
  readonly revoked?: readonly string[];
  /** Why not every token was revoked, or why it is still stored, in words. */
  readonly detail?: string;
}

/** Options of {@link revokeUserConnections}. */
export interface RevokeUserConnectionsOptions {
  readonly opened: OpenedConnectionStore;
  /** The upstreams in connected mode, by server name (`connectedAuthorizations`). */
  readonly authorizations: ReadonlyMap<string, UpstreamAuthorization>;
  readonly user: UserRef;
  /** Only this server's connection. Default: every server's. */
  readonly server?: string;
  /** Delete, unrevoked, a record that does not open with the configured keys. Default false: it is kept. */
  readonly deleteUnreadable?: boolean;
}

/**
 * Revokes and deletes every connection of `options.user` (or its one to `options.server`), one server after the
 * other, in server-name order. A store that cannot be reached fails that server, and the next are still tried.
 *
 * @returns one outcome per connection found; none when the user has none.
 * @example
 * const outcomes = await revokeUserConnections({ opened, authorizations, user: { issuer, subject: 'alice' } });
 */
export async function revokeUserConnections(options: RevokeUserConnectionsOptions): Promise<ConnectionRevocationOutcome[]> {
  const { opened, authorizations, user } = options;
  // First, so that a connect under way cannot store a connection this run would then miss.
  await endConnectsInProgress(opened, user, options.server);
  const prefix = `conn:${userKey(user)}:`;
  const servers = (await opened.store.keys(prefix, MAX_REVOKED_CONNECTIONS))
    .map((key) => key.slice(prefix.length))
    .filter((server) => options.server === undefined || server === options.server)
    .sort();
  const outcomes: ConnectionRevocationOutcome[] = [];
  for (const server of servers) {
    const authorization = authorizations.get(server);
    try {
      // A record sealed with another secret cannot be revoked: deleting it would leave its tokens live upstream.
      if (!options.deleteUnreadable && (await connectionOpens(opened.store, opened.sealer, user, server)) === false) {
        outcomes.push({ server, outcome: 'unreadable', detail: UNREADABLE });
        continue;
      }
      if (authorization === undefined) {
        await opened.store.delete(connectionKey(user, server));
        outcomes.push({ server, outcome: 'deleted', detail: 'the server is not in connected mode in this configuration, so its authorization server is unknown' });
      } else {
        outcomes.push(outcomeOf(server, await authorization.revoke(user, server)));
      }
    } catch (error) {
      outcomes.push({ server, outcome: 'failed', detail: `not deleted: ${error instanceof Error && error.name === 'TokenStoreUnavailableError' ? 'the token store could not be reached' : 'the token store failed'}` });
    }
  }
  return outcomes;
}

const UNREADABLE = 'its record does not open with the configured MCP_AUTH_TOKEN_STORE_SECRET';

/** The outcome of one revocation report. */
function outcomeOf(server: string, report: RevocationReport): ConnectionRevocationOutcome {
  if (!report.found) return { server, outcome: 'deleted', detail: UNREADABLE };
  const revoked = report.revoked.map(tokenInWords);
  if (report.notRevoked.length === 0) return { server, outcome: 'revoked', revoked };
  const reasons = [...new Set(report.notRevoked.map(({ reason }) => reasonInWords(reason)))];
  const which = report.notRevoked.map(({ token }) => tokenInWords(token)).join(' and ');
  return { server, outcome: revoked.length ? 'partly' : 'deleted', revoked, detail: `${which} not revoked: ${reasons.join('; ')}` };
}

/** `refresh_token` → `refresh token`. */
function tokenInWords(token: string): string {
  return token.replace('_', ' ');
}

/** A revocation failure code in words. */
function reasonInWords(reason: string): string {
  if (reason === 'unavailable') return 'its authorization server could not be reached';
  // RFC 7009 §2.2.1: a self-contained (JWT) access token cannot be revoked; it stays valid until it expires.
  if (reason === 'refused:unsupported_token_type') return 'its authorization server does not revoke that kind of token, which stays valid until it expires';
  if (reason.startsWith('refused:')) return `its authorization server refused (${reason.slice('refused:'.length)})`;
  if (reason === 'unsupported') return 'its authorization server cannot be used (discovery or registration failed)';
  if (reason === 'invalid_response') return 'its authorization server answered badly';
  return reason;
}

/**
 * Ends `user`'s connects in progress (of `server` only, when given): their tickets and pending sign-ins, then the
 * pending upstream authorizations started for those tickets (each names its ticket, so the short-lived entries are
 * read, at most as many as a store keeps).
 */
async function endConnectsInProgress(opened: OpenedConnectionStore, user: UserRef, server: string | undefined): Promise<void> {
  const ended = new Set(await endUserTickets(opened.store, opened.sealer, user, server));
  if (ended.size === 0) return;
  for (const key of await opened.store.keys(flowKey(''), DEFAULT_TOKEN_STORE_MAX_EPHEMERAL_ENTRIES)) {
    const flow = await pendingUpstreamFlow(opened.store, opened.sealer, key.slice(flowKey('').length));
    if (flow !== undefined && ended.has(flow.ticketId)) await opened.store.delete(key);
  }
}
