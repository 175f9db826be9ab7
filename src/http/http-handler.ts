import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AuthInfo } from '../core/kernel/auth-info.js';
import type { JsonRpcMessage } from '../core/wire/jsonrpc.js';
import type { ListedServerCatalog } from '../core/policy/read-server-catalog.js';

/**
 * An incoming request after the guard let it through: `auth` is the verified caller (as the MCP SDK's
 * `requireBearerAuth` sets it, so SDK transports pass it on to tool handlers as `extra.authInfo`), and
 * for POST `body` is the one parsed JSON-RPC message.
 */
export type GuardedRequest = IncomingMessage & { auth: AuthInfo; body?: JsonRpcMessage };

/** Context given to an {@link McpHttpHandler}. */
export interface HttpHandlerContext {
  auth: AuthInfo;
  /** The MCP protocol revision of the request, when known. */
  protocolVersion?: string;
  /** Fires when the client goes away. */
  signal: AbortSignal;
  /**
   * The capabilities the client declared in the `initialize` of its session, when the handler's own session does not
   * carry them: a gateway's server set answers `initialize` itself, and a server without sessions of its own never
   * sees the client's again. Absent: unknown (or a revision without sessions, where each request declares them).
   */
  clientCapabilities?: unknown;
  /**
   * Filters a JSON-RPC response the way the guard filters list results for this caller: every list in a
   * success result (`tools`, `prompts`, `resources`, `resourceTemplates` arrays) comes back with only the items
   * the caller may use, whatever request or id carries it (pass `UNKNOWN_REQUEST` when the request is not
   * known); anything else comes back unchanged. For handlers that store or replay responses themselves (e.g. an
   * event store for `Last-Event-ID` resumption), so replays are filtered too.
   */
  filterResponse(request: JsonRpcMessage, response: JsonRpcMessage): JsonRpcMessage;
}

/**
 * An MCP handler that writes its own HTTP answer: the official SDK's Streamable HTTP transport, any
 * Express MCP handler, or a proxy to an upstream server. The guard authenticates and authorizes first,
 * then calls `handle`; list results it writes (JSON or SSE) are filtered by the caller's scopes.
 */
export interface McpHttpHandler {
  readonly kind: 'http';
  /** Handles one authorized request. POST bodies are already parsed into `req.body`. */
  handle(req: GuardedRequest, res: ServerResponse, context: HttpHandlerContext): void | Promise<void>;
  /** Whether GET (standalone SSE stream) is supported; otherwise the guard answers 405. Default true. */
  readonly supportsGet?: boolean;
  /** Whether DELETE (session termination) is supported; otherwise the guard answers 405. Default true. */
  readonly supportsDelete?: boolean;
  /**
   * Lists what the server behind the handler offers (tool and prompt names, resource URIs and templates), as no
   * caller, for the policy coverage check the middleware logs at start-up; the SDK adapters have it. Absent: the
   * coverage is not checked. Rejects when the server cannot be listed.
   *
   * @example
   * ```ts
   * const handler: McpHttpHandler = {
   *   ...httpHandler((req, res) => transport.handleRequest(req, res, req.body)),
   *   listCatalog: async () => ({ tools: ['notes_add', 'notes_list'], truncated: [] }),
   * };
   * ```
   */
  listCatalog?(): Promise<ListedServerCatalog>;
  /**
   * A rewrite of the handler's own for every list its answers carry, made in the same step as the guard's list
   * filter and before it, so each answer is parsed once (the gateway hides tools whose definitions differ from
   * their pins with it). With it, list answers are read whatever the lists mode. Absent: none.
   */
  readonly listFilter?: HandlerListFilter;
  /**
   * Holds a POST until what the guard's decision on `message` depends on is known (the gateway's hidden tools, while
   * its start-up comparison with the pinned definitions runs). Asked once the caller is authenticated, before the
   * guard decides: undefined to go on at once (the common case, at no cost), or a promise, bounded in time, to wait
   * for. A refusal that does not depend on what it waits for (`Guard.refuseBeforeHold`: no base scopes) is then
   * given at once, without waiting; the promise must then write nothing to an answered `res`. Otherwise the guard
   * decides after the wait, unless the handler answered meanwhile (e.g. 503 with `Retry-After`: nothing is decided
   * then) or the client went away. Must not reject. Absent: never held.
   */
  readonly holdBeforeDecision?: (message: JsonRpcMessage, res: ServerResponse) => Promise<void> | undefined;
}

/**
 * See {@link McpHttpHandler.listFilter}.
 *
 * @example
 * ```ts
 * const listFilter: HandlerListFilter = { filter: (response) => response, key: () => '' };
 * ```
 */
export interface HandlerListFilter {
  /**
   * Rewrites one JSON-RPC response of an answer, found by its shape as the guard's filter finds lists; returns it
   * unchanged (the same object) when it leaves it as it is.
   */
  filter(response: JsonRpcMessage): JsonRpcMessage;
  /**
   * A text that changes whenever `filter` may rewrite the same response differently: part of the key under which a
   * filtered list answer is reused while the upstream answers the same bytes.
   */
  key(): string;
}

/** Options of {@link httpHandler}. */
export interface HttpHandlerOptions {
  /** Default true. */
  supportsGet?: boolean;
  /** Default true. */
  supportsDelete?: boolean;
}

/**
 * Wraps an Express-style MCP handler `(req, res) => …` so the guard hands it authorized requests.
 *
 * @example
 * mcpOAuthGuard({ ...loadOptionsFromEnv(), handler: httpHandler((req, res) => transport.handleRequest(req, res, req.body)) })
 */
export function httpHandler(
  handle: (req: GuardedRequest, res: ServerResponse, context: HttpHandlerContext) => void | Promise<void>,
  options: HttpHandlerOptions = {},
): McpHttpHandler {
  return { kind: 'http', handle, supportsGet: options.supportsGet ?? true, supportsDelete: options.supportsDelete ?? true };
}

/** True when `handler` is an {@link McpHttpHandler}. */
export function isHttpHandler(handler: unknown): handler is McpHttpHandler {
  return typeof handler === 'object' && handler !== null && (handler as { kind?: unknown }).kind === 'http';
}

/** Re-export for handlers that want the message type. */
export type { JsonRpcMessage };
