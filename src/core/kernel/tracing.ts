import { SpanStatusCode, trace, type Span, type Tracer } from '@opentelemetry/api';
import { GuardError } from './errors.js';

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

/** Longest string attribute value the guard records, in characters: client-chosen names are cut there. */
const MAX_ATTRIBUTE_LENGTH = 256;

/**
 * Ends a span as failed: `error.type` is the error's code (e.g. `ECONNREFUSED`) or class name (`TimeoutError`),
 * and the status message the error's own message, cut to 256 characters (never a token: errors the guard
 * handles name URLs and claims, not credentials).
 */
export function endWithError(span: Span, error: unknown): void {
  span.setAttribute('error.type', errorType(error));
  // Only the guard's own messages, which it writes and which never hold a token: a handler's or a fetch's error text
  // is not the guard's to export, and traces often leave the host.
  span.setStatus({ code: SpanStatusCode.ERROR, message: error instanceof GuardError ? cutAttribute(error.message) : undefined });
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

/** A client-chosen string cut to the longest attribute value the guard records. */
export function cutAttribute(value: string): string {
  return value.length > MAX_ATTRIBUTE_LENGTH ? `${value.slice(0, MAX_ATTRIBUTE_LENGTH)}…` : value;
}
