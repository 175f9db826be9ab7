/**
 * The one place that decides what a client is told when its request needs an account it has not connected (a
 * {@link ConnectionRequiredError}): chosen by the request's revision, its method and what the client declared.
 *
 * | Request                                                              | Answer (HTTP status)                                      |
 * | -------------------------------------------------------------------- | --------------------------------------------------------- |
 * | 2026-07-28, `tools/call`, `prompts/get`, `resources/read`, client declared `elicitation.url` | result `input_required` with a URL-mode `elicitation/create` and `requestState` (200) |
 * | 2025-11-25 (or earlier) client that declared `elicitation.url`, any method but a list | error -32042 `URLElicitationRequiredError` with `data.elicitations` (200) |
 * | a list (`tools/list`, …)                                             | with `show`, what the upstream last listed for a connected user (tools, prompts, resource templates), else an empty list, and `_meta` names the need and the link; with `hide`, an empty list (200); in a server set, the merged list's `_meta` holds each such note by server name |
 * | any other `tools/call`                                               | tool result with `isError: true`, the link and "retry" (200) |
 * | any other request                                                    | error -32042 with the same text and `data.elicitations` (200) |
 * | a notification                                                       | accepted, not forwarded (202, no body)                    |
 * | GET (the event stream)                                               | 405 with `Allow: POST, DELETE` (no body)                  |
 * | DELETE (the session's end)                                           | 200 (no body); the gateway forgets the session            |
 *
 * Why the error rather than `elicitation/create` for 2025-11-25: the user connects in a browser, which takes
 * minutes. A server request would hold the client's request (and an event stream) open all that time, and the
 * client's answer to it would have to reach this gateway, not the upstream whose session it is. The error ends the
 * request at once, keeps nothing, and the spec lets the client retry when the user is done (the optional
 * `notifications/elicitation/complete` is not sent: the gateway holds no stream to send it on).
 *
 * Why HTTP 200 for the errors: a JSON-RPC error is answered with 200 up to 2025-11-25, and 2026-07-28's transport
 * gives this code no status of its own (a 4xx without one of that revision's errors makes dual-era clients fall back
 * to `initialize`).
 *
 * Every -32042 carries `data.elicitations` (one URL-mode elicitation: `mode`, `elicitationId`, `url`, `message`),
 * as `URLElicitationRequiredError` requires. For a request other than `tools/call` from a client without URL
 * elicitation (`prompts/get`, `resources/read`, …, whose results have no `isError`), it is still the answer: it is
 * the one error that says "the user must open a link, then retry", and its message holds the link in words, so a
 * client that does not read `data` still shows the user what to do.
 *
 * GET and DELETE carry no message to answer, and no link is made for them: a GET opens the server's event stream,
 * which the Streamable HTTP transport lets a server decline with 405 (the client goes on without it, as before the
 * upstream's session is opened); a DELETE ends the session, which the gateway does on its side (the upstream's
 * session, which it cannot reach without the user's token, expires there). A notification gets 202 as the
 * transport answers any notification, and is not forwarded.
 *
 * 2026-07-28 lists -32042 as 2025-11-25 only; its clients get it only for a request the input-required pattern does
 * not cover and that is not a list (its clients read the message).
 */
import type { ConnectListsMode } from '../../config/connected-accounts-config.js';
import { randomUUID } from 'node:crypto';
import { bodyProtocolVersion, CLIENT_CAPABILITIES_META_KEY, isStatelessRevision } from '../../../core/mcp/protocol-version.js';
import { LIST_SPECS } from '../../../core/policy/policy-rules.js';
import { scopeTokens } from '../../../core/wire/scope-token.js';
import { jsonRpcError, JsonRpcErrorCode, requestIdOf, type JsonRpcId, type JsonRpcMessage, type JsonRpcResponse } from '../../../core/wire/jsonrpc.js';
import type { CallerFlowAnswer } from '../../upstream-auth/caller-flow.js';
import type { KeptLists } from '../../upstream-auth/kept-lists.js';
import type { ConnectionRequiredError } from './connection-required-error.js';
import type { ScopeNotGrantedError } from './scope-not-granted-error.js';

/** The key of the gateway's entry in `inputRequests` (and the client's `inputResponses`), and of its list note in `_meta`. */
export const CONNECT_INPUT_KEY = 'io.github.mcp-oauth-guard/connect';

/**
 * `MCP_AUTH_CONNECT_LISTS`: what a list request (`tools/list`, …) gets from a server the user has not connected.
 * The user's own list cannot be asked for without the user's token, and a client must still be able to list.
 * `show` (the default) answers the definitions the upstream last listed for a user who had connected it (kept in
 * the token store, see `kept-upstream-lists.ts`; the resources themselves are never kept), so that the user finds
 * its tools, and calling one leads to the connect flow; until a connected user has listed, the list is empty. It
 * adds a `_meta` note under {@link CONNECT_INPUT_KEY} with a message and the link, so that a client or user can see
 * why and connect. `hide` answers an empty list alone. The answer goes through the caller's policy filter as every
 * list answer does (in a server set, that server's part is renamed and merged with the others, the notes kept in the
 * merged `_meta` by server name; a set that may reuse the server's pages for anyone serves those, see
 * `merge-lists.ts`).
 */
export type { ConnectListsMode };

/** The requests that may be answered with an input-required result (2026-07-28 `basic/patterns/mrtr`, "Supported Requests"). */
const INPUT_REQUIRED_METHODS: ReadonlySet<string> = new Set(['tools/call', 'prompts/get', 'resources/read']);

/** The request being answered. */
export interface ConnectAnswerRequest {
  /** The POST's message; undefined for GET and DELETE. */
  readonly message: JsonRpcMessage | undefined;
  /** Whether the client declared URL-mode elicitation (see {@link declaresUrlElicitation}). */
  readonly urlElicitation: boolean;
  /** The HTTP method: `POST` (default), `GET` or `DELETE`. */
  readonly httpMethod?: string;
}

/** What the answer is made of. */
export interface ConnectAnswerParts {
  readonly error: ConnectionRequiredError;
  /** Makes the link the user opens (a connect ticket); called only when the answer carries it. */
  readonly link: () => Promise<URL>;
  /** Mints the gateway's `requestState`; called only for an input-required result. */
  readonly mintState: () => string;
  /** Default `show`. */
  readonly lists?: ConnectListsMode;
  /** With `show`, the items a list is answered with: those the upstream last listed for a connected user. Default none. */
  readonly keptLists?: KeptLists;
}

/**
 * The answer to `parts.error` for `request` (see the table above).
 *
 * @example
 * await connectionRequiredAnswer({ message: call, urlElicitation: false }, { error, link: () => ticket(), mintState });
 * // { status: 200, response: { jsonrpc: '2.0', id: 1, result: { content: [{ type: 'text', text: '… Open https://… then retry …' }], isError: true } } }
 */
export async function connectionRequiredAnswer(request: ConnectAnswerRequest, parts: ConnectAnswerParts): Promise<CallerFlowAnswer> {
  const { message } = request;
  const id = requestIdOf(message);
  const stateless = isStatelessRevision(bodyProtocolVersion(message));
  const method = message && 'method' in message ? message.method : undefined;
  const reason = reasonText(parts.error);
  const complete = stateless ? { resultType: 'complete' } : {};
  const list = method === undefined ? undefined : LIST_SPECS.get(method);
  if (list && id !== null) {
    // A client must be able to list: the user's own list cannot be asked for without their token.
    if (parts.lists === 'hide') return ok({ jsonrpc: '2.0', id, result: { ...complete, [list.resultKey]: [] } });
    // The kept list is a first page: a request for a later one (a cursor of the user's own, from before) gets none.
    const first = (message as { params?: { cursor?: unknown } }).params?.cursor === undefined;
    const items = (first ? await parts.keptLists?.read(method!) : undefined) ?? [];
    const meta = { _meta: { [CONNECT_INPUT_KEY]: { message: `${reason} Call one of its tools, or open the link, to connect it.`, url: (await parts.link()).href } } };
    return ok({ jsonrpc: '2.0', id, result: { ...complete, [list.resultKey]: items, ...meta } });
  }
  if (message === undefined) return request.httpMethod === 'DELETE' ? noBody(200) : noBody(405, { Allow: 'POST, DELETE' });
  if (id === null) return noBody(202);
  const url = (await parts.link()).href;
  if (stateless && request.urlElicitation && INPUT_REQUIRED_METHODS.has(method!)) {
    const params = { mode: 'url', message: `${reason} Open the link to connect it.`, url };
    return ok({ jsonrpc: '2.0', id, result: { resultType: 'input_required', inputRequests: { [CONNECT_INPUT_KEY]: { method: 'elicitation/create', params } }, requestState: parts.mintState() } });
  }
  if (!stateless && request.urlElicitation) return ok(urlElicitationRequired(id, 'This request requires connecting an account.', url, `${reason} Open the link to connect it.`));
  const text = `${reason} Open ${url} in a browser to connect it, then retry this request.`;
  if (method === 'tools/call') return ok({ jsonrpc: '2.0', id, result: { ...complete, content: [{ type: 'text', text }], isError: true } });
  return ok(urlElicitationRequired(id, text, url, `${reason} Open the link to connect it.`));
}

/** A -32042 `URLElicitationRequiredError` (MCP 2025-11-25 `client/elicitation`) with its one URL-mode elicitation. */
function urlElicitationRequired(id: JsonRpcId, text: string, url: string, message: string): JsonRpcResponse {
  return jsonRpcError(id, JsonRpcErrorCode.UrlElicitationRequired, text, { elicitations: [{ mode: 'url', elicitationId: randomUUID(), url, message }] });
}

/** An answer with no body, for a request with none to answer (GET, DELETE) or a notification. */
function noBody(status: 200 | 202 | 405, headers?: Readonly<Record<string, string>>): CallerFlowAnswer {
  return { status, response: undefined, ...(headers ? { headers } : {}), denied: 'connection_required' };
}

/**
 * The answer to a {@link ScopeNotGrantedError}: a final 403 JSON-RPC error (-31403) naming the server and the
 * scopes, with no link, since connecting again would be refused the same way.
 *
 * @example
 * scopeNotGrantedAnswer(call, new ScopeNotGrantedError('notes', 'notes:write'));
 * // { status: 403, response: { jsonrpc: '2.0', id: 1, error: { code: -31403, message: "Forbidden: … did not grant … (notes:write) …" } } }
 */
export function scopeNotGrantedAnswer(message: JsonRpcMessage | undefined, error: ScopeNotGrantedError): CallerFlowAnswer {
  const scope = printableScope(error.scope);
  const text = `Forbidden: the authorization server of ${serverName(error.server)} did not grant the permissions this request needs${scope ? ` (${scope})` : ''}, though your account was connected again to ask for them. Connecting again will not help: ask that server's administrator to grant them.`;
  // The upstream still lacks a scope the caller's connection could not get: a scope refusal, not a missing connection.
  return { status: 403, response: jsonRpcError(requestIdOf(message), JsonRpcErrorCode.Forbidden, text), denied: 'scope_insufficient' };
}

/**
 * Whether `capabilities` (a client's `ClientCapabilities`) declare URL-mode elicitation: `elicitation.url` is an
 * object (2025-11-25 and 2026-07-28 `client/elicitation`, "Capabilities"; an empty `elicitation` means form only).
 */
export function declaresUrlElicitation(capabilities: unknown): boolean {
  const elicitation = objectOr(capabilities)?.elicitation;
  const url = objectOr(elicitation)?.url;
  return url !== undefined && objectOr(url) !== undefined;
}

/** The capabilities a 2026-07-28 request declares in `params._meta`, if any. */
export function requestCapabilities(message: JsonRpcMessage | undefined): unknown {
  const params = message && 'params' in message ? objectOr(message.params) : undefined;
  return objectOr(params?._meta)?.[CLIENT_CAPABILITIES_META_KEY];
}

/** A connect answer: 200, recorded as a `connection_required` deny (the upstream was not called). */
function ok(response: JsonRpcResponse): CallerFlowAnswer {
  return { status: 200, response, denied: 'connection_required' };
}

/** Why the user must connect, in words; names the server (a configuration name) and scopes, never the user. */
function reasonText(error: ConnectionRequiredError): string {
  const server = serverName(error.server);
  if (error.reason === 'expired') return `Your connection to ${server} has expired.`;
  if (error.reason === 'insufficient_scope') {
    const scope = printableScope(error.scope);
    return `Your connection to ${server} lacks the permissions this request needs${scope ? ` (${scope})` : ''}.`;
  }
  return `Your account at ${server} is not connected.`;
}

/** A server in words: a configuration name, or the single upstream. */
function serverName(server: string): string {
  return server === '' ? 'the upstream MCP server' : `the MCP server "${server}"`;
}

/** The scope tokens of RFC 6749 §3.3's grammar only, at most 512 characters: anything else an upstream sent is not repeated. */
function printableScope(scope: string | undefined): string | undefined {
  if (scope === undefined || scope.length > 512) return undefined;
  const tokens = scopeTokens(scope);
  return tokens.length > 0 ? tokens.join(' ') : undefined;
}

function objectOr(value: unknown): Record<string, unknown> | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
}
