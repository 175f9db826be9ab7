import type { IncomingMessage, ServerResponse } from 'node:http';
import { context, createContextKey, propagation, SpanKind, SpanStatusCode, trace, type Context, type Span } from '@opentelemetry/api';
import type { GuardHttpResponse } from '../core/guard/create-guard.js';
import { endWithError, tracer } from '../core/kernel/tracing.js';

/**
 * The span of one request to the MCP endpoint, and the context its steps start in. It exists only while it
 * records: with no OpenTelemetry SDK (or a request sampled out), the pipeline holds `undefined` and traces
 * nothing more for that request, so tracing off costs one no-op span per request and no attribute.
 */
export interface RequestTrace {
  readonly span: Span;
  /** The active context with {@link RequestTrace.span} in it. */
  readonly context: Context;
}

/** Where the request's SERVER span sits in its context: its steps' spans replace the active span, not this. */
const REQUEST_SPAN_KEY = createContextKey('mcp_guard.request_span');

/**
 * Serves a request inside its SERVER span (MCP conventions: the guard is the MCP server its client talks to).
 * The span's parent is the active span when there is one (an HTTP instrumentation's server span), else the
 * trace context the request carries (`traceparent`, through the propagator the application registered). It is
 * named `{http.request.method} {http.route}` until the message is read, then `{mcp.method.name} {target}`
 * (see `describeMcpMessage`), and ends when `serve` settles, with `http.response.status_code`.
 *
 * @param route - The endpoint's path, recorded as `http.route`.
 */
export function serveTraced<R extends IncomingMessage>(
  req: R,
  res: ServerResponse,
  route: string,
  serve: (req: R, res: ServerResponse, trace: RequestTrace | undefined) => Promise<void>,
): Promise<void> {
  const active = context.active();
  const parent = trace.getSpan(active) === undefined ? propagation.extract(active, req.headers) : active;
  const method = req.method ?? 'GET';
  const span = tracer.startSpan(method, { kind: SpanKind.SERVER }, parent);
  if (!span.isRecording()) return serve(req, res, undefined);
  span.updateName(`${method} ${route}`);
  span.setAttributes({
    'http.request.method': method,
    'http.route': route,
    'network.transport': 'tcp',
    'network.protocol.name': 'http',
    'network.protocol.version': req.httpVersion,
  });
  const traced: RequestTrace = { span, context: trace.setSpan(parent, span).setValue(REQUEST_SPAN_KEY, span) };
  return context.with(traced.context, () => serve(req, res, traced)).finally(() => {
    span.setAttribute('http.response.status_code', res.statusCode);
    // A server's 4xx is the client's doing (HTTP conventions); a JSON-RPC error was recorded by recordRefusal.
    if (res.statusCode >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
    span.end();
  });
}

/**
 * The SERVER span of the request being served (see {@link serveTraced}), from anywhere within it, its steps
 * included: undefined when it is not traced (no SDK, or sampled out), at the cost of one context lookup.
 *
 * @example
 * requestSpan()?.setAttribute('mcp_guard.upstream.name', 'notes');
 */
export function requestSpan(): Span | undefined {
  return context.active().getValue(REQUEST_SPAN_KEY) as Span | undefined;
}

/**
 * Runs one step of the request (`mcp_guard.verify_token`, `mcp_guard.authorize`, `mcp_guard.handle`) as an
 * INTERNAL child span, active while `step` runs, ended when its result settles; a thrown or rejected error ends
 * it with `error.type`. A synchronous result stays synchronous (a cached token costs no promise).
 */
export function traceStep<T>(parent: RequestTrace, name: string, step: () => T): T {
  const span = tracer.startSpan(name, { kind: SpanKind.INTERNAL }, parent.context);
  let result: T;
  try {
    result = context.with(trace.setSpan(parent.context, span), step);
  } catch (error) {
    endWithError(span, error);
    throw error;
  }
  if (!(result instanceof Promise)) {
    span.end();
    return result;
  }
  return result.then(
    (value: unknown) => {
      span.end();
      return value;
    },
    (error: unknown) => {
      endWithError(span, error);
      throw error;
    },
  ) as T;
}

/** Records the guard's decision on the request span (`mcp_guard.decision`, `mcp_guard.reason`). */
export function recordDecision(traced: RequestTrace, decision: 'allow' | 'deny', reason: string): void {
  traced.span.setAttributes({ 'mcp_guard.decision': decision, 'mcp_guard.reason': reason });
}

/**
 * Records a refusal on the request span: the decision, and the JSON-RPC error answered as
 * `rpc.response.status_code` and `error.type` (MCP conventions: an error response fails the operation).
 */
export function recordRefusal(traced: RequestTrace, reason: string | undefined, answer: GuardHttpResponse): void {
  const code = String(answer.body.error.code);
  traced.span.setAttributes({ 'rpc.response.status_code': code, 'error.type': code });
  if (reason !== undefined) recordDecision(traced, 'deny', reason);
  traced.span.setStatus({ code: SpanStatusCode.ERROR, message: answer.body.error.message });
}
