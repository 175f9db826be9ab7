/**
 * The connect flow as the exchange meets it ({@link CallerFlow}): a retry's gateway `requestState` checked and
 * removed before the request goes upstream, a {@link ConnectionRequiredError} turned into the answer of
 * `connection-required-answer.ts`, and an upstream's `insufficient_scope` turned into a step-up, once.
 */
import type { AuthInfo } from '../../../core/kernel/auth-info.js';
import { bodyProtocolVersion, isStatelessRevision } from '../../../core/mcp/protocol-version.js';
import { scopeTokens } from '../../../core/wire/scope-token.js';
import { jsonRpcError, JsonRpcErrorCode, requestIdOf, type JsonRpcMessage, type JsonRpcRequest } from '../../../core/wire/jsonrpc.js';
import type { CallerFlow, CallerFlowAnswer, CallerFlowRequest } from '../../upstream-auth/caller-flow.js';
import type { KeptLists } from '../../upstream-auth/kept-lists.js';
import type { UserRef } from '../oauth/connection-record.js';
import { CallerCannotConnectError } from './caller-cannot-connect-error.js';
import { CONNECT_INPUT_KEY, connectionRequiredAnswer, declaresUrlElicitation, requestCapabilities, scopeNotGrantedAnswer, type ConnectListsMode } from './connection-required-answer.js';
import { ConnectionRequiredError } from './connection-required-error.js';
import { ScopeNotGrantedError } from './scope-not-granted-error.js';
import { isGatewayRequestState, type RequestStateRefusal, type RequestStates } from './request-state.js';

/** Makes the link a user opens to connect `server` (`<gateway>/connect/<ticket>`), asking for `scope` when given. */
export type CreateConnectTicket = (user: UserRef, server: string, scope: string | undefined) => Promise<URL>;

/** Default {@link ConnectFlowOptions.maxUrlElicitationSessions}. */
export const DEFAULT_MAX_URL_ELICITATION_SESSIONS = 10_000;

/** Options of {@link createConnectFlow}. */
export interface ConnectFlowOptions {
  /** The configuration file's server name, `""` for the single upstream. */
  readonly server: string;
  readonly createTicket: CreateConnectTicket;
  readonly requestStates: RequestStates;
  /** `MCP_AUTH_CONNECT_LISTS`. Default `show`. */
  readonly lists?: ConnectListsMode;
  /**
   * What the upstream last listed for a connected user: a list request of a user who has not connected gets its
   * items (with `show`). Default none: such a list is empty.
   */
  readonly keptLists?: KeptLists;
  /**
   * The login issuer (`MCP_AUTH_LOGIN_ISSUER`, or the only issuer): a caller of another issuer is refused at once,
   * with no link made, since the connect page could not sign them in. Default: any issuer.
   */
  readonly loginIssuer?: string;
  /**
   * The scopes of the caller's connection (space-separated), when it has one: `scope`, granted; `stepUpScope`, asked
   * for by the step-up the connection was made for (see `ConnectionRecord.stepUpScope`).
   */
  readonly connectionScope: (auth: AuthInfo) => Promise<{ readonly scope?: string; readonly stepUpScope?: string } | undefined>;
  /**
   * The caller's step-up got its final refusal ({@link ScopeNotGrantedError}): forgets the step-up, so that the
   * refusal is given once and the next request leads to connecting again (the scope may be granted by then), each
   * round needing the user in the browser: never a loop. Default: nothing.
   */
  readonly stepUpRefused?: (auth: AuthInfo) => Promise<void>;
  /**
   * The upstream refused the caller's token after a refresh: ends the connection when it is not a new one (see
   * {@link CallerFlow.refusedAfterRenewal}), resolving true when the caller is to connect again. Default: never.
   */
  readonly endRefusedConnection?: (auth: AuthInfo) => Promise<boolean>;
  /**
   * Most sessions (revisions with sessions) remembered as opened by a client that declared URL-mode elicitation;
   * the oldest is forgotten first, and its client then gets the tool-result answer. Per process: a replica that did
   * not see a session's `initialize` answers it the same way. Default 10 000.
   */
  readonly maxUrlElicitationSessions?: number;
}

/** What {@link CallerFlow.prepare} notes of a verified retry. */
interface RetryNote {
  readonly stepUpScope?: string;
  /** The user declined or cancelled the connect elicitation: it is not asked again for this request. */
  readonly declined: boolean;
}

/** The user a caller's token names (its issuer and subject), or undefined when it names none. */
export function userOf(auth: AuthInfo): UserRef | undefined {
  const { iss, sub } = auth.extra;
  return typeof iss === 'string' && iss !== '' && typeof sub === 'string' && sub !== '' ? { issuer: iss, subject: sub } : undefined;
}

/**
 * The connect flow of one server.
 *
 * @example
 * const flow = createConnectFlow({ server: '', createTicket, requestStates, connectionScope: async () => undefined });
 */
export function createConnectFlow(options: ConnectFlowOptions): CallerFlow {
  const { server, requestStates } = options;
  const maxSessions = options.maxUrlElicitationSessions ?? DEFAULT_MAX_URL_ELICITATION_SESSIONS;
  // Insertion order is age: the first key is the oldest.
  const urlSessions = new Set<string>();
  const urlElicitation = (request: CallerFlowRequest): boolean => {
    const message = request.message;
    if ((request.note as RetryNote | undefined)?.declined) return false;
    if (isStatelessRevision(bodyProtocolVersion(message))) return declaresUrlElicitation(requestCapabilities(message));
    if (message && 'method' in message && message.method === 'initialize') return declaresUrlElicitation(message.params?.capabilities);
    // A server set's session: the client's own initialize, which a server without sessions never sees again.
    if (request.clientCapabilities !== undefined) return declaresUrlElicitation(request.clientCapabilities);
    return request.sessionId !== undefined && urlSessions.has(request.sessionId);
  };
  return {
    async prepare(request) {
      const message = request.message;
      if (!message || !('id' in message) || !('method' in message) || !isGatewayRequestState(message.params?.requestState)) return undefined;
      const verified = await requestStates.verify(message.params.requestState as string, message, request.auth, server);
      if ('refused' in verified) return refusedState(message, verified.refused);
      if ('busy' in verified) return busyState(message, verified.retryAfterMs);
      const params: Record<string, unknown> = { ...message.params };
      delete params.requestState;
      if (verified.upstreamState !== undefined) params.requestState = verified.upstreamState;
      const responses = params.inputResponses;
      let declined = false;
      if (typeof responses === 'object' && responses !== null && CONNECT_INPUT_KEY in responses) {
        const { [CONNECT_INPUT_KEY]: ours, ...theirs } = responses as Record<string, unknown>;
        const action = typeof ours === 'object' && ours !== null ? (ours as { action?: unknown }).action : undefined;
        declined = action === 'decline' || action === 'cancel';
        if (Object.keys(theirs).length > 0) params.inputResponses = theirs;
        else delete params.inputResponses;
      }
      request.message = { ...message, params };
      request.note = { ...(verified.stepUpScope !== undefined ? { stepUpScope: verified.stepUpScope } : {}), declined } satisfies RetryNote;
      return undefined;
    },
    answer(error, request) {
      if (error instanceof CallerCannotConnectError) return Promise.resolve(cannotConnect(request.message, error));
      if (error instanceof ScopeNotGrantedError) return Promise.resolve(scopeNotGrantedAnswer(request.message, error));
      if (!(error instanceof ConnectionRequiredError)) return undefined;
      const user = userOf(request.auth);
      if (!user) return Promise.resolve(cannotConnect(request.message, new CallerCannotConnectError(server)));
      // Never a link for a caller the connect page would refuse: the answer says so itself.
      const login = options.loginIssuer;
      if (login !== undefined && user.issuer !== login) return Promise.resolve(cannotConnect(request.message, otherIssuer(server, user, login)));
      const message = request.message;
      const upstreamState = message && 'params' in message ? message.params?.requestState : undefined;
      return connectionRequiredAnswer(
        { message, urlElicitation: urlElicitation(request), ...(request.httpMethod !== undefined ? { httpMethod: request.httpMethod } : {}) },
        {
          error,
          link: () => options.createTicket(user, server, error.scope),
          mintState: () =>
            requestStates.mint({
              auth: request.auth,
              message: message as JsonRpcRequest,
              server,
              ...(error.reason === 'insufficient_scope' && error.scope !== undefined ? { stepUpScope: error.scope } : {}),
              ...(typeof upstreamState === 'string' ? { upstreamState } : {}),
            }),
          ...(options.lists ? { lists: options.lists } : {}),
          ...(options.keptLists ? { keptLists: options.keptLists } : {}),
        },
      );
    },
    needsConnection: (error) => error instanceof ConnectionRequiredError,
    async refusedAfterRenewal(request) {
      const ended = options.endRefusedConnection ? await options.endRefusedConnection(request.auth) : false;
      return ended ? new ConnectionRequiredError(server, 'expired') : undefined;
    },
    async insufficientScope(request, scope) {
      const asked = scopeTokens(scope);
      // Nothing named: nothing more to ask for.
      if (asked.length === 0) return undefined;
      const connection = await options.connectionScope(request.auth);
      const granted = scopeTokens(connection?.scope);
      // Held already: the upstream refuses for another reason, and its refusal passes on.
      if (covers(granted, asked)) return undefined;
      // The connection was made for a step-up to these scopes and the server granted less: another link would loop.
      if (covers(scopeTokens(connection?.stepUpScope), asked)) {
        await options.stepUpRefused?.(request.auth);
        return new ScopeNotGrantedError(server, asked.join(' '));
      }
      // A retry of a step-up for this scope whose user did not connect again: asking again would loop too.
      const note = request.note as RetryNote | undefined;
      if (note?.stepUpScope !== undefined && covers(scopeTokens(note.stepUpScope), asked)) return undefined;
      // The union: connecting again must not lose what the connection already holds.
      return new ConnectionRequiredError(server, 'insufficient_scope', [...new Set([...granted, ...asked])].join(' '));
    },
    sessionStarted(sessionId, initialize) {
      if (!('method' in initialize) || !declaresUrlElicitation(initialize.params?.capabilities)) return;
      urlSessions.delete(sessionId);
      urlSessions.add(sessionId);
      if (urlSessions.size > maxSessions) urlSessions.delete(urlSessions.values().next().value!);
    },
  };
}

const REFUSED_TEXT: Readonly<Record<RequestStateRefusal, string>> = {
  malformed: 'was not issued by this gateway',
  forged: 'was not issued by this gateway',
  expired: 'has expired',
  other_caller: 'was issued to another user',
  other_request: 'was issued for another request',
  replayed: 'was already used',
};

/** A retry whose gateway state does not check out: refused, never forwarded (MRTR "Server Requirements"). */
function refusedState(message: JsonRpcRequest, reason: RequestStateRefusal): CallerFlowAnswer {
  return {
    status: 200,
    response: jsonRpcError(message.id, JsonRpcErrorCode.InvalidParams, `Invalid params: the requestState ${REFUSED_TEXT[reason]}; send the request again without it`),
    denied: 'request_invalid',
  };
}

/**
 * A retry whose state checks out but that its caller cannot claim now: it holds its share of the used states. 429
 * with `Retry-After` (RFC 6585 §4) and the guard's rate-limit code, as for DPoP proofs over a caller's share; the
 * state is not used up, so the same retry is accepted then.
 */
function busyState(message: JsonRpcRequest, retryAfterMs: number): CallerFlowAnswer {
  return {
    status: 429,
    response: jsonRpcError(message.id, JsonRpcErrorCode.RateLimited, 'Too many requests: this user has too many connect retries in progress; retry later'),
    headers: { 'Retry-After': String(Math.max(1, Math.ceil(retryAfterMs / 1000))) },
    denied: 'rate_limited',
  };
}

/**
 * The refusal of a caller who cannot connect (403): why, and for a caller of another issuer, which issuer can.
 * Names issuers and the server, never the user.
 */
function cannotConnect(message: JsonRpcMessage | undefined, error: CallerCannotConnectError): CallerFlowAnswer {
  const server = error.server === '' ? 'the upstream MCP server' : `the MCP server "${error.server}"`;
  const text =
    error.reason === 'other_issuer' && error.issuers !== undefined
      ? `Forbidden: accounts of the issuer ${error.issuers.caller} cannot connect ${server}: this gateway connects accounts only for users who sign in through ${error.issuers.login}`
      : `Forbidden: this caller's token names no user (issuer and subject), so no account can be connected for it at ${server}`;
  // An issuer the login cannot sign in, or a token without the claims (issuer and subject) a connection is kept under.
  const denied = error.reason === 'other_issuer' ? 'token_issuer' : 'token_claims';
  return { status: 403, response: jsonRpcError(requestIdOf(message), JsonRpcErrorCode.Forbidden, text), denied };
}

/** The refusal of `user`, whose issuer is not the login issuer `login`. */
export function otherIssuer(server: string, user: UserRef, login: string): CallerCannotConnectError {
  return new CallerCannotConnectError(server, 'other_issuer', { caller: user.issuer, login });
}

function covers(granted: readonly string[], asked: readonly string[]): boolean {
  return asked.every((token) => granted.includes(token));
}
