import { once } from 'node:events';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Router } from 'express';
import type { AuthInfo } from '../core/auth-info.js';
import { createGuard, type Guard } from '../core/create-guard.js';
import { ConfigurationError, GuardError, RequestRejectedError } from '../core/errors.js';
import type { GuardOptions } from '../core/guard-options.js';
import type { HandlerContext, HandlerResult, McpMessageHandler } from '../core/handler.js';
import { JsonRpcErrorCode, jsonRpcError, type JsonRpcId, type JsonRpcMessage } from '../core/jsonrpc.js';
import { HEADER_MIRRORING_PROTOCOL_VERSION } from '../core/mcp-request-headers.js';
import type { SettingNames } from '../core/resolve-guard-options.js';
import { setEndpointCors, setMetadataCors } from './cors.js';
import { filterListResponse } from './filter-list-response.js';
import { isHttpHandler, type GuardedRequest, type McpHttpHandler } from './http-handler.js';
import { readBody } from './read-body.js';
import { startEventStream, writeAccepted, writeError, writeEvent, writeJson } from './write-response.js';

/** Options of {@link mcpOAuthGuard}: the guard's options plus the MCP handler to protect. */
export interface McpOAuthGuardOptions extends GuardOptions {
  /**
   * The MCP server behind the guard: a plain function `(message, context) => response | undefined |
   * AsyncIterable<message>`, or an {@link McpHttpHandler} that writes its own HTTP answer (SDK transport,
   * Express MCP handler, gateway).
   */
  handler: McpMessageHandler | McpHttpHandler;
  /** How settings are named in start-up errors (used by `loadOptionsFromEnv` callers). Internal. */
  settingNames?: SettingNames;
}

/** The part of Express's Router runtime the guard calls (not in its published types). */
interface RouterHandle {
  handle(req: IncomingMessage, res: ServerResponse, next: (error?: unknown) => void): void;
}

/** The router returned by {@link mcpOAuthGuard}, with the guard it uses (`guard.ready()` runs discovery now). */
export type McpOAuthGuardRouter = Router & { readonly guard: Guard };

type Req = IncomingMessage & { body?: unknown; auth?: AuthInfo; path?: string };

const METHOD_NOT_ALLOWED_FOR_FUNCTION = 'POST, OPTIONS';

/**
 * Express middleware that makes an MCP endpoint an OAuth 2.1 resource server. Mount it at the root
 * (`app.use(mcpOAuthGuard(options))`): it serves
 * - `GET /.well-known/oauth-protected-resource<path>` and `GET /.well-known/oauth-protected-resource`
 *   (RFC 9728 §3), CORS open and cacheable;
 * - the MCP endpoint at the path of `options.resource`: POST goes to the handler after authentication
 *   and authorization; GET and DELETE go to an {@link McpHttpHandler} that supports them, otherwise 405.
 *
 * Do not put `express.json()` before it on that path: the guard reads the body itself, with a limit.
 *
 * @throws ConfigurationError at construction when an option is missing or invalid.
 */
export function mcpOAuthGuard(options: McpOAuthGuardOptions): McpOAuthGuardRouter {
  const handler = options?.handler;
  if (typeof handler !== 'function' && !isHttpHandler(handler)) {
    throw new ConfigurationError(
      'options.handler',
      'is required: pass an async function (message, context) => response, or httpHandler(...)/an SDK adapter',
    );
  }
  const guard = createGuard(options, options.settingNames);
  const metadataPaths = new Set(guard.metadataPaths);
  const endpointPath = guard.resourcePath;
  const endpointPathSlash = endpointPath.endsWith('/') ? endpointPath : `${endpointPath}/`;
  const maxBodyBytes = guard.options.maxBodyBytes;
  const metadataCacheControl = `public, max-age=${guard.options.metadataMaxAgeSeconds}`;
  const metadataBody = Buffer.from(guard.metadataJson);
  const allowForHttp = [
    'POST',
    ...(isHttpHandler(handler) && handler.supportsGet !== false ? ['GET'] : []),
    ...(isHttpHandler(handler) && handler.supportsDelete !== false ? ['DELETE'] : []),
    'OPTIONS',
  ].join(', ');
  const allowHeader = isHttpHandler(handler) ? allowForHttp : METHOD_NOT_ALLOWED_FOR_FUNCTION;

  function serveMetadata(req: Req, res: ServerResponse): void {
    if (req.method === 'OPTIONS') {
      setMetadataCors(res, true);
      res.writeHead(204).end();
      return;
    }
    setMetadataCors(res, false);
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      writeJson(res, 405, jsonRpcError(null, -32600, 'Method not allowed: the metadata is read with GET'), { Allow: 'GET, HEAD, OPTIONS' });
      return;
    }
    res.writeHead(200, {
      'Content-Type': 'application/json',
      'Content-Length': metadataBody.length,
      'Cache-Control': metadataCacheControl,
    });
    res.end(req.method === 'HEAD' ? undefined : metadataBody);
  }

  function deny(req: Req, res: ServerResponse, error: unknown, id: JsonRpcId | null, message?: JsonRpcMessage, auth?: AuthInfo): void {
    const answer = guard.errorResponse(error, id);
    if (error instanceof GuardError) {
      guard.report('deny', error.reason, answer.status, {
        httpMethod: req.method ?? 'POST',
        message,
        auth,
        requiredScopes: 'requiredScopes' in error ? (error.requiredScopes as readonly string[]) : undefined,
      });
    }
    writeError(res, answer);
  }

  async function handlePost(req: Req, res: ServerResponse): Promise<void> {
    let id: JsonRpcId | null = null;
    let message: JsonRpcMessage | undefined;
    let auth: AuthInfo | undefined;
    try {
      const origin = req.headers.origin;
      guard.checkOrigin(origin);
      if (origin !== undefined) setEndpointCors(res, origin, false);
      const body = await readBody(req, maxBodyBytes);
      const isJson = isJsonContentType(req.headers['content-type']) || (req.body !== undefined && req.readableEnded);
      const parsed = isJson ? guard.parseMessage(body) : undefined;
      if (parsed?.ok) {
        message = parsed.message;
        const mid = (message as { id?: unknown }).id;
        if (typeof mid === 'string' || typeof mid === 'number') id = mid;
      } else if (parsed) {
        id = parsed.id;
      }
      const pending = guard.authenticate(authorizationHeader(req), req.url ?? '/');
      // A cached token comes back as the identity itself: no promise, no extra microtask.
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
      const { protocolVersion, requiredScopes } = guard.authorize(msg, auth, mirroredHeaders(req));
      guard.report('allow', 'allowed', 200, { httpMethod: 'POST', message: msg, auth, requiredScopes });
      req.auth = auth;
      if (isHttpHandler(handler)) {
        req.body = msg;
        if ('id' in msg && 'method' in msg && (guard.policy.isListMethod(msg.method) || msg.method === 'resources/read')) {
          // The handler writes its own answer (JSON or SSE): a list result is filtered on the way out, and a
          // restricted resource read is kept out of shared caches.
          const caller = auth;
          filterListResponse(res, msg, (response) => guard.filterResponse(msg, response, caller, protocolVersion));
        }
        const caller = auth;
        await handler.handle(req as GuardedRequest, res, {
          auth,
          protocolVersion,
          signal: abortSignalFor(res),
          filterResponse: (request, response) => guard.filterResponse(request, response, caller, protocolVersion),
        });
        return;
      }
      await dispatchToFunction(handler, msg, auth, protocolVersion, req, res, id);
    } catch (error) {
      deny(req, res, error, id, message, auth);
    }
  }

  async function dispatchToFunction(
    fn: McpMessageHandler,
    message: JsonRpcMessage,
    auth: AuthInfo,
    protocolVersion: string | undefined,
    req: Req,
    res: ServerResponse,
    id: JsonRpcId | null,
  ): Promise<void> {
    const sessionId = req.headers['mcp-session-id'];
    const isRequest = 'method' in message && 'id' in message;
    // The signal is made on first read: most handlers never look at it, and an AbortController with its
    // 'close' listener costs more than all of the guard's checks of a cached token.
    let signal: AbortSignal | undefined;
    const context: HandlerContext = {
      auth,
      get signal() {
        return (signal ??= abortSignalFor(res));
      },
      protocolVersion,
      sessionId: typeof sessionId === 'string' ? sessionId : undefined,
    };
    let result: HandlerResult;
    try {
      result = await fn(message, context);
    } catch {
      // The handler failed: a server fault. The client learns nothing of its internals.
      writeError(res, guard.errorResponse(undefined, id));
      return;
    }
    if (!isRequest) {
      // Notifications and responses to the server's own requests: delivered, then 202 with no body.
      writeAccepted(res);
      return;
    }
    if (result === undefined) {
      writeJson(res, 500, jsonRpcError(id, -32603, 'Internal error: the handler returned no response'));
      return;
    }
    if (isAsyncIterable(result)) {
      await streamMessages(result, message, auth, protocolVersion, res, context.signal, id);
      return;
    }
    writeJson(res, httpStatusFor(result, protocolVersion), guard.filterResponse(message, result, auth, protocolVersion));
  }

  async function streamMessages(
    messages: AsyncIterable<JsonRpcMessage>,
    request: JsonRpcMessage,
    auth: AuthInfo,
    protocolVersion: string | undefined,
    res: ServerResponse,
    signal: AbortSignal,
    id: JsonRpcId | null,
  ): Promise<void> {
    const iterator = messages[Symbol.asyncIterator]();
    const stop = (): void => {
      void iterator.return?.()?.catch(() => {});
    };
    signal.addEventListener('abort', stop, { once: true });
    startEventStream(res);
    try {
      for (;;) {
        const next = await iterator.next();
        if (next.done || signal.aborted) break;
        const m = next.value;
        const isFinal = !('method' in m) && 'id' in m && m.id === id;
        const writable = writeEvent(res, isFinal ? guard.filterResponse(request, m, auth, protocolVersion) : m);
        if (isFinal) break;
        // A chatty handler must not fill memory faster than the client reads: wait for the socket.
        if (!writable) await once(res, 'drain', { signal });
      }
    } catch {
      if (!signal.aborted) writeEvent(res, jsonRpcError(id, -32603, 'Internal error'));
    } finally {
      signal.removeEventListener('abort', stop);
      res.end();
    }
  }

  async function handleGetOrDelete(req: Req, res: ServerResponse): Promise<void> {
    let auth: AuthInfo | undefined;
    try {
      const origin = req.headers.origin;
      guard.checkOrigin(origin);
      if (origin !== undefined) setEndpointCors(res, origin, false);
      const supported =
        isHttpHandler(handler) && (req.method === 'GET' ? handler.supportsGet !== false : handler.supportsDelete !== false);
      if (!supported) {
        throw new RequestRejectedError(`Method not allowed: ${req.method} is not supported by this MCP endpoint`, {
          status: 405,
          reason: 'method_not_allowed',
          jsonRpcCode: -32600,
          headers: { Allow: allowHeader },
        });
      }
      const pending = guard.authenticate(authorizationHeader(req), req.url ?? '/');
      // A cached token comes back as the identity itself: no promise, no extra microtask.
      auth = pending instanceof Promise ? await pending : pending;
      const requiredScopes = guard.authorizeBase(auth);
      guard.report('allow', 'allowed', 200, { httpMethod: req.method ?? 'GET', auth, requiredScopes });
      req.auth = auth;
      const caller = auth;
      const protocolVersion = firstHeader(req.headers['mcp-protocol-version']);
      await (handler as McpHttpHandler).handle(req as GuardedRequest, res, {
        auth,
        protocolVersion,
        signal: abortSignalFor(res),
        filterResponse: (request, response) => guard.filterResponse(request, response, caller, protocolVersion),
      });
    } catch (error) {
      deny(req, res, error, null, undefined, auth);
    }
  }

  function handleEndpointOptions(req: Req, res: ServerResponse): void {
    const origin = req.headers.origin;
    try {
      guard.checkOrigin(origin);
    } catch (error) {
      deny(req, res, error, null);
      return;
    }
    if (origin !== undefined) {
      const requested = req.headers['access-control-request-headers'];
      setEndpointCors(res, origin, true, typeof requested === 'string' ? requested : undefined);
    }
    res.writeHead(204, { Allow: allowHeader }).end();
  }

  /** Serves the guard's own paths; returns false for anything else. */
  function serve(req: Req, res: ServerResponse): boolean {
    const path = (req as { path?: string }).path ?? '/';
    if (path === endpointPath || path === endpointPathSlash) {
      switch (req.method) {
        case 'POST':
          void handlePost(req, res);
          return true;
        case 'GET':
        case 'DELETE':
          void handleGetOrDelete(req, res);
          return true;
        case 'OPTIONS':
          handleEndpointOptions(req, res);
          return true;
        default:
          deny(req, res, new RequestRejectedError('Method not allowed', { status: 405, reason: 'method_not_allowed', jsonRpcCode: -32600, headers: { Allow: allowHeader } }), null);
          return true;
      }
    }
    if (metadataPaths.has(path)) {
      serveMetadata(req, res);
      return true;
    }
    return false;
  }

  // A real Express Router (use/get/handle work as usual, and routes added to it run after the guard's),
  // but requests for the guard's own paths are served without the router's layer dispatch: a nested
  // router level measured about 5% of the cost of a request with a cached token.
  const base = Router();
  base.use((req: Req, res, next) => {
    if (!serve(req, res)) next();
  });
  const router = function mcpOAuthGuardRouter(req: Req, res: ServerResponse, next: (error?: unknown) => void): void {
    if (!serve(req, res)) (router as unknown as RouterHandle).handle(req, res, next);
  };
  Object.setPrototypeOf(router, Object.getPrototypeOf(base));
  Object.assign(router, base, { guard });
  return router as unknown as McpOAuthGuardRouter;
}

/**
 * The HTTP status of a handler's JSON answer. 2026-07-28 gives some JSON-RPC errors their own status
 * (Streamable HTTP): an unimplemented method is 404 with -32601; header mismatch, a missing client
 * capability and an unsupported protocol version are 400. Earlier revisions answer every JSON-RPC
 * response with 200.
 */
function httpStatusFor(response: JsonRpcMessage, protocolVersion: string | undefined): number {
  if (protocolVersion === undefined || protocolVersion < HEADER_MIRRORING_PROTOCOL_VERSION || !('error' in response)) return 200;
  switch (response.error.code) {
    case JsonRpcErrorCode.MethodNotFound:
      return 404;
    case JsonRpcErrorCode.HeaderMismatch:
    case JsonRpcErrorCode.MissingRequiredClientCapability:
    case JsonRpcErrorCode.UnsupportedProtocolVersion:
      return 400;
    default:
      return 200;
  }
}

/** `application/json`, with or without parameters, any case (RFC 9110 §8.3.1). */
function isJsonContentType(value: string | undefined): boolean {
  if (value === undefined) return false;
  const semi = value.indexOf(';');
  const type = (semi === -1 ? value : value.slice(0, semi)).trim().toLowerCase();
  return type === 'application/json';
}

/**
 * The Authorization header as sent. Node keeps only the first of duplicated Authorization headers in
 * `req.headers`, so the raw list is checked: two headers must be refused, not silently half-read.
 */
function authorizationHeader(req: IncomingMessage): string | string[] | undefined {
  const raw = req.rawHeaders;
  let found: string[] | undefined;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!;
    if (name.length === 13 && name.toLowerCase() === 'authorization') (found ??= []).push(raw[i + 1]!);
  }
  if (found === undefined) return undefined;
  return found.length === 1 ? found[0] : found;
}

/**
 * The headers the 2026-07-28 mirroring check reads. Node joins a repeated custom header into one
 * comma-separated string, so `Mcp-Param-Region: eu` twice would look like the single value `eu, us`;
 * repeated `Mcp-*` headers are therefore found in the raw list and handed on as arrays, which the check
 * refuses (-32020).
 */
function mirroredHeaders(req: IncomingMessage): IncomingMessage['headers'] {
  const raw = req.rawHeaders;
  let seen: Set<string> | undefined;
  let repeated: Set<string> | undefined;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!;
    if (name.length < 5 || (name.charCodeAt(0) | 0x20) !== 0x6d) continue; // not "m…"
    const lower = name.toLowerCase();
    if (!lower.startsWith('mcp-')) continue;
    if ((seen ??= new Set()).has(lower)) (repeated ??= new Set()).add(lower);
    else seen.add(lower);
  }
  if (repeated === undefined) return req.headers;
  const headers: IncomingMessage['headers'] = { ...req.headers };
  for (const name of repeated) {
    const values: string[] = [];
    for (let i = 0; i < raw.length; i += 2) if (raw[i]!.toLowerCase() === name) values.push(raw[i + 1]!);
    headers[name] = values;
  }
  return headers;
}

function firstHeader(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

/**
 * An AbortSignal that fires when the client goes away before the answer is complete; already aborted when
 * that happened before it was asked for.
 */
function abortSignalFor(res: ServerResponse): AbortSignal {
  const controller = new AbortController();
  if (res.writableFinished) return controller.signal;
  if (res.closed || res.destroyed) {
    controller.abort();
    return controller.signal;
  }
  res.once('close', () => {
    if (!res.writableFinished) controller.abort();
  });
  return controller.signal;
}

function isAsyncIterable(v: unknown): v is AsyncIterable<JsonRpcMessage> {
  return typeof v === 'object' && v !== null && typeof (v as { [Symbol.asyncIterator]?: unknown })[Symbol.asyncIterator] === 'function';
}
