import { context, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { endWithError, tracer } from '../kernel/tracing.js';

/** What a call to the authorization server was for, recorded as `mcp_guard.call`. */
export type AuthorizationServerCall = 'discovery' | 'jwks' | 'introspection' | 'token';

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
