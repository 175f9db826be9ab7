/**
 * Connected accounts, put together for the gateway: one token store and sealer, one OAuth client per server in
 * connected mode, the `connected` credentials each such upstream sends, and the browser pages that connect and
 * disconnect accounts. Loaded only when an upstream is in connected mode.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { JSON_MEDIA_TYPE } from '../../http/media-type.js';
import type { ConnectedAccountsConfig } from '../config/connected-accounts-config.js';
import type { SharedStoreConfig } from '../config/shared-store-config.js';
import type { ConnectedLists } from '../upstream-auth/connected-lists.js';
import type { KeptLists } from '../upstream-auth/kept-lists.js';
import type { UpstreamCredentials } from '../upstream-auth/upstream-credentials.js';
import { userOf } from './flow/connect-flow.js';
import { connectedCredentials, type ConnectionRecords } from './flow/connected-credentials.js';
import { CONNECT_INPUT_KEY } from './flow/connection-required-answer.js';
import { createRequestStates } from './flow/request-state.js';
import { createStoreReplayCache } from './flow/store-replay-cache.js';
import { pendingUpstreamFlow } from './oauth/authorization-code-flow.js';
import { connectionKey, type ConnectionRecord, type UserRef } from './oauth/connection-record.js';
import { clientMetadataDocument, serverPublicName } from './oauth/gateway-client-urls.js';
import { clearStepUpScope, writeConnection } from './oauth/sealed-connections.js';
import type { UpstreamAuthorization } from './oauth/upstream-authorization.js';
import type { Settles } from './kept-store-value.js';
import { keptUpstreamLists } from './kept-upstream-lists.js';
import { keptUpstreamProfile } from './kept-upstream-profile.js';
import { connectedAuthorizations, openConnectionStore, type ConnectedUpstream, type OpenedConnectionStore } from './open-connections.js';
import { createConnectPages, type ConnectPagesHandler } from './pages/connect-pages.js';
import { createConnectTicket, readConnectTicket } from './pages/connect-ticket.js';
import { createGatewayLogin } from './pages/gateway-login.js';
import type { UpstreamAuthorizationPort } from './pages/page-ports.js';
import { createCachedRecords } from './store/cached-token-store.js';
import type { TokenStore } from './store/token-store.js';
import { tokenStoreWarnings } from './store/redis-token-store.js';
import { formatLogLine, writeSafely, writeWarningToStderr, type LineSink } from '../../core/kernel/log-line.js';
import { parseTrustedProxies } from '../../core/kernel/trusted-proxies.js';
import { warnWhenStoredConnectionsDoNotOpen } from './store/stored-connections-probe.js';
import type { ConnectPageEvent } from './pages/page-context.js';

export type { ConnectedUpstream } from './open-connections.js';

/** Options of {@link openConnectedAccounts}. */
export interface ConnectedAccountsOptions {
  readonly config: ConnectedAccountsConfig;
  /** The gateway's canonical resource URI: its origin is where the pages are, and the redirect URI's. */
  readonly resource: string;
  /** Every upstream in connected mode. */
  readonly upstreams: readonly ConnectedUpstream[];
  /** The shared Redis (`MCP_AUTH_REDIS_URL`), for `MCP_AUTH_TOKEN_STORE=redis`. */
  readonly redis?: SharedStoreConfig;
  /**
   * Receives the log lines (`formatLogLine`): one per page outcome (server names and user digests only), one per
   * dynamic registration replaced because its secret had expired, and one per list kept cut short (`connected_list_cut`).
   */
  readonly log?: LineSink;
  /** Receives the token store's warnings (Redis lost, with a short reason, and back) as JSON lines. Default stderr. */
  readonly warn?: LineSink;
  /**
   * How long an opened record is served from memory before the store is read again, in milliseconds: a connection
   * another replica removed or replaced is seen within this time. Default 30 000 (`DEFAULT_CACHED_RECORDS_REVALIDATE_MS`).
   */
  readonly recordsRevalidateAfterMs?: number;
}

/** What the gateway uses of connected accounts. */
export interface ConnectedAccounts {
  /** The credentials of the upstream `server` in connected mode (built once each). */
  credentials(server: string): UpstreamCredentials;
  /** The pages (`/connect/…`, `/connections`): true when the request was one of theirs. */
  readonly pages: ConnectPagesHandler;
  /** What a server set's merged lists show of a server the caller has not connected (`MCP_AUTH_CONNECT_LISTS`). */
  readonly lists: ConnectedLists;
  /**
   * For `/readyz`: resolves when the token store answers (at once for a directory), rejects with
   * `TokenStoreUnavailableError` and a short reason when Redis cannot be reached.
   */
  storeReachable(): Promise<void>;
  /** Closes the store. */
  close(): Promise<void>;
}

/** The ticket was burnt or expired while the code was being exchanged. */
class ConnectTicketGoneError extends Error {}

/** Path of the client metadata documents the gateway serves (see `clientMetadataDocumentUrl`). */
const CLIENT_METADATA_PATH = /^\/connect\/client-metadata\/([A-Za-z0-9_-]{1,64})\.json$/;

/**
 * Opens the token store and builds everything else; nothing is sent to an authorization server until a user
 * connects or a request needs a token.
 *
 * @throws ConfigurationError when the token store's directory cannot be used (named `MCP_AUTH_TOKEN_STORE`);
 *   TokenStoreUnavailableError when Redis cannot be reached.
 */
export async function openConnectedAccounts(options: ConnectedAccountsOptions): Promise<ConnectedAccounts> {
  const { config } = options;
  const origin = new URL(options.resource).origin;
  const opened = await openConnectionStore(config, options.resource, options.redis, options.warn && tokenStoreWarnings(options.warn));
  const { store, sealer } = opened;
  // A restart with another key would otherwise make every user connect again without a word in the log.
  await warnWhenStoredConnectionsDoNotOpen(store, sealer, options.warn ?? writeWarningToStderr);
  // Opened records in memory (bounded in bytes), read again from the store every half minute (by default): a
  // disconnection on another replica is seen within that time.
  const cached = createCachedRecords({ store, sealer, ...(options.recordsRevalidateAfterMs !== undefined ? { revalidateAfterMs: options.recordsRevalidateAfterMs } : {}) });
  const storeKeyOf = createStoreKeys();
  const authorizations = connectedAuthorizations(options.upstreams, origin, opened, options.log);
  const authorizationOf = (server: string): UpstreamAuthorization => authorizationNamed(authorizations, server);
  const revoke = async (user: UserRef, server: string): Promise<'revoked' | 'deleted'> => {
    try {
      return await revokeOrDelete(authorizations.get(server), store, user, server);
    } finally {
      cached.forget(storeKeyOf(user, server));
    }
  };
  const records: ConnectionRecords = {
    get: async (user, server) => (await cached.get<ConnectionRecord>(storeKeyOf(user, server)))?.value,
    async refresh(user, server, replacing) {
      try {
        return await authorizationOf(server).refresh(user, server, replacing);
      } finally {
        cached.forget(connectionKey(user, server));
      }
    },
    end: async (user, server) => void (await revoke(user, server)),
    async clearStepUp(user, server) {
      await clearStepUpScope(store, sealer, user, server);
      cached.forget(storeKeyOf(user, server));
    },
  };
  const port = upstreamAuthorizationPort({ store, sealer, authorizations, revoke, forget: (user, server) => cached.forget(connectionKey(user, server)) });
  const servedDocuments = new Map(options.upstreams.map(({ server }) => [serverPublicName(server), server]));
  const pages = createConnectPages({
    gatewayOrigin: origin,
    store,
    sealer,
    login: createGatewayLogin({
      issuer: config.login.issuer,
      clientId: config.login.clientId,
      gatewayOrigin: origin,
      store,
      sealer,
      ...(config.login.clientSecret !== undefined ? { clientSecret: config.login.clientSecret } : {}),
    }),
    port,
    trustedProxies: parseTrustedProxies(config.trustedProxies),
    ...(options.log ? { log: pageLines(options.log) } : {}),
    extraRoute: (req, res, url) => serveClientMetadata(req, res, url, origin, servedDocuments),
  });
  // With Redis (a fleet), used states are claimed there: a state used on one replica is refused on every other.
  // With a directory (one process) memory is enough, and a flood of states cannot fill the store.
  const requestStates = createRequestStates({
    secrets: config.storeKeys.map((key) => key.key),
    ...(config.store.kind === 'redis' ? { replayCache: createStoreReplayCache(store, sealer) } : {}),
  });
  const createTicket = async (user: UserRef, server: string, scope: string | undefined): Promise<URL> =>
    new URL(`/connect/${await createConnectTicket(store, sealer, { user, server, ...(scope !== undefined ? { scope } : {}) })}`, origin);
  // Each upstream's kept profile, read now: a user's first `initialize` after a restart is answered with it at once.
  const profiles = new Map(options.upstreams.map(({ server }) => [server, keptUpstreamProfile({ store, sealer, server })]));
  // What each upstream last listed for a connected user, listed to users who have not connected; with `hide`, none is kept.
  const log = options.log;
  const lists = new Map<string, KeptLists & Settles>();
  if (config.lists !== 'hide') for (const { server } of options.upstreams) lists.set(server, keptUpstreamLists({ store, sealer, server, ...(log ? { log } : {}) }));
  await Promise.all([...[...profiles.values()].map((kept) => kept.read()), ...[...lists.values()].map((kept) => kept.read('tools/list'))]);
  const built = new Map<string, UpstreamCredentials>();
  return {
    credentials(server) {
      authorizationOf(server);
      let credentials = built.get(server);
      if (!credentials) {
        const keptLists = lists.get(server);
        credentials = connectedCredentials({ server, records, createTicket, requestStates, lists: config.lists, loginIssuer: config.login.issuer, profile: profiles.get(server)!, ...(keptLists ? { keptLists } : {}) });
        built.set(server, credentials);
      }
      return credentials;
    },
    pages,
    lists: connectedLists(options.upstreams, config.lists, records),
    storeReachable: async () => store.reachable?.(),
    close: async () => {
      // What was learnt just before shutdown is written first, so that the next run (or another replica) has it.
      await Promise.all([...[...profiles.values()].map((kept) => kept.settled()), ...[...lists.values()].map((kept) => kept.settled())]);
      await store.close();
    },
  };
}

/** The authorization of the upstream `server`; a TypeError for a server not in connected mode (a caller's bug). */
function authorizationNamed(authorizations: ReadonlyMap<string, UpstreamAuthorization>, server: string): UpstreamAuthorization {
  const found = authorizations.get(server);
  if (!found) throw new TypeError(`no upstream in connected mode is named "${server}"`);
  return found;
}

/** What {@link upstreamAuthorizationPort} works with. */
interface PortParts {
  readonly store: OpenedConnectionStore['store'];
  readonly sealer: OpenedConnectionStore['sealer'];
  readonly authorizations: ReadonlyMap<string, UpstreamAuthorization>;
  /** Revokes and deletes a connection (deletes only, for a server no longer in connected mode), and forgets it in memory. */
  readonly revoke: (user: UserRef, server: string) => Promise<'revoked' | 'deleted'>;
  /** Forgets a connection kept in memory, once rewritten. */
  readonly forget: (user: UserRef, server: string) => void;
}

/** The pages' way to the upstreams' authorization servers: begin and complete a connection, and revoke one. */
function upstreamAuthorizationPort(parts: PortParts): UpstreamAuthorizationPort {
  const { store, sealer, authorizations, revoke } = parts;
  const authorizationOf = (server: string): UpstreamAuthorization => authorizationNamed(authorizations, server);
  return {
    async begin({ ticketId, scope, server, owner }) {
      const url = await authorizationOf(server).begin({ ticketId, ...(scope !== undefined ? { scope } : {}), ...(owner !== undefined ? { owner } : {}) });
      // Connecting again (a step-up, or after a refusal) replaces the connection: the old one is revoked (RFC 7009)
      // and deleted now, before the browser reaches the authorization server, so that the server makes a new grant.
      // Revoked once the new one is kept, it would take the new tokens with it where the server added the new
      // authorization to the old grant (it remembers the user's consent) and revokes a grant with its refresh token.
      const ticket = await readConnectTicket(store, sealer, ticketId);
      if (ticket?.server === server) await revoke(ticket.user, server);
      return url;
    },
    async complete(callbackUrl, server) {
      const state = callbackUrl.searchParams.get('state');
      const pending = state === null ? undefined : await pendingUpstreamFlow(store, sealer, state);
      const authorization = pending && authorizations.get(pending.server);
      // The callback's path names the server that sent the code; a flow of another server is left untouched, so
      // that a code is never taken to a token endpoint other than its issuer's (mix-up, RFC 9700 §4.4).
      if (!pending || !authorization || pending.server !== server) return undefined;
      // The ticket names the user the sign-in proved; it is burnt by the page once the connection is stored. It is
      // checked before the code is exchanged: for a ticket gone or expired, no tokens are asked for at all.
      const ticket = await readConnectTicket(store, sealer, pending.ticketId);
      if (!ticket || ticket.server !== pending.server) return undefined;
      const completed = await authorization.complete(callbackUrl);
      try {
        if ((await readConnectTicket(store, sealer, pending.ticketId)) === undefined) throw new ConnectTicketGoneError();
        await writeConnection(store, sealer, ticket.user, pending.server, completed.record);
      } catch (error) {
        // Tokens that are not kept would stay live at the upstream's authorization server: revoke them (RFC 7009).
        await authorization.revokeUnstored(completed.record).catch(() => undefined);
        if (error instanceof ConnectTicketGoneError) return undefined;
        throw error;
      }
      parts.forget(ticket.user, pending.server);
      return { ticketId: completed.ticketId };
    },
    revoke,
  };
}

/**
 * Revokes `user`'s connection to `server` with its `authorization`. A server taken out of connected mode (or out of
 * the configuration) has none, and no authorization server is known for it: its connection is deleted without
 * revocation, as the revoke command does.
 */
async function revokeOrDelete(authorization: UpstreamAuthorization | undefined, store: TokenStore, user: UserRef, server: string): Promise<'revoked' | 'deleted'> {
  if (authorization === undefined) {
    await store.delete(connectionKey(user, server));
    return 'deleted';
  }
  await authorization.revoke(user, server);
  return 'revoked';
}

/** What a server set's merged lists need of connected accounts. */
function connectedLists(upstreams: readonly ConnectedUpstream[], lists: ConnectedAccountsConfig['lists'], records: ConnectionRecords): ConnectedLists {
  return {
    servers: new Set(upstreams.map(({ server }) => server)),
    noteKey: CONNECT_INPUT_KEY,
    hide: lists === 'hide',
    async isConnected(server, auth) {
      const user = userOf(auth);
      // A store that cannot be read cannot tell: nothing is shown that the caller may not have connected.
      return user !== undefined && (await records.get(user, server).catch(() => undefined)) !== undefined;
    },
  };
}

/**
 * {@link connectionKey}, kept per frozen user object: the connected credentials pass one such object per verified
 * identity for every request, so a call with a known token computes no digest. Freed with the user object; at most
 * one key per server in connected mode for each.
 */
function createStoreKeys(): (user: UserRef, server: string) => string {
  const keys = new WeakMap<UserRef, Map<string, string>>();
  return (user, server) => {
    if (!Object.isFrozen(user)) return connectionKey(user, server);
    let own = keys.get(user);
    if (own === undefined) keys.set(user, (own = new Map()));
    let key = own.get(server);
    if (key === undefined) own.set(server, (key = connectionKey(user, server)));
    return key;
  };
}

/** Serves `<origin>/connect/client-metadata/<server>.json`, the client id of a server without a registered client. */
function serveClientMetadata(req: IncomingMessage, res: ServerResponse, url: URL, origin: string, servers: ReadonlyMap<string, string>): boolean {
  const match = CLIENT_METADATA_PATH.exec(url.pathname);
  const server = match ? servers.get(match[1]!) : undefined;
  if (server === undefined) return false;
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    res.writeHead(405, { allow: 'GET, HEAD', 'content-length': '0' }).end();
    return true;
  }
  const body = JSON.stringify(clientMetadataDocument(origin, server));
  res.writeHead(200, { 'content-type': JSON_MEDIA_TYPE, 'content-length': Buffer.byteLength(body), 'cache-control': 'max-age=300' });
  res.end(req.method === 'HEAD' ? undefined : body);
  return true;
}

/** The pages' outcomes ({@link ConnectPageEvent}) as log lines of `sink`, built as every other log line is. */
function pageLines(sink: LineSink): (line: object) => void {
  return (line) => {
    const { event, ...fields } = line as ConnectPageEvent;
    writeSafely(sink, formatLogLine(event, fields));
  };
}
