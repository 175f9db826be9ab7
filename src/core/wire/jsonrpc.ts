/** JSON-RPC 2.0 message shapes as MCP uses them, and the standard error codes. */

/** A JSON-RPC id: string or number (JSON-RPC 2.0 §4; MCP forbids null ids on requests). */
export type JsonRpcId = string | number;

export interface JsonRpcRequest {
  jsonrpc: '2.0';
  id: JsonRpcId;
  method: string;
  params?: Record<string, unknown>;
}

export interface JsonRpcNotification {
  jsonrpc: '2.0';
  method: string;
  params?: Record<string, unknown>;
}

export interface JsonRpcSuccess {
  jsonrpc: '2.0';
  id: JsonRpcId;
  result: Record<string, unknown>;
}

export interface JsonRpcErrorObject {
  code: number;
  message: string;
  data?: unknown;
}

export interface JsonRpcErrorResponse {
  jsonrpc: '2.0';
  id: JsonRpcId | null;
  error: JsonRpcErrorObject;
}

export type JsonRpcResponse = JsonRpcSuccess | JsonRpcErrorResponse;
export type JsonRpcMessage = JsonRpcRequest | JsonRpcNotification | JsonRpcResponse;

/**
 * Every JSON-RPC error code the guard, the gateway and the adapters send or read, in one table: write
 * `JsonRpcErrorCode.InvalidRequest`, never `-32600`. The standard codes (JSON-RPC 2.0 §5.1), MCP's protocol codes
 * (2026-07-28 `basic`, "Error Codes"), the codes of the MCP TypeScript SDK's transport that the adapters answer
 * as the SDK does, and the guard's own refusals. See `JSON_RPC_RESERVED_CODES` (same module) for the ranges.
 */
export const JsonRpcErrorCode = {
  /** JSON-RPC 2.0 §5.1: the body is not valid JSON. */
  ParseError: -32700,
  /** JSON-RPC 2.0 §5.1: not a valid request object (also the guard's transport refusals: 405, 413, 415…). */
  InvalidRequest: -32600,
  /** JSON-RPC 2.0 §5.1: the method does not exist or is not offered (404 under MCP 2026-07-28). */
  MethodNotFound: -32601,
  /** JSON-RPC 2.0 §5.1: invalid params; MCP 2026-07-28 also uses it for a resource not found. */
  InvalidParams: -32602,
  /** JSON-RPC 2.0 §5.1: internal error; the gateway's own failures (502, 503, 504) carry it too. */
  InternalError: -32603,
  /**
   * JSON-RPC 2.0 §5.1 "Server error" (first of the implementation-defined -32000..-32099): the MCP TypeScript
   * SDK's Streamable HTTP transport answers its own refusals (a missing or repeated `Mcp-Session-Id`) with it.
   */
  ServerError: -32000,
  /**
   * The MCP TypeScript SDK's `Session not found` (404 for an unknown `Mcp-Session-Id`, Streamable HTTP "Session
   * Management"). In MCP 2026-07-28's legacy range: a receiver may assume nothing of it (the SDK also reads it as a
   * request timeout).
   */
  SessionNotFound: -32001,
  /** MCP up to 2025-11-25 (`server/resources`, "Error Handling"): resource not found; 2026-07-28 uses -32602. */
  ResourceNotFound: -32002,
  /**
   * MCP 2025-11-25 (`client/elicitation`, "URL Elicitation Required Error"): the request can go on only after the
   * user completes the URL-mode elicitations in `data.elicitations`. 2026-07-28 lists it as 2025-11-25 only (its
   * clients get an input-required result instead).
   */
  UrlElicitationRequired: -32042,
  /** MCP 2026-07-28: HTTP headers do not match the body (`Mcp-Method`, `Mcp-Name`, `MCP-Protocol-Version`). */
  HeaderMismatch: -32020,
  /** MCP 2026-07-28: a capability the server needs from the client is missing. */
  MissingRequiredClientCapability: -32021,
  /** MCP 2026-07-28: the protocol version is not supported. */
  UnsupportedProtocolVersion: -32022,
  // The guard's own refusals sit outside the reserved range (see JSON_RPC_RESERVED_CODES), where MCP 2026-07-28
  // says new codes SHOULD be allocated; the last three digits are the HTTP status, for reading logs.
  /** The guard: 401, no, invalid or wrongly presented token, or a bad DPoP proof (RFC 6750 §3.1, RFC 9449 §7.1). */
  Unauthorized: -31401,
  /** The guard: 403 `insufficient_scope` (RFC 6750 §3.1). */
  Forbidden: -31403,
  /** The guard: 429, over a rate limit or too many requests in progress (RFC 6585 §4). */
  RateLimited: -31429,
  /** The guard: 503, the authorization server or a shared store cannot be reached (RFC 9110 §15.6.4). */
  Unavailable: -31503,
} as const;

/**
 * The code ranges that give a code its meaning. JSON-RPC 2.0 §5.1 reserves `reserved` for predefined errors, and
 * MCP 2026-07-28 (`basic`, "Error Codes") partitions it: new codes SHOULD be allocated outside it, and `legacy`
 * (-32000..-32019) carries no meaning a receiver may assume. Bounds are inclusive.
 */
export const JSON_RPC_RESERVED_CODES = {
  reserved: { min: -32768, max: -32000 },
  legacy: { min: -32019, max: -32000 },
} as const;

/** A request: has a `method` and an `id` (it expects a response). */
export function isJsonRpcRequest(m: JsonRpcMessage): m is JsonRpcRequest {
  return 'method' in m && 'id' in m;
}

/** A notification: has a `method` and no `id` (answered with nothing; 202 over HTTP). */
export function isJsonRpcNotification(m: JsonRpcMessage): m is JsonRpcNotification {
  return 'method' in m && !('id' in m);
}

/** A response (to a request of the other side): no `method`; carries `result` or `error`. */
export function isJsonRpcResponse(m: JsonRpcMessage): m is JsonRpcResponse {
  return !('method' in m);
}

/** Builds a JSON-RPC error response. */
export function jsonRpcError(id: JsonRpcId | null, code: number, message: string, data?: unknown): JsonRpcErrorResponse {
  const error: JsonRpcErrorObject = { code, message };
  if (data !== undefined) error.data = data;
  return { jsonrpc: '2.0', id, error };
}

/**
 * The id of a JSON-RPC request, for the answer to it: `null` for notifications, responses and anything
 * that is not a message (JSON-RPC 2.0 §5: an error about an unidentifiable request carries `null`).
 */
export function requestIdOf(message: unknown): JsonRpcId | null {
  if (typeof message !== 'object' || message === null || !('method' in message)) return null;
  const id = (message as { id?: unknown }).id;
  return typeof id === 'string' || typeof id === 'number' ? id : null;
}
