import { RequestRejectedError } from '../kernel/errors.js';
import { JsonRpcErrorCode, type JsonRpcId, type JsonRpcMessage } from '../wire/jsonrpc.js';

/** Default maximum nesting depth of a JSON-RPC body (objects and arrays). */
export const DEFAULT_MAX_JSON_DEPTH = 64;

/**
 * Result of parsing a POST body: the message, or the error to answer with. The id is recovered when
 * possible so that error answers can carry it (JSON-RPC 2.0 §5).
 */
export type ParsedBody =
  | { ok: true; message: JsonRpcMessage }
  | { ok: false; error: RequestRejectedError; id: JsonRpcId | null };

function reject(message: string, code: number, id: JsonRpcId | null = null): ParsedBody {
  return {
    ok: false,
    id,
    error: new RequestRejectedError(message, { status: 400, reason: 'request_invalid', jsonRpcCode: code }),
  };
}

/**
 * Parses and validates one JSON-RPC 2.0 message as MCP carries it over Streamable HTTP.
 *
 * - Invalid JSON: -32700 with `id: null` (JSON-RPC 2.0 §5.1).
 * - Deeper than `maxDepth`: -32600, before `JSON.parse` ever sees it (handlers may recurse over params).
 * - A batch (array): -32600. Batches were removed from MCP in 2025-06-18; accepting them would mean
 *   authorizing several operations under one decision.
 * - Not a valid request, notification or response: -32600. An `id` must be a string or a number;
 *   `params` and `result` must be objects; `error` must have an integer `code` and a string `message`.
 */
export function parseJsonRpcMessage(body: string, maxDepth = DEFAULT_MAX_JSON_DEPTH): ParsedBody {
  if (exceedsDepth(body, maxDepth)) {
    return reject(`Invalid Request: JSON nested deeper than ${maxDepth} levels`, JsonRpcErrorCode.InvalidRequest);
  }
  let value: unknown;
  try {
    value = JSON.parse(body);
  } catch {
    return reject('Parse error: the body is not valid JSON', JsonRpcErrorCode.ParseError);
  }
  if (Array.isArray(value)) {
    return reject(
      'Invalid Request: JSON-RPC batches are not supported (removed in MCP 2025-06-18); send one message per POST',
      JsonRpcErrorCode.InvalidRequest,
    );
  }
  if (typeof value !== 'object' || value === null) {
    return reject('Invalid Request: expected a JSON-RPC 2.0 object', JsonRpcErrorCode.InvalidRequest);
  }
  const m = value as Record<string, unknown>;
  const hasId = Object.hasOwn(m, 'id');
  const id = m.id;
  const idValid = typeof id === 'string' || (typeof id === 'number' && Number.isFinite(id));
  const knownId: JsonRpcId | null = idValid ? (id as JsonRpcId) : null;
  if (m.jsonrpc !== '2.0') return reject('Invalid Request: "jsonrpc" must be "2.0"', JsonRpcErrorCode.InvalidRequest, knownId);
  if (hasId && !idValid) {
    return reject('Invalid Request: "id" must be a string or a number', JsonRpcErrorCode.InvalidRequest);
  }
  if (Object.hasOwn(m, 'method')) {
    if (typeof m.method !== 'string' || m.method.length === 0) {
      return reject('Invalid Request: "method" must be a non-empty string', JsonRpcErrorCode.InvalidRequest, knownId);
    }
    if (Object.hasOwn(m, 'params') && !isPlainObject(m.params)) {
      return reject('Invalid Request: "params" must be an object', JsonRpcErrorCode.InvalidRequest, knownId);
    }
    if (Object.hasOwn(m, 'result') || Object.hasOwn(m, 'error')) {
      return reject('Invalid Request: a request cannot carry "result" or "error"', JsonRpcErrorCode.InvalidRequest, knownId);
    }
    return { ok: true, message: m as unknown as JsonRpcMessage };
  }
  // No method: a response to one of the server's own requests (sampling, elicitation, roots).
  if (!hasId) return reject('Invalid Request: a message needs a "method" or an "id"', JsonRpcErrorCode.InvalidRequest);
  const hasResult = Object.hasOwn(m, 'result');
  const hasError = Object.hasOwn(m, 'error');
  if (hasResult === hasError) {
    return reject('Invalid Request: a response carries exactly one of "result" or "error"', JsonRpcErrorCode.InvalidRequest, knownId);
  }
  if (hasResult && !isPlainObject(m.result)) {
    return reject('Invalid Request: "result" must be an object', JsonRpcErrorCode.InvalidRequest, knownId);
  }
  if (hasError) {
    const e = m.error;
    if (!isPlainObject(e) || !Number.isInteger(e.code) || typeof e.message !== 'string') {
      return reject('Invalid Request: "error" needs an integer "code" and a string "message"', JsonRpcErrorCode.InvalidRequest, knownId);
    }
  }
  return { ok: true, message: m as unknown as JsonRpcMessage };
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * Scans the raw text for nesting deeper than `max`, skipping strings. Linear, no allocation; cheaper
 * than parsing and it runs before `JSON.parse`, so a hostile body never becomes a deep object graph.
 */
function exceedsDepth(text: string, max: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++; // backslash: skip the escaped character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) {
      inString = true;
    } else if (c === 0x7b || c === 0x5b) {
      if (++depth > max) return true;
    } else if (c === 0x7d || c === 0x5d) {
      depth--;
    }
  }
  return false;
}
