import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import type { AuthInfo } from '../core/kernel/auth-info.js';
import { JsonRpcErrorCode, requestIdOf, type JsonRpcMessage } from '../core/wire/jsonrpc.js';
import { EVENT_STREAM_MEDIA_TYPE, mediaType } from './media-type.js';
import { CREDENTIAL_HEADERS } from './credential-headers.js';
import { connectionHeaderNames, HOP_BY_HOP_HEADERS } from './hop-by-hop-headers.js';
import type { GuardedRequest, HttpHandlerContext, McpHttpHandler } from './http-handler.js';
import { writeJsonRpcError } from './write-response.js';

/** What a {@link FetchHandle} is given besides the `Request`. */
export interface FetchHandlerContext {
  /**
   * The verified caller. The `Authorization` header is not in the `Request`: this is the only way the
   * handler learns who called (for the MCP SDK 2.x, pass it on as `authInfo`).
   */
  auth: AuthInfo;
  /**
   * The one JSON-RPC message the guard authorized (POST only). Handlers that accept a pre-parsed body
   * (`parsedBody` in the MCP SDKs) should use it: it is exactly what was authorized, and it spares a parse.
   */
  parsedBody?: JsonRpcMessage;
  /** Aborts when the client goes away before the answer is complete; also the `Request`'s signal. */
  signal: AbortSignal;
  /** The MCP protocol revision of the request, when known. */
  protocolVersion?: string;
}

/**
 * A fetch-shaped MCP handler: the MCP SDK 2.x `createMcpHandler(...).fetch`, the SDK's
 * `WebStandardStreamableHTTPServerTransport.handleRequest`, or a Hono app's `fetch`.
 */
export type FetchHandle = (request: Request, context: FetchHandlerContext) => Response | Promise<Response>;

/** Options of {@link fetchHandler}. */
export interface FetchHandlerOptions {
  /** Whether GET (standalone SSE stream) reaches the handler; otherwise the guard answers 405. Default true. */
  supportsGet?: boolean;
  /** Whether DELETE (session termination) reaches the handler; otherwise the guard answers 405. Default true. */
  supportsDelete?: boolean;
}

/**
 * Request headers the handler does not get.
 * - Credentials ({@link CREDENTIAL_HEADERS}): the guard has verified the token and hands the caller over as
 *   `context.auth`; a header copy invites token passthrough (a handler building an upstream request from this
 *   one's headers).
 * - Hop-by-hop headers (RFC 9110 §7.6.1): they describe the client's connection, not this `Request`.
 * - `content-length`, `content-encoding`: the body is re-serialized from the parsed message, so the
 *   client's framing no longer describes it.
 */
const DROPPED_REQUEST_HEADERS = new Set([...CREDENTIAL_HEADERS, ...HOP_BY_HOP_HEADERS, 'content-length', 'content-encoding']);

/**
 * Serves a fetch-shaped MCP handler (`(Request) => Response`) behind `mcpOAuthGuard`. The guard
 * authenticates and authorizes first; then the Node request becomes a WHATWG `Request` and the returned
 * `Response` is written back, streamed.
 *
 * The `Request`:
 * - URL: the origin of the canonical resource the token was accepted for (`auth.resource`) with the
 *   request's path and query, so the handler sees the public URL even behind a proxy; the `Host` header
 *   (and `http:`, or `https:` on TLS sockets) only when there is no resource. Of an absolute-form target
 *   (`POST http://host/mcp`, RFC 9112 §3.2.2) only the path and query are used. A target that yields no
 *   valid URL gets 400 with JSON-RPC -32600 `Invalid request target`, and the handler is not called.
 * - headers: as sent (duplicates kept), minus the credentials (`Authorization`, `DPoP`, `Proxy-Authorization`,
 *   `Cookie`), hop-by-hop headers, `Content-Length` and `Content-Encoding`.
 * - body (POST): the JSON of the authorized message, also given as `context.parsedBody`.
 * - signal: aborts when the client disconnects.
 *
 * The `Response`: status, status text and headers (each `Set-Cookie` kept separate;
 * `Transfer-Encoding` left to Node) go out through `res.writeHead`, then the body chunk by chunk as the
 * handler produces it, waiting for `'drain'` when the client reads slowly. An event stream's head is sent
 * at once, before its first event. When the client goes away, the body is cancelled, which tells the
 * handler's stream to stop. A body that fails midway destroys the response, so the client sees a
 * truncated answer rather than a complete-looking one. Only `res.writeHead`, `write`, `end` and
 * `flushHeaders` are used, so the guard's list filtering applies to JSON and SSE answers alike.
 *
 * An error thrown (or a rejection) before the `Response` exists is left to the guard: 500 with JSON-RPC
 * -32603 and no detail, and a warning naming the error in the guard's log.
 *
 * @example
 * const mcp = createMcpHandler(createServer); // @modelcontextprotocol/server 2.x
 * const handler = fetchHandler((request, { auth, parsedBody }) => mcp.fetch(request, { authInfo: auth, parsedBody }), { supportsGet: false, supportsDelete: false });
 * app.use(mcpOAuthGuard({ ...loadOptionsFromEnv(), handler }));
 */
export function fetchHandler(handle: FetchHandle, options: FetchHandlerOptions = {}): McpHttpHandler {
  if (typeof handle !== 'function') throw new TypeError('fetchHandler: handle must be a function (request, context) => Response');
  return {
    kind: 'http',
    supportsGet: options.supportsGet ?? true,
    supportsDelete: options.supportsDelete ?? true,
    async handle(req: GuardedRequest, res: ServerResponse, context: HttpHandlerContext): Promise<void> {
      const { signal } = context;
      const url = requestUrl(req, context.auth);
      if (url === undefined) {
        writeJsonRpcError(res, 400, requestIdOf(req.body), JsonRpcErrorCode.InvalidRequest, 'Invalid request target');
        return;
      }
      const request = toRequest(req, url, signal);
      const handlerContext: FetchHandlerContext = { auth: context.auth, signal };
      if (req.method === 'POST' && req.body !== undefined) handlerContext.parsedBody = req.body;
      if (context.protocolVersion !== undefined) handlerContext.protocolVersion = context.protocolVersion;
      const response = await handle(request, handlerContext);
      // Duck-typed: a Response from another fetch implementation (the undici package) is fine too.
      if (typeof (response as Partial<Response> | undefined)?.status !== 'number' || !(response as Response).headers) {
        throw new TypeError('fetchHandler: the handler did not return a Response');
      }
      await writeResponse(req, res, response, signal);
    },
  };
}

/** Builds the WHATWG `Request` the handler sees (see {@link fetchHandler}). */
function toRequest(req: GuardedRequest, url: URL, signal: AbortSignal): Request {
  const method = req.method ?? 'GET';
  const headers = new Headers();
  const raw = req.rawHeaders;
  // Headers the client's Connection header names are hop-by-hop too (RFC 9110 §7.6.1).
  const connection = req.headers.connection;
  const hopByHop = connection ? connectionHeaderNames(connection) : undefined;
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i]!.toLowerCase();
    // HTTP/2 pseudo-headers (`:path`) are not header fields.
    if (name.charCodeAt(0) === 0x3a || DROPPED_REQUEST_HEADERS.has(name) || hopByHop?.includes(name)) continue;
    headers.append(name, raw[i + 1]!);
  }
  const init: RequestInit = { method, headers, signal };
  if (method === 'POST' && req.body !== undefined) init.body = JSON.stringify(req.body);
  return new Request(url, init);
}

/**
 * An absolute-form target's scheme and authority (RFC 9112 §3.2.2, RFC 3986 §3). Matched by text, not
 * parsed as a URL: its authority is the client's to choose (an out-of-range port, an unknown host) and
 * is not used anyway.
 */
const ABSOLUTE_FORM_PREFIX = /^[A-Za-z][A-Za-z0-9+.-]*:\/\/[^/?#]*/;

/** The URL the handler sees (see {@link fetchHandler}), or undefined when the target yields none. */
function requestUrl(req: IncomingMessage, auth: AuthInfo): URL | undefined {
  // Express rewrites `req.url` under a mount path; `originalUrl` is what the client asked for.
  let path = (req as { originalUrl?: string }).originalUrl ?? req.url ?? '/';
  if (!path.startsWith('/')) {
    // An absolute-form target (`POST http://host/mcp`): only its path and query count.
    const prefix = ABSOLUTE_FORM_PREFIX.exec(path);
    if (!prefix) return undefined;
    path = path.slice(prefix[0].length);
    if (!path.startsWith('/')) path = `/${path}`;
  }
  const hash = path.indexOf('#');
  if (hash !== -1) path = path.slice(0, hash);
  let base: string;
  if (auth.resource) base = auth.resource.origin;
  else {
    const tls = (req.socket as { encrypted?: boolean } | undefined)?.encrypted === true;
    base = `${tls ? 'https' : 'http'}://${req.headers.host ?? 'localhost'}`;
  }
  try {
    return new URL(`${base}${path}`);
  } catch {
    // A Host header that is no host, for instance.
    return undefined;
  }
}

/** Writes the handler's `Response` to `res`, streaming its body (see {@link fetchHandler}). */
async function writeResponse(req: IncomingMessage, res: ServerResponse, response: Response, signal: AbortSignal): Promise<void> {
  const body = response.body;
  if (signal.aborted) {
    // Nobody is listening any more: let the handler's stream know instead of writing into the void.
    if (body) await body.cancel(signal.reason).catch(() => {});
    return;
  }
  // Taken before the head goes out, so a body that cannot be read (already used) is still a clean 500.
  const reader = body?.getReader();
  const headers = toNodeHeaders(response.headers);
  const status = response.status;
  if (response.statusText) res.writeHead(status, response.statusText, headers);
  else res.writeHead(status, headers);
  // HEAD, 204 and 304 answers have no body (RFC 9110 §9.3.2, §15.3.5, §15.4.5), whatever the handler made.
  if (reader === undefined || req.method === 'HEAD' || status === 204 || status === 304) {
    res.end();
    if (reader) await reader.cancel().catch(() => {});
    return;
  }
  if (mediaType(headers['content-type']) === EVENT_STREAM_MEDIA_TYPE) {
    // The client should see the stream open even if the first event takes a while.
    res.flushHeaders();
  }
  const cancel = (): void => {
    void reader.cancel(signal.reason).catch(() => {});
  };
  signal.addEventListener('abort', cancel, { once: true });
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      if (signal.aborted || res.destroyed) {
        cancel();
        break;
      }
      if (!res.write(value)) await drainOrClose(res);
    }
    if (!signal.aborted && !res.destroyed) res.end();
  } catch (error) {
    // The handler's stream failed midway: an ended response would look complete, so cut it instead.
    if (!res.destroyed) res.destroy(error instanceof Error ? error : new Error(String(error)));
  } finally {
    signal.removeEventListener('abort', cancel);
  }
}

function toNodeHeaders(from: Headers): OutgoingHttpHeaders {
  const out: OutgoingHttpHeaders = {};
  from.forEach((value, name) => {
    // `Headers` gives names lowercased and repeated values joined with ", ", which would corrupt cookies
    // (their dates contain commas), so Set-Cookie is read as a list below.
    if (name !== 'set-cookie' && !HOP_BY_HOP_HEADERS.has(name)) out[name] = value;
  });
  const cookies = from.getSetCookie();
  if (cookies.length > 0) out['set-cookie'] = cookies;
  return out;
}

/** Resolves when `res` can take more data, or when it is gone (the loop then stops reading). */
function drainOrClose(res: ServerResponse): Promise<void> {
  if (res.destroyed) return Promise.resolve();
  return new Promise((resolve) => {
    const done = (): void => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.on('drain', done);
    res.on('close', done);
  });
}
