import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AuthInfo } from '../core/kernel/auth-info.js';
import type { CompiledPolicy } from '../core/policy/compile-policy.js';
import type { Guard } from '../core/guard/create-guard.js';
import type { DecisionRequest } from '../core/kernel/decision.js';
import { GuardError, RequestRejectedError } from '../core/kernel/errors.js';
import type { McpMessageHandler } from '../core/mcp/handler.js';
import { JsonRpcErrorCode, requestIdOf, type JsonRpcId, type JsonRpcMessage } from '../core/wire/jsonrpc.js';
import { JSON_MEDIA_TYPE, mediaType } from './media-type.js';
import { answerRewrites, UNKNOWN_REQUEST, type AnswerRewrites } from '../core/policy/response-filter.js';
import { describeMcpMessage } from '../core/mcp/describe-mcp-message.js';
import { abortSignalFor } from './abort-signal.js';
import { answerWithFunction } from './answer-with-function.js';
import { handlerFailureWarnings, type HandlerFailureHook } from './handler-failure-log.js';
import { warningSink } from '../core/kernel/log-options.js';
import { setEndpointCors } from './cors.js';
import { filterListResponse, type FilterListResponseOptions, type ListAnswerMemo } from './filter-written-response.js';
import { isHttpHandler, type GuardedRequest, type HandlerListFilter, type HttpHandlerContext, type McpHttpHandler } from './http-handler.js';
import { decisionRequestOf } from './decision-request.js';
import { readBody } from './read-body.js';
import { authorizationHeader, DpopRequestOf, firstHeader, mirroredHeaders } from './request-headers.js';
import { recordDecision, recordRefusal, traceStep, type RequestTrace } from './request-span.js';
import { writeError } from './write-response.js';
import type { AuditTrail } from './audit-trail.js';
import { refusalContext } from './refusal-context.js';

/** A request on its way through the pipeline: the parsed body and the caller are set on it once known. */
export type EndpointRequest = IncomingMessage & { body?: unknown; auth?: AuthInfo };

/**
 * The MCP endpoint of one guard and one handler: what `createRequestPipeline` runs for each method, step by step
 * (see there for the order and the answers). Made once per pipeline; everything a request needs that does not
 * change between requests is a field, so serving a request makes no closure the pipeline did not make before.
 * `servePost` and `serveGetOrDelete` are bound once, as `serveTraced` calls them by reference.
 */
export class McpEndpoint {
  /** `Allow` of the endpoint: POST, GET and DELETE when the handler takes them, OPTIONS. */
  readonly allowHeader: string;
  readonly #guard: Guard;
  readonly #fn: McpMessageHandler | undefined;
  readonly #httpHandler: McpHttpHandler | undefined;
  readonly #maxBodyBytes: number;
  readonly #bodyTimeoutMs: number;
  // Filtered list answers, reused while the upstream answers the same bytes (see filterListResponse). One memo per
  // compiled policy: a filter key names the caller's scopes, not the rules, so answers must not outlive their policy.
  readonly #listMemos = new WeakMap<CompiledPolicy, ListAnswerMemo>();
  // Which answers are rewritten (the guard's lists mode): with every list shown, a list answer passes as a tool call's.
  readonly #rewrites: AnswerRewrites;
  // The written-answer filter's options for an answer without a memo: one object for every such request.
  readonly #plainFilterOptions: FilterListResponseOptions;
  // The decision hook sees the request's narrowed view, never the request (its credentials); none made without a hook.
  readonly #reportedRequest: (req: IncomingMessage) => DecisionRequest | undefined;
  // The audit trail, when the guard has one: told of each decision, with the caller and the message.
  readonly #audit: AuditTrail | undefined;
  // The handler's hold before the guard decides, bound once; none, nothing is asked per request.
  readonly #holdBeforeDecision: McpHttpHandler['holdBeforeDecision'];
  // Told of each error the handler threw: the client gets a bare -32603, the operator a warning line.
  readonly #handlerFailed: HandlerFailureHook;

  constructor(guard: Guard, handler: McpMessageHandler | McpHttpHandler, audit?: AuditTrail) {
    this.#guard = guard;
    this.#audit = audit;
    this.#handlerFailed = handlerFailureWarnings(warningSink(guard.options));
    this.#httpHandler = isHttpHandler(handler) ? handler : undefined;
    this.#fn = this.#httpHandler === undefined ? (handler as McpMessageHandler) : undefined;
    this.#holdBeforeDecision = this.#httpHandler?.holdBeforeDecision?.bind(this.#httpHandler);
    this.#maxBodyBytes = guard.options.maxBodyBytes;
    this.#bodyTimeoutMs = guard.options.bodyTimeoutMs;
    this.#reportedRequest = guard.options.onDecision ? decisionRequestOf : (): undefined => undefined;
    // A handler's own list filter reads list answers whatever the lists mode (the guard's filter still shows them all).
    this.#rewrites = answerRewrites(this.#httpHandler?.listFilter ? 'filtered' : guard.options.lists);
    this.#plainFilterOptions = { rewrites: this.#rewrites };
    const http = this.#httpHandler;
    this.allowHeader = [
      'POST',
      ...(http && http.supportsGet !== false ? ['GET'] : []),
      ...(http && http.supportsDelete !== false ? ['DELETE'] : []),
      'OPTIONS',
    ].join(', ');
  }

  /** A POST: Origin, body, parse, token, mirrored headers and policy, rate limits, handler, filtered answer. */
  readonly servePost = async (req: EndpointRequest, res: ServerResponse, traced: RequestTrace | undefined): Promise<void> => {
    const pinned = this.#guard.snapshot();
    let id: JsonRpcId | null = null;
    let message: JsonRpcMessage | undefined;
    let auth: AuthInfo | undefined;
    // Set once the request is handed to an HTTP handler: what it throws then is its failure (a guard error aside).
    let handedOver = false;
    try {
      this.#checkOrigin(req, res);
      const body = await readBody(req, this.#maxBodyBytes, this.#bodyTimeoutMs);
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
      const pending = traced ? traceStep(traced, 'mcp_guard.verify_token', () => this.#authenticate(req)) : this.#authenticate(req);
      // A cached token, or a new JWT whose key is held, costs no promise and no extra microtask.
      auth = pending instanceof Promise ? await pending : pending;
      if (!parsed) {
        throw new RequestRejectedError(`Unsupported Media Type: send the JSON-RPC message as ${JSON_MEDIA_TYPE}`, {
          status: 415,
          reason: 'unsupported_media_type',
          jsonRpcCode: JsonRpcErrorCode.InvalidRequest,
        });
      }
      if (!parsed.ok) throw parsed.error;
      const msg = parsed.message;
      const caller = auth;
      // What the decision depends on may not be known yet (see `holdBeforeDecision`): waited for before deciding, so
      // that no decision made meanwhile tells the caller more than the one made after would. A refusal that does not
      // depend on it (no base scopes) is given at once; the hold left behind ends within its bound, writing nothing.
      const held = this.#holdBeforeDecision?.(msg, res);
      if (held !== undefined) {
        pinned.refuseBeforeHold(msg, caller, mirroredHeaders(req));
        await held;
        if (res.writableEnded || res.destroyed) return;
      }
      const { protocolVersion, requiredScopes, rule, condition, server } = traced
        ? traceStep(traced, 'mcp_guard.authorize', () => pinned.authorize(msg, caller, mirroredHeaders(req)))
        : pinned.authorize(msg, auth, mirroredHeaders(req));
      // Rate limits count only requests that would otherwise be served; none set, no call at all.
      const limiting = pinned.checkRateLimit?.(msg, caller);
      if (limiting !== undefined) await limiting;
      const event = pinned.report('allow', 'allowed', 200, { request: this.#reportedRequest(req), httpMethod: 'POST', message: msg, auth, requiredScopes, rule, condition, server });
      if (event !== undefined) this.#audit?.decided(req, event, auth, msg);
      if (traced) recordDecision(traced, 'allow', 'allowed');
      req.auth = auth;
      const httpHandler = this.#httpHandler;
      if (!httpHandler) {
        const fn = this.#fn!;
        const call = { message: msg, id, auth: caller, protocolVersion };
        const failed = this.#handlerFailed;
        await (traced ? traceStep(traced, 'mcp_guard.handle', () => answerWithFunction(pinned, fn, call, req, res, failed)) : answerWithFunction(pinned, fn, call, req, res, failed));
        return;
      }
      req.body = msg;
      // The handler writes its own answer (JSON or SSE): every list result in it is filtered on the way out, whatever
      // message it answers (an upstream may carry one request's answer on another's exchange, or write a body in
      // answer to a notification), and a restricted resource read is kept out of shared caches. Only a list or read
      // answer is held and parsed whatever its text; any other passes on as it comes, searched for list keys.
      const rewrites = this.#rewrites;
      const own = httpHandler.listFilter;
      const policyKey = rewrites.isFilteredRequest(msg) ? pinned.policy.listFilterKey(msg.method, caller, msg, protocolVersion) : undefined;
      const filter = own ? (response: JsonRpcMessage) => pinned.filterResponse(msg, own.filter(response), caller, protocolVersion) : (response: JsonRpcMessage) => pinned.filterResponse(msg, response, caller, protocolVersion);
      filterListResponse(res, msg, filter, policyKey === undefined ? this.#plainFilterOptions : { memo: this.#memoEntry(pinned.policy, policyKey, own), rewrites });
      handedOver = true;
      await this.#handOver(httpHandler, pinned, req, res, caller, protocolVersion, traced);
    } catch (error) {
      if (handedOver && !(error instanceof GuardError)) this.#handlerFailed(error, message);
      this.deny(pinned, req, res, error, id, message, auth, traced);
    }
  };

  /** A GET (a stream) or DELETE (ends a session): Origin, token, base scopes, rate limits for a GET, handler. */
  readonly serveGetOrDelete = async (req: EndpointRequest, res: ServerResponse, traced: RequestTrace | undefined): Promise<void> => {
    const pinned = this.#guard.snapshot();
    let auth: AuthInfo | undefined;
    let handedOver = false;
    try {
      this.#checkOrigin(req, res);
      const httpHandler = this.#httpHandler;
      const supported = httpHandler !== undefined && (req.method === 'GET' ? httpHandler.supportsGet !== false : httpHandler.supportsDelete !== false);
      if (!supported) throw this.methodNotAllowed(`Method not allowed: ${req.method} is not supported by this MCP endpoint`);
      const pending = traced ? traceStep(traced, 'mcp_guard.verify_token', () => this.#authenticate(req)) : this.#authenticate(req);
      // A cached token, or a new JWT whose key is held, costs no promise and no extra microtask.
      auth = pending instanceof Promise ? await pending : pending;
      const caller = auth;
      const requiredScopes = traced ? traceStep(traced, 'mcp_guard.authorize', () => pinned.authorizeBase(caller)) : pinned.authorizeBase(auth);
      // A GET (a stream) counts against the caller's limit; a DELETE ends a session and is never refused for it.
      const limiting = req.method === 'GET' ? pinned.checkRateLimit?.(undefined, caller) : undefined;
      if (limiting !== undefined) await limiting;
      const event = pinned.report('allow', 'allowed', 200, { request: this.#reportedRequest(req), httpMethod: req.method ?? 'GET', auth, requiredScopes });
      if (event !== undefined) this.#audit?.decided(req, event, auth, undefined);
      if (traced) recordDecision(traced, 'allow', 'allowed');
      req.auth = auth;
      const protocolVersion = firstHeader(req.headers['mcp-protocol-version']);
      // A GET's stream (a replay above all) may carry list answers too: filtered by their shape, as any answer is.
      if (req.method === 'GET') {
        const own = httpHandler.listFilter;
        filterListResponse(res, undefined, (response) => pinned.filterResponse(UNKNOWN_REQUEST, own ? own.filter(response) : response, caller, protocolVersion), this.#plainFilterOptions);
      }
      handedOver = true;
      await this.#handOver(httpHandler, pinned, req, res, caller, protocolVersion, traced);
    } catch (error) {
      if (handedOver && !(error instanceof GuardError)) this.#handlerFailed(error, undefined);
      this.deny(pinned, req, res, error, null, undefined, auth, traced);
    }
  };

  /** A preflight: Origin checked, CORS for it, 204 with `Allow`. */
  serveOptions(req: EndpointRequest, res: ServerResponse): void {
    const guard = this.#guard;
    const origin = req.headers.origin;
    try {
      guard.checkOrigin(origin);
    } catch (error) {
      this.deny(guard, req, res, error, null);
      return;
    }
    if (origin !== undefined) {
      const requested = req.headers['access-control-request-headers'];
      setEndpointCors(res, origin, true, typeof requested === 'string' ? requested : undefined, guard.dpop !== 'off');
    }
    res.writeHead(204, { Allow: this.allowHeader }).end();
  }

  /** Any other method: 405 with `Allow`. */
  serveOtherMethod(req: EndpointRequest, res: ServerResponse): void {
    this.deny(this.#guard, req, res, this.methodNotAllowed('Method not allowed'), null);
  }

  /** Answers a refusal (or any failure: a bare 500) and reports it to the decision hook and the trace. */
  deny(pinned: Guard, req: EndpointRequest, res: ServerResponse, error: unknown, id: JsonRpcId | null, message?: JsonRpcMessage, auth?: AuthInfo, traced?: RequestTrace): void {
    const answer = pinned.errorResponse(error, id);
    if (traced) recordRefusal(traced, error instanceof GuardError ? error.reason : undefined, answer);
    if (error instanceof GuardError) {
      const event = pinned.report('deny', error.reason, answer.status, refusalContext(error, { request: this.#reportedRequest(req), httpMethod: req.method ?? 'POST', message, auth }));
      if (event !== undefined) this.#audit?.decided(req, event, auth, message);
    }
    writeError(res, answer);
  }

  methodNotAllowed(text: string): RequestRejectedError {
    return new RequestRejectedError(text, { status: 405, reason: 'method_not_allowed', jsonRpcCode: JsonRpcErrorCode.InvalidRequest, headers: { Allow: this.allowHeader } });
  }

  #checkOrigin(req: EndpointRequest, res: ServerResponse): void {
    const origin = req.headers.origin;
    this.#guard.checkOrigin(origin);
    if (origin !== undefined) setEndpointCors(res, origin, false);
  }

  /** The caller: the identity itself when nothing must be waited for, so callers await only a real wait (keys, introspection). */
  #authenticate(req: EndpointRequest): AuthInfo | Promise<AuthInfo> {
    // Authentication does not depend on the policy: every snapshot shares it.
    return this.#guard.authenticate(authorizationHeader(req), req.url ?? '/', new DpopRequestOf(req));
  }

  /** Hands an authorized request to the HTTP handler, with its context, traced as one step when traced. */
  #handOver(handler: McpHttpHandler, pinned: Guard, req: EndpointRequest, res: ServerResponse, caller: AuthInfo, protocolVersion: string | undefined, traced: RequestTrace | undefined): Promise<void> | void {
    const context = contextFor(pinned, res, caller, protocolVersion);
    return traced
      ? traceStep(traced, 'mcp_guard.handle', () => handler.handle(req as GuardedRequest, res, context))
      : handler.handle(req as GuardedRequest, res, context);
  }

  /**
   * Where a filtered list answer is looked up and kept: under the policy's key, with the handler's own filter key
   * when it has one. That one may change while the answer is awaited (the gateway's pins): it is read again when the
   * answer arrives, and the answer kept only under the key it was filtered with.
   */
  #memoEntry(policy: CompiledPolicy, policyKey: string, own: HandlerListFilter | undefined): NonNullable<FilterListResponseOptions['memo']> {
    const store = this.#listMemoFor(policy);
    if (own === undefined) return { key: policyKey, store };
    const partKey = own.key();
    return { key: `${policyKey}\n${partKey}`, store, part: own, partKey };
  }

  #listMemoFor(policy: CompiledPolicy): ListAnswerMemo {
    let memo = this.#listMemos.get(policy);
    if (memo === undefined) this.#listMemos.set(policy, (memo = new Map()));
    return memo;
  }
}

function contextFor(pinned: Guard, res: ServerResponse, auth: AuthInfo, protocolVersion: string | undefined): HttpHandlerContext {
  return new EndpointHandlerContext(pinned, res, auth, protocolVersion);
}

/**
 * The context of one call to an {@link McpHttpHandler}. `signal` is an own, enumerable accessor made on first read,
 * with one getter for every context (as `FunctionHandlerContext` in answer-with-function.ts, which says what a getter
 * written in each object literal costs): the gateway's HTTP upstream never reads it for a request without a sealed
 * session, and an AbortController with its 'close' listener was a tenth of the gateway's own work per call. The
 * response is a private field, so spreading a context copies its four fields, in the order they always had.
 */
class EndpointHandlerContext implements HttpHandlerContext {
  declare readonly signal: AbortSignal;
  declare readonly filterResponse: (request: JsonRpcMessage, response: JsonRpcMessage) => JsonRpcMessage;
  readonly #res: ServerResponse;
  #signal: AbortSignal | undefined = undefined;

  static readonly #SIGNAL: PropertyDescriptor = {
    enumerable: true,
    configurable: true,
    get(this: EndpointHandlerContext): AbortSignal {
      return (this.#signal ??= abortSignalFor(this.#res));
    },
  };

  constructor(
    pinned: Guard,
    res: ServerResponse,
    readonly auth: AuthInfo,
    readonly protocolVersion: string | undefined,
  ) {
    this.#res = res;
    Object.defineProperty(this, 'signal', EndpointHandlerContext.#SIGNAL);
    (this as { filterResponse: HttpHandlerContext['filterResponse'] }).filterResponse = (request, response) => pinned.filterResponse(request, response, auth, protocolVersion);
  }
}
