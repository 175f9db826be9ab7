import type { OutgoingHttpHeaders } from 'node:http';
import { context, propagation, SpanKind, SpanStatusCode, trace, type Span } from '@opentelemetry/api';
import type { JsonRpcMessage } from '../../core/wire/jsonrpc.js';
import { describeMcpMessage } from '../../core/mcp/describe-mcp-message.js';
import { tracer } from '../../core/kernel/tracing.js';

/** The span attribute naming the upstream among several behind the endpoint (the gateway's own namespace). */
export const UPSTREAM_NAME_ATTRIBUTE = 'mcp_guard.upstream.name';

/**
 * Starts the CLIENT span of one upstream exchange (MCP conventions: towards the upstream, the gateway is the
 * MCP client), a child of the active span, and injects its trace context into the upstream request's headers
 * (`traceparent`, through the propagator the application registered) so that an instrumented upstream joins
 * the trace. Named `{mcp.method.name} {target}` for a POSTed message, else the HTTP method; with `server.address`,
 * `server.port`, `url.full` (origin and path), `http.request.method`, `network.protocol.name`, and
 * `mcp_guard.upstream.name` (the server's name, when several share the endpoint; `name`).
 *
 * @returns undefined when the span does not record (no SDK registered, or sampled out): nothing is injected.
 */
export function startUpstreamSpan(upstream: URL, method: string, message: unknown, headers: OutgoingHttpHeaders, name?: string): Span | undefined {
  const span = tracer.startSpan(method, { kind: SpanKind.CLIENT });
  if (!span.isRecording()) return undefined;
  span.setAttributes({
    'http.request.method': method,
    'url.full': `${upstream.origin}${upstream.pathname}`,
    'server.address': upstream.hostname.startsWith('[') ? upstream.hostname.slice(1, -1) : upstream.hostname,
    'server.port': Number(upstream.port) || (upstream.protocol === 'https:' ? 443 : 80),
    'network.transport': 'tcp',
    'network.protocol.name': 'http',
  });
  if (name !== undefined) span.setAttribute(UPSTREAM_NAME_ATTRIBUTE, name);
  if (method === 'POST' && message !== null && typeof message === 'object') describeMcpMessage(span, message as JsonRpcMessage);
  propagation.inject(trace.setSpan(context.active(), span), headers);
  return span;
}

/**
 * Ends an upstream span: `http.response.status_code` when the upstream answered; on a failure (the gateway's
 * reason, e.g. `upstream_timeout`) or an upstream status of 400 or more (HTTP client conventions), `error.type`
 * and an error status.
 */
export function endUpstreamSpan(span: Span, status: number | undefined, failure: string | undefined): void {
  if (status !== undefined) span.setAttribute('http.response.status_code', status);
  const errorType = failure ?? (status !== undefined && status >= 400 ? String(status) : undefined);
  if (errorType !== undefined) {
    span.setAttribute('error.type', errorType);
    span.setStatus({ code: SpanStatusCode.ERROR });
  }
  span.end();
}
