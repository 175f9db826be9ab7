import { context, SpanKind, SpanStatusCode, trace, type Span, type Tracer } from '@opentelemetry/api';
import { GuardError } from './errors.js';
import type { JsonRpcMessage } from './jsonrpc.js';
import { MCP_METHODS } from './mcp-methods.js';

/**
 * OpenTelemetry spans, through the API package only. Until an application registers an SDK, the API's tracer is
 * a no-op: a span is one small object that records nothing, and every caller here checks `isRecording()` before
 * computing an attribute, so tracing costs nothing measurable when it is off. The tracer is the API's proxy,
 * so an SDK registered after start-up is used from then on.
 *
 * Names follow the OpenTelemetry semantic conventions: MCP (`mcp.*`, `gen_ai.*`, `jsonrpc.*`) for the
 * requests the guard serves and forwards, HTTP (`http.*`, `url.full`, `server.*`, `error.type`) for its calls to
 * the authorization server. Its own facts are under `mcp_guard.*`.
 */

/** Instrumentation scope name of every span the guard starts. */
export const TRACER_NAME = 'mcp-oauth-guard';

/** The guard's tracer (the API's proxy tracer). */
export const tracer: Tracer = trace.getTracer(TRACER_NAME);

/** What a call to the authorization server was for, recorded as `mcp_guard.call`. */
export type AuthorizationServerCall = 'discovery' | 'jwks' | 'introspection' | 'token';

/** Longest string attribute value the guard records, in characters: client-chosen names are cut there. */
const MAX_ATTRIBUTE_LENGTH = 256;

/**
 * Wraps a `fetch` to the authorization server so that each request is an HTTP client span (name: the method;
 * `http.request.method`, `url.full`, `server.address`, `server.port`, `http.response.status_code`, `error.type`
 * for a status of 400 or more or a failure), a child of the active span. The span ends when the response
 * headers arrive; the callers read small JSON bodies.
 */
export function traceAuthorizationServerFetch<O extends { method?: string }>(
  call: AuthorizationServerCall,
  fetchImpl: (url: string, options: O) => Promise<Response>,
): (url: string, options: O) => Promise<Response> {
  return (url, options) => {
    const method = options.method ?? 'GET';
    const span = tracer.startSpan(method, { kind: SpanKind.CLIENT });
    if (!span.isRecording()) return fetchImpl(url, options);
    const target = new URL(url);
    span.setAttributes({
      'http.request.method': method,
      'url.full': `${target.origin}${target.pathname}`,
      'server.address': target.hostname,
      'server.port': Number(target.port) || (target.protocol === 'https:' ? 443 : 80),
      'mcp_guard.call': call,
    });
    return context.with(trace.setSpan(context.active(), span), () => fetchImpl(url, options)).then(
      (response) => {
        span.setAttribute('http.response.status_code', response.status);
        if (response.status >= 400) {
          span.setAttribute('error.type', String(response.status));
          span.setStatus({ code: SpanStatusCode.ERROR });
        }
        span.end();
        return response;
      },
      (error: unknown) => {
        endWithError(span, error);
        throw error;
      },
    );
  };
}

/**
 * Records the MCP facts of a JSON-RPC message on a recording span (`mcp.method.name`, `jsonrpc.request.id`,
 * `jsonrpc.protocol.version`; `gen_ai.tool.name` and `gen_ai.operation.name` for `tools/call`,
 * `gen_ai.prompt.name` for `prompts/get`, `mcp.resource.uri` when the request names one) and names it
 * `{mcp.method.name} {target}` as the MCP conventions say, the target being the tool or prompt. A method MCP
 * does not define is named `_OTHER` in the span name (its attribute keeps the value), so that a client cannot
 * mint span names.
 */
export function describeMcpMessage(span: Span, message: JsonRpcMessage): void {
  const m = message as { method?: unknown; id?: unknown; params?: { name?: unknown; uri?: unknown } };
  span.setAttribute('jsonrpc.protocol.version', '2.0');
  if (typeof m.id === 'string' || typeof m.id === 'number') span.setAttribute('jsonrpc.request.id', String(m.id));
  if (typeof m.method !== 'string') return;
  span.setAttribute('mcp.method.name', cut(m.method));
  const known = MCP_METHODS.has(m.method);
  const name = m.params?.name;
  let target: string | undefined;
  if (m.method === 'tools/call' && typeof name === 'string') {
    target = cut(name);
    span.setAttributes({ 'gen_ai.tool.name': target, 'gen_ai.operation.name': 'execute_tool' });
  } else if (m.method === 'prompts/get' && typeof name === 'string') {
    target = cut(name);
    span.setAttribute('gen_ai.prompt.name', target);
  }
  const uri = m.params?.uri;
  if (typeof uri === 'string') span.setAttribute('mcp.resource.uri', cut(uri));
  span.updateName(known ? (target === undefined ? m.method : `${m.method} ${target}`) : '_OTHER');
}

/**
 * Ends a span as failed: `error.type` is the error's code (e.g. `ECONNREFUSED`) or class name (`TimeoutError`),
 * and the status message the error's own message, cut to 256 characters (never a token: errors the guard
 * handles name URLs and claims, not credentials).
 */
export function endWithError(span: Span, error: unknown): void {
  span.setAttribute('error.type', errorType(error));
  // Only the guard's own messages, which it writes and which never hold a token: a handler's or a fetch's error text
  // is not the guard's to export, and traces often leave the host.
  span.setStatus({ code: SpanStatusCode.ERROR, message: error instanceof GuardError ? cut(error.message) : undefined });
  span.end();
}

/**
 * A low-cardinality class of an error, as `error.type` wants: a guard refusal's reason (`token_expired`,
 * `scope_insufficient`…), a Node error code (`ECONNREFUSED`), else the error's name (`TimeoutError`).
 */
export function errorType(error: unknown): string {
  if (error instanceof GuardError) return error.reason;
  const own = (error as { code?: unknown } | undefined)?.code;
  if (typeof own === 'string') return own;
  const cause = (error as { cause?: { code?: unknown } } | undefined)?.cause?.code;
  if (typeof cause === 'string') return cause;
  return error instanceof Error ? error.name : '_OTHER';
}

function cut(value: string): string {
  return value.length > MAX_ATTRIBUTE_LENGTH ? `${value.slice(0, MAX_ATTRIBUTE_LENGTH)}…` : value;
}
