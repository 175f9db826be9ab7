/**
 * `MCP_AUTH_UPSTREAM_AUTH=connected` (or `auth.mode: "connected"`): the gateway sends each user's own token for the
 * upstream, the one the user granted it by connecting their account (see `src/gateway/connected/`). A user without a
 * usable connection is led through the connect flow instead ({@link ConnectionRequiredError}).
 */
import type { AuthInfo } from '../../../core/kernel/auth-info.js';
import type { KeptLists } from '../../upstream-auth/kept-lists.js';
import type { KeptProfiles } from '../../upstream-auth/kept-profile.js';
import { EXPIRY_MARGIN_MS, usableUntil, type UpstreamCredentials } from '../../upstream-auth/upstream-credentials.js';
import type { ConnectionRecord, UserRef } from '../oauth/connection-record.js';
import { UpstreamAuthorizationError } from '../oauth/upstream-authorization-error.js';
import { CallerCannotConnectError } from './caller-cannot-connect-error.js';
import { createConnectFlow, otherIssuer, userOf, type CreateConnectTicket } from './connect-flow.js';
import type { ConnectListsMode } from './connection-required-answer.js';
import { ConnectionRequiredError } from './connection-required-error.js';
import type { RequestStates } from './request-state.js';

/** Where connections are read and refreshed (the token store and the upstream's authorization server behind it). */
export interface ConnectionRecords {
  /** `user`'s connection to `server`, or undefined when there is none. */
  get(user: UserRef, server: string): Promise<ConnectionRecord | undefined>;
  /**
   * Refreshes it and resolves with the new record, or undefined when it cannot be refreshed (no refresh token,
   * refused: the connection is then gone). Rejects when the authorization server cannot be reached. Concurrent calls
   * for one user and server share one refresh (in this process; the store's lock across replicas).
   *
   * @param replacing - the access token the caller holds and wants replaced: a stored record with another one was
   *   refreshed meanwhile (by another replica, say) and is returned without a refresh grant.
   */
  refresh(user: UserRef, server: string, replacing?: string): Promise<ConnectionRecord | undefined>;
  /** Ends it: revokes its tokens where the authorization server offers RFC 7009, and deletes it. */
  end(user: UserRef, server: string): Promise<void>;
  /** Forgets the step-up it was made for (`ConnectionRecord.stepUpScope`), after the final refusal that step-up got. */
  clearStepUp(user: UserRef, server: string): Promise<void>;
}

/**
 * A connection whose token is refused right after it was made is not ended: that is a configuration fault (the
 * wrong resource, say), and asking the user to connect again would send them round in a loop. In milliseconds.
 */
export const NEW_CONNECTION_MS = 60_000;

/** Options of {@link connectedCredentials}. */
export interface ConnectedCredentialsOptions {
  /** The configuration file's server name, `""` for the single upstream. */
  readonly server: string;
  readonly records: ConnectionRecords;
  /** Makes the connect link (a ticket in the store). */
  readonly createTicket: CreateConnectTicket;
  /** The gateway's `requestState` codec (keys from the token store's secret). */
  readonly requestStates: RequestStates;
  /** `MCP_AUTH_CONNECT_LISTS`. Default `show`. */
  readonly lists?: ConnectListsMode;
  /**
   * The login issuer (`MCP_AUTH_LOGIN_ISSUER`, or the only issuer): a caller of another issuer gets a refusal saying
   * so (CallerCannotConnectError `other_issuer`), not a link the connect page would refuse. Default: any issuer.
   */
  readonly loginIssuer?: string;
  /** Clock, in milliseconds since the epoch. Default `Date.now`. */
  readonly now?: () => number;
  /** The upstream's kept profile ({@link UpstreamCredentials.profile}). Default none. */
  readonly profile?: KeptProfiles;
  /** The upstream's kept lists ({@link UpstreamCredentials.keptLists}), which the connect flow answers lists with. Default none. */
  readonly keptLists?: KeptLists;
}

/**
 * The `connected` credentials of one server: per caller (the user is the token's issuer and subject). The user's
 * token is read from `records` for each request (which keeps opened records in memory, bounded in bytes); within
 * {@link EXPIRY_MARGIN_MS} (30 s) of its expiry it is refreshed first; when the authorization server cannot be
 * reached then, the token is sent while it has not expired, and a request {@link REFRESH_RETRY_PAUSE_MS} later tries
 * again. After an upstream 401 ({@link
 * UpstreamCredentials.renew}) it is refreshed once; a token that cannot be renewed leads to the connect flow.
 *
 * @throws (from `authorization`) ConnectionRequiredError `not_connected` when the user has no connection, `expired`
 *   when its token expired and could not be refreshed; UpstreamAuthorizationError `unavailable` when it expired
 *   and the authorization server cannot be reached; CallerCannotConnectError for a token naming no user, or
 *   one of an issuer other than `loginIssuer`.
 * @example
 * const credentials = connectedCredentials({ server: '', records, createTicket, requestStates: createRequestStates({ secrets }) });
 * createUpstreamProxy({ upstream: 'https://mcp.example.com/mcp', credentials });
 */
export function connectedCredentials(options: ConnectedCredentialsOptions): UpstreamCredentials {
  const { server, records } = options;
  const now = options.now ?? Date.now;
  // The token to replace, so that a record another replica refreshed in the meantime is taken as it is: without it a
  // refresh that began after that replica's write would send a second grant. Concurrent refreshes of one user are
  // joined by the records (one flight per process, a lock in the store across replicas).
  const refresh = (user: UserRef, replacing: string | undefined): Promise<ConnectionRecord | undefined> => records.refresh(user, server, replacing);
  // Kept with the caller's verified identity: the guard's `auth.extra` is one frozen object per cached token, shared
  // by every request with that token, so such a request derives no user, and the records see the same
  // frozen user object each time (and keep its store key). Freed with the identity. A mutable `extra` is never kept.
  const callers = new WeakMap<AuthInfo['extra'], UserRef>();
  const unreachable = createRefreshPauses();
  const userOfCaller = (caller: AuthInfo): UserRef => {
    const known = callers.get(caller.extra);
    if (known) return known;
    const user = userOf(caller);
    if (!user) throw new CallerCannotConnectError(server);
    if (options.loginIssuer !== undefined && user.issuer !== options.loginIssuer) throw otherIssuer(server, user, options.loginIssuer);
    const found = Object.freeze(user);
    if (Object.isFrozen(caller.extra)) callers.set(caller.extra, found);
    return found;
  };

  const credentials: UpstreamCredentials = {
    perCaller: true,
    ...(options.profile ? { profile: options.profile } : {}),
    ...(options.keptLists ? { keptLists: options.keptLists } : {}),
    async authorization(caller) {
      const user = userOfCaller(caller);
      let record = await records.get(user, server);
      if (!record) throw new ConnectionRequiredError(server, 'not_connected');
      if (record.expiresAt !== undefined && now() >= usableUntil(record.expiresAt, record.updatedAt) && !unreachable.paused(record.accessToken, now())) {
        let refreshed: ConnectionRecord | undefined;
        try {
          refreshed = await refresh(user, record.accessToken);
        } catch (error) {
          // The authorization server cannot be reached: a token not expired yet still serves, and only a request after
          // the pause tries again, so that a server that is down does not hold up each request for its timeout.
          if (!(error instanceof UpstreamAuthorizationError && error.code === 'unavailable') || now() >= record.expiresAt) throw error;
          unreachable.pause(record.accessToken, now());
          return authorizationValue(record);
        }
        // Not refreshed but not expired yet: the token still serves for its last seconds.
        if (refreshed) record = refreshed;
        else if (now() >= record.expiresAt) throw new ConnectionRequiredError(server, 'expired');
      }
      return authorizationValue(record);
    },
    async renew(caller, rejected) {
      const user = userOfCaller(caller);
      // A 401 for a token already replaced (a concurrent renewal, another replica): the new one.
      const current = await records.get(user, server);
      if (current && authorizationValue(current) !== rejected && (current.expiresAt === undefined || now() < current.expiresAt)) return authorizationValue(current);
      const record = await refresh(user, current && authorizationValue(current) === rejected ? current.accessToken : undefined);
      if (!record || authorizationValue(record) === rejected) throw new ConnectionRequiredError(server, 'expired');
      return authorizationValue(record);
    },
    flow: createConnectFlow({
      server,
      createTicket: options.createTicket,
      requestStates: options.requestStates,
      ...(options.lists ? { lists: options.lists } : {}),
      ...(options.keptLists ? { keptLists: options.keptLists } : {}),
      ...(options.loginIssuer !== undefined ? { loginIssuer: options.loginIssuer } : {}),
      connectionScope: (caller) => records.get(userOfCaller(caller), server),
      stepUpRefused: (caller) => records.clearStepUp(userOfCaller(caller), server),
      endRefusedConnection: async (caller) => {
        const user = userOfCaller(caller);
        const record = await records.get(user, server);
        if (!record || now() - record.createdAt < NEW_CONNECTION_MS) return false;
        // Ended, so that each later request does not send its own refresh grant before being refused again.
        await records.end(user, server);
        return true;
      },
    }),
  };
  return credentials;
}

/**
 * After a refresh failed because the authorization server could not be reached, how long its token is used without
 * trying again, in milliseconds.
 */
export const REFRESH_RETRY_PAUSE_MS = 5_000;

/** Most tokens paused at once: past it the oldest pause is dropped (its next request tries again). */
const MAX_REFRESH_PAUSES = 1_000;

/** Access tokens whose refresh waits after the authorization server could not be reached; bounded in entries. */
function createRefreshPauses(): { paused(token: string, at: number): boolean; pause(token: string, at: number): void } {
  const until = new Map<string, number>();
  return {
    paused(token, at) {
      const end = until.get(token);
      if (end !== undefined && at >= end) until.delete(token);
      return end !== undefined && at < end;
    },
    pause(token, at) {
      until.delete(token);
      if (until.size >= MAX_REFRESH_PAUSES) until.delete(until.keys().next().value!);
      until.set(token, at + REFRESH_RETRY_PAUSE_MS);
    },
  };
}

/** The `Authorization` value of a record: `Bearer <token>` (RFC 6750 §2.1) for a Bearer token, else its own type. */
function authorizationValue(record: ConnectionRecord): string {
  const type = record.tokenType === '' || record.tokenType.toLowerCase() === 'bearer' ? 'Bearer' : record.tokenType;
  return `${type} ${record.accessToken}`;
}
