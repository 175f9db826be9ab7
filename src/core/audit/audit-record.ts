/**
 * One audit record: who called what, under which decision, and how it ended. Identifiers only: never the token, a
 * cookie or any header that authenticates; the arguments of a tool call only when the operator turned them on, and
 * then redacted and bounded.
 */
import type { DecisionReason } from '../kernel/decision.js';
import { RESOURCE_METHODS } from '../mcp/mcp-methods.js';
import { mayHaveTopLevelError } from './error-member.js';
import { redactJsonPointers, type JsonPointer } from './json-pointer.js';

/** One audit record, as written (one JSON line, fields in this order; absent fields are left out). */
export interface AuditRecord {
  /** When the request arrived, ISO 8601. */
  time: string;
  /** The request's `X-Request-Id` when it sent a usable one (visible ASCII, at most 128 characters), else a random UUID. */
  requestId: string;
  /** The token's issuer (`iss`), when a token was verified. */
  issuer?: string;
  /** The token's subject (`sub`), when a token was verified and had one. */
  subject?: string;
  /** The OAuth client the token was issued to, when a token was verified. */
  clientId?: string;
  /**
   * The server the request was for, when several share the endpoint (a gateway's `servers`): the one it was handed
   * to, or the one whose rules decided it when it was refused before that.
   */
  server?: string;
  /** HTTP method. */
  httpMethod: string;
  /** JSON-RPC method, when the body was a message. */
  method?: string;
  /** The tool a `tools/call` named. */
  tool?: string;
  /** The prompt a `prompts/get` named. */
  prompt?: string;
  /** The resource (URI) a `resources/read`, `resources/subscribe` or `resources/unsubscribe` named. */
  resource?: string;
  /** The decision: `deny` also when the gateway refused, for its session, a request the guard allowed. */
  decision: 'allow' | 'deny';
  /** Why (stable code): the guard's reason, or a gateway's session refusal. */
  reason: DecisionReason | (string & {});
  /** The policy rule that decided (e.g. `tools.payments__refund`), when known. */
  rule?: string;
  /** That rule's condition (CEL source), when it had one. */
  condition?: string;
  /** HTTP status of the answer. */
  status: number;
  /** The JSON-RPC error code of the answer, when it was a JSON-RPC error. */
  errorCode?: number;
  /** Time from arrival to the end of the answer (or of its stream), in milliseconds, to 0.1 ms. */
  durationMs: number;
  /** True when the client went away before the answer was complete. */
  aborted?: boolean;
  /** The tool call's arguments, redacted, when arguments are recorded and fit {@link AuditRecord.argumentsTruncated}'s bound. */
  arguments?: unknown;
  /** The arguments' JSON, redacted, cut at the byte bound and ending in `…[truncated]`, when they did not fit. */
  argumentsTruncated?: string;
}

/** The text that ends arguments cut at their bound. */
export const TRUNCATED_MARKER = '…[truncated]';

/** The arguments as a record carries them: the field, its value, and that value's JSON (made once). */
export type RecordedArguments =
  | { readonly field: 'arguments'; readonly value: unknown; readonly json: string }
  | { readonly field: 'argumentsTruncated'; readonly value: string; readonly json: string };

/**
 * The arguments as a record carries them: redacted at each pointer, then, when their JSON is longer than `maxBytes`,
 * that JSON cut to `maxBytes` bytes (at a character boundary) with {@link TRUNCATED_MARKER} appended. Redaction comes
 * first, so a cut never reveals part of a redacted value. Undefined for arguments JSON cannot write. The JSON that
 * measured them is the JSON the record writes: they are stringified once.
 *
 * @example
 * recordedArguments({ query: 'x', password: 'p' }, [['password']], 4096);
 * // { field: 'arguments', value: { query: 'x', password: '[redacted]' }, json: '{"query":"x","password":"[redacted]"}' }
 */
export function recordedArguments(args: unknown, redact: readonly JsonPointer[], maxBytes: number): RecordedArguments | undefined {
  if (args === undefined) return undefined;
  const redacted = redactJsonPointers(args, redact);
  const json = JSON.stringify(redacted);
  if (json === undefined) return undefined;
  if (json.length * 3 <= maxBytes || Buffer.byteLength(json) <= maxBytes) return { field: 'arguments', value: redacted, json };
  let cut = Buffer.from(json).subarray(0, maxBytes).toString();
  // A character split by the cut decodes as U+FFFD: leave it out.
  if (cut.endsWith('\uFFFD')) cut = cut.slice(0, -1);
  const truncated = `${cut}${TRUNCATED_MARKER}`;
  return { field: 'argumentsTruncated', value: truncated, json: JSON.stringify(truncated) };
}

/** Which record field names a request's target, by JSON-RPC method. */
export function targetField(method: string | undefined): 'tool' | 'prompt' | 'resource' | undefined {
  if (method !== undefined && RESOURCE_METHODS.has(method)) return 'resource';
  return method === 'tools/call' ? 'tool' : method === 'prompts/get' ? 'prompt' : undefined;
}

/**
 * A usable `X-Request-Id`: 1 to 128 visible ASCII characters, without quotes, backslashes or angle brackets;
 * anything else is replaced by a UUID. The record is JSON, which escapes any character, but the id is also copied
 * into other tools (a shell, a query, a web console) where a quote or a line break could end a field or start a
 * forged line: an id that needs them is not one a proxy made.
 */
export function usableRequestId(header: string | undefined): string | undefined {
  return header !== undefined && header.length <= 128 && /^[\x21-\x7e]+$/.test(header) && !/["'`\\<>]/.test(header) ? header : undefined;
}

/**
 * The JSON-RPC error code an answer's text carries, when it is a JSON-RPC error: a JSON body, or the `data:` lines
 * of an event stream. Undefined for a success, a notification, or text that is neither. Parses only a message whose
 * top-level object may have an `error` member (see {@link mayHaveTopLevelError}), so a success costs a substring
 * search, or a walk of its text when its result names `"error"` itself.
 *
 * @example
 * jsonRpcErrorCodeIn('{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"Method not found"}}'); // -32601
 */
export function jsonRpcErrorCodeIn(text: string): number | undefined {
  // A key may also spell `error` with `\u` escapes (see mayHaveTopLevelError).
  if (!text.includes('"error"') && !text.includes('\\u')) return undefined;
  const start = text.trimStart();
  if (start.startsWith('{')) return errorCodeOf(start);
  for (const line of text.split('\n')) {
    if (!line.startsWith('data:')) continue;
    const code = errorCodeOf(line.slice(5));
    if (code !== undefined) return code;
  }
  return undefined;
}

function errorCodeOf(json: string): number | undefined {
  if (!mayHaveTopLevelError(json)) return undefined;
  try {
    const message = JSON.parse(json) as { error?: { code?: unknown } } | null;
    const code = message?.error?.code;
    return typeof code === 'number' && Number.isInteger(code) ? code : undefined;
  } catch {
    return undefined;
  }
}
