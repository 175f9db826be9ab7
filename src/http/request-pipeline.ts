import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AuthInfo } from '../core/kernel/auth-info.js';
import type { CompiledPolicy } from '../core/policy/compile-policy.js';
import type { Guard } from '../core/guard/create-guard.js';
import { ConfigurationError, GuardError, RequestRejectedError } from '../core/kernel/errors.js';
import type { McpMessageHandler } from '../core/mcp/handler.js';
import { requestIdOf, type JsonRpcId, type JsonRpcMessage } from '../core/wire/jsonrpc.js';
import { JSON_MEDIA_TYPE, mediaType } from './media-type.js';
import { isFilteredRequest, UNKNOWN_REQUEST } from '../core/policy/response-filter.js';
import { describeMcpMessage } from '../core/mcp/describe-mcp-message.js';
import { abortSignalFor } from './abort-signal.js';
import { answerWithFunction } from './answer-with-function.js';
import { setEndpointCors } from './cors.js';
import { filterListResponse, type ListAnswerMemo } from './filter-written-response.js';
import { isHttpHandler, type GuardedRequest, type HttpHandlerContext, type McpHttpHandler } from './http-handler.js';
import { decisionRequestOf } from './decision-request.js';
import { readBody } from './read-body.js';
import { authorizationHeader, DpopRequestOf, firstHeader, mirroredHeaders, requestPath } from './request-headers.js';
import { recordDecision, recordRefusal, serveTraced, traceStep, type RequestTrace } from './request-span.js';
import { createMetadataResponder } from './serve-metadata.js';
import { writeError } from './write-response.js';

/** The MCP server behind the guard: a plain message function, or an HTTP handler that writes its own answer. */
export type McpHandler = McpMessageHandler | McpHttpHandler;

/**
 * The guard's request flow on `node:http`, for one guard and one handler. See {@link createRequestPipeline}.
 */
export interface RequestPipeline {
  /** The guard; `guard.setPolicy` changes the policy of every request that arrives afterwards. */
  readonly guard: Guard;
  /**
   * Serves `req` when it is for the MCP endpoint (the path of the resource) or the metadata documents, and
   * returns true; returns false, having written nothing, for any other path.
   */
  serve(req: IncomingMessage, res: ServerResponse): boolean;
}

/**
 * Throws unless `handler` is a function or an {@link McpHttpHandler}; adapters call it before building a guard,
 * so a missing handler is the error reported.
 *
 * @throws ConfigurationError naming `options.handler`.
 */
export function checkHandler(handler: unknown): asserts handler is McpHandler {
  if (typeof handler !== 'function' && !isHttpHandler(handler)) {
    throw new ConfigurationError(
      'options.handler',
      'is required: pass an async function (message, context) => response, or httpHandler(...)/an SDK adapter',
    );
  }
}

type Req = IncomingMessage & { body?: unknown; auth?: AuthInfo };

/**
 * The one request pipeline every adapter shares (Express, plain `node:http`, the SDK adapters, the
 * gateway). For a POST to the MCP endpoint, in this order:
 *
 * `Origin` check → body read (bounded) → JSON-RPC parse → token (header only) → mirrored headers and
 * scope policy → rate limits (when set) → handler → filtered response.
 *
 * The body is parsed before the token is checked only so that a 401 carries the request's id; a bad body
 * is still reported after a missing or bad token. GET and DELETE (2025 sessions) go to an
 * {@link McpHttpHandler} that supports them, after the token and the base scopes; otherwise 405. Every
 * refusal is a standard answer (status, `WWW-Authenticate`, JSON-RPC error) reported to `onDecision`.
 *
 * Each request runs under the policy in force when it arrived (`guard.snapshot()`), so a `guard.setPolicy` while it
 * is in progress changes nothing for it, and the next request follows the new policy at once.
 *
 * With an OpenTelemetry SDK registered, each POST, GET and DELETE is a SERVER span (see `serveTraced`) with
 * children `mcp_guard.verify_token`, `mcp_guard.authorize` and `mcp_guard.handle`; without one, nothing is traced.
 *
 * @example
 * const pipeline = createRequestPipeline(createGuard(options), handler);
 * http.createServer((req, res) => { if (!pipeline.serve(req, res)) res.writeHead(404).end(); });
 * @throws ConfigurationError when `handler` is neither a function nor an {@link McpHttpHandler}.
 */
export function createRequestPipeline(guard: Guard, handler: McpHandler): RequestPipeline {
  checkHandler(handler);
  const httpHandler = isHttpHandler(handler) ? handler : undefined;
  const metadataPaths = new Set(guard.metadataPaths);
  const endpointPath = guard.resourcePath;
  const endpointPathSlash = endpointPath.endsWith('/') ? endpointPath : `${endpointPath}/`;
  const maxBodyBytes = guard.options.maxBodyBytes;
  const bodyTimeoutMs = guard.options.bodyTimeoutMs;
  // Filtered list answers, reused while the upstream answers the same bytes (see filterListResponse). One memo per
  // compiled policy: a filter key names the caller's scopes, not the rules, so answers must not outlive their policy.
  const listMemos = new WeakMap<CompiledPolicy, ListAnswerMemo>();
  const listMemoFor = (policy: CompiledPolicy): ListAnswerMemo => {
    let memo = listMemos.get(policy);
    if (memo === undefined) listMemos.set(policy, (memo = new Map()));
    return memo;
  };
  const serveMetadata = createMetadataResponder(guard);
  // The decision hook sees the request's narrowed view, never the request (its credentials); none made without a hook.
  const reportedRequest = guard.options.onDecision ? decisionRequestOf : (): undefined => undefined;
  const allowHeader = [
    'POST',
    ...(httpHandler && httpHandler.supportsGet !== false ? ['GET'] : []),
    ...(httpHandler && httpHandler.supportsDelete !== false ? ['DELETE'] : []),
    'OPTIONS',
  ].join(', ');

  function deny(pinned: Guard, req: Req, res: ServerResponse, error: unknown, id: JsonRpcId | null, message?: JsonRpcMessage, auth?: AuthInfo, traced?: RequestTrace): void {
    const answer = pinned.errorResponse(error, id);
    if (traced) recordRefusal(traced, error instanceof GuardError ? error.reason : undefined, answer);
    if (error instanceof GuardError) {
      pinned.report('deny', error.reason, answer.status, {
        request: reportedRequest(req),
        httpMethod: req.method ?? 'POST',
        message,
        auth,
        requiredScopes: 'requiredScopes' in error ? (error.requiredScopes as readonly string[]) : undefined,
        detail: error.message,
      });
    }
    writeError(res, answer);
  }

  function checkOrigin(req: Req, res: ServerResponse): void {
    const origin = req.headers.origin;
    guard.checkOrigin(origin);
    if (origin !== undefined) setEndpointCors(res, origin, false);
  }

  /** The caller: the identity itself when nothing must be waited for, so callers await only a real wait (keys, introspection). */
  function authenticate(req: Req): AuthInfo | Promise<AuthInfo> {
    // Authentication does not depend on the policy: every snapshot shares it.
    return guard.authenticate(authorizationHeader(req), req.url ?? '/', new DpopRequestOf(req));
  }

  function contextFor(pinned: Guard, res: ServerResponse, auth: AuthInfo, protocolVersion: string | undefined): HttpHandlerContext {
    // Made at once, not on first read: with it made lazily the gateway's exchanges were kept alive through
    // young-generation GCs again (4 KB promoted per request instead of 1 KB), which cost more than it saves.
    return {
      auth,
      protocolVersion,
      signal: abortSignalFor(res),
      filterResponse: (request, response) => pinned.filterResponse(request, response, auth, protocolVersion),
    };
  }

  async function servePost(req: Req, res: ServerResponse, traced: RequestTrace | undefined): Promise<void> {
    const pinned = guard.snapshot();
    let id: JsonRpcId | null = null;
    let message: JsonRpcMessage | undefined;
    let auth: AuthInfo | undefined;
    try {
      checkOrigin(req, res);
      const body = await readBody(req, maxBodyBytes, bodyTimeoutMs);
      // A body parser that ran before the guard (express.json()) leaves its result; it was JSON.
      const isJson = mediaType(req.headers['content-type']) === JSON_MEDIA_TYPE || (req.body !== undefined && req.readableEnded);
      const parsed = isJson ? pinned.parseMessage(body) : undefined;
      if (parsed?.ok) {
        message = parsed.message;
        id = requestIdOf(message);
        if (traced) describeMcpMessage(traced.span, message);
      } else if (parsed) {
        id = parsed.id;
      }
      const pending = traced ? traceStep(traced, 'mcp_guard.verify_token', () => authenticate(req)) : authenticate(req);
      // A cached token, or a new JWT whose key is held, costs no promise and no extra microtask.
      auth = pending instanceof Promise ? await pending : pending;
      if (!parsed) {
        throw new RequestRejectedError('Unsupported Media Type: send the JSON-RPC message as application/json', {
          status: 415,
          reason: 'unsupported_media_type',
          jsonRpcCode: -32600,
        });
      }
      if (!parsed.ok) throw parsed.error;
      const msg = parsed.message;
      const caller = auth;
      const { protocolVersion, requiredScopes } = traced
        ? traceStep(traced, 'mcp_guard.authorize', () => pinned.authorize(msg, caller, mirroredHeaders(req)))
        : pinned.authorize(msg, auth, mirroredHeaders(req));
      // Rate limits count only requests that would otherwise be served; none set, no call at all.
      const limiting = pinned.checkRateLimit?.(msg, caller);
      if (limiting !== undefined) await limiting;
      pinned.report('allow', 'allowed', 200, { request: reportedRequest(req), httpMethod: 'POST', message: msg, auth, requiredScopes });
      if (traced) recordDecision(traced, 'allow', 'allowed');
      req.auth = auth;
      if (!httpHandler) {
        const call = { message: msg, id, auth: caller, protocolVersion };
        await (traced
          ? traceStep(traced, 'mcp_guard.handle', () => answerWithFunction(pinned, handler as McpMessageHandler, call, req, res))
          : answerWithFunction(pinned, handler as McpMessageHandler, call, req, res));
        return;
      }
      req.body = msg;
      // The handler writes its own answer (JSON or SSE): every list result in it is filtered on the way out, whatever
      // message it answers (an upstream may carry one request's answer on another's exchange, or write a body in
      // answer to a notification), and a restricted resource read is kept out of shared caches. Only a list or read
      // answer is held and parsed whatever its text; any other passes on as it comes, searched for list keys.
      const key = isFilteredRequest(msg) ? pinned.policy.listFilterKey(msg.method, caller, msg, protocolVersion) : undefined;
      filterListResponse(res, msg, (response) => pinned.filterResponse(msg, response, caller, protocolVersion), key === undefined ? {} : { memo: { key, store: listMemoFor(pinned.policy) } });
      const handlerContext = contextFor(pinned, res, caller, protocolVersion);
      await (traced
        ? traceStep(traced, 'mcp_guard.handle', () => httpHandler.handle(req as GuardedRequest, res, handlerContext))
        : httpHandler.handle(req as GuardedRequest, res, handlerContext));
    } catch (error) {
      deny(pinned, req, res, error, id, message, auth, traced);
    }
  }

  async function serveGetOrDelete(req: Req, res: ServerResponse, traced: RequestTrace | undefined): Promise<void> {
    const pinned = guard.snapshot();
    let auth: AuthInfo | undefined;
    try {
      checkOrigin(req, res);
      const supported = httpHandler !== undefined && (req.method === 'GET' ? httpHandler.supportsGet !== false : httpHandler.supportsDelete !== false);
      if (!supported) throw methodNotAllowed(`Method not allowed: ${req.method} is not supported by this MCP endpoint`);
      const pending = traced ? traceStep(traced, 'mcp_guard.verify_token', () => authenticate(req)) : authenticate(req);
      // A cached token, or a new JWT whose key is held, costs no promise and no extra microtask.
      auth = pending instanceof Promise ? await pending : pending;
      const caller = auth;
      const requiredScopes = traced ? traceStep(traced, 'mcp_guard.authorize', () => pinned.authorizeBase(caller)) : pinned.authorizeBase(auth);
      // A GET (a stream) counts against the caller's limit; a DELETE ends a session and is never refused for it.
      const limiting = req.method === 'GET' ? pinned.checkRateLimit?.(undefined, caller) : undefined;
      if (limiting !== undefined) await limiting;
      pinned.report('allow', 'allowed', 200, { request: reportedRequest(req), httpMethod: req.method ?? 'GET', auth, requiredScopes });
      if (traced) recordDecision(traced, 'allow', 'allowed');
      req.auth = auth;
      const protocolVersion = firstHeader(req.headers['mcp-protocol-version']);
      // A GET's stream (a replay above all) may carry list answers too: filtered by their shape, as any answer is.
      if (req.method === 'GET') filterListResponse(res, undefined, (response) => pinned.filterResponse(UNKNOWN_REQUEST, response, caller, protocolVersion));
      const handlerContext = contextFor(pinned, res, caller, protocolVersion);
      await (traced
        ? traceStep(traced, 'mcp_guard.handle', () => httpHandler.handle(req as GuardedRequest, res, handlerContext))
        : httpHandler.handle(req as GuardedRequest, res, handlerContext));
    } catch (error) {
      deny(pinned, req, res, error, null, undefined, auth, traced);
    }
  }

  function serveEndpointOptions(req: Req, res: ServerResponse): void {
    const origin = req.headers.origin;
    try {
      guard.checkOrigin(origin);
    } catch (error) {
      deny(guard, req, res, error, null);
      return;
    }
    if (origin !== undefined) {
      const requested = req.headers['access-control-request-headers'];
      setEndpointCors(res, origin, true, typeof requested === 'string' ? requested : undefined, guard.dpop !== 'off');
    }
    res.writeHead(204, { Allow: allowHeader }).end();
  }

  function methodNotAllowed(text: string): RequestRejectedError {
    return new RequestRejectedError(text, { status: 405, reason: 'method_not_allowed', jsonRpcCode: -32600, headers: { Allow: allowHeader } });
  }

  return {
    guard,
    serve(req, res) {
      const path = requestPath(req);
      if (path === endpointPath || path === endpointPathSlash) {
        switch (req.method) {
          case 'POST':
            void serveTraced(req, res, endpointPath, servePost);
            return true;
          case 'GET':
          case 'DELETE':
            void serveTraced(req, res, endpointPath, serveGetOrDelete);
            return true;
          case 'OPTIONS':
            serveEndpointOptions(req, res);
            return true;
          default:
            deny(guard, req, res, methodNotAllowed('Method not allowed'), null);
            return true;
        }
      }
      if (path !== undefined && metadataPaths.has(path)) {
        serveMetadata(req, res);
        return true;
      }
      return false;
    },
  };
}
