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

/** Standard JSON-RPC 2.0 codes (§5.1) and MCP's protocol codes (2026-07-28 `basic/index`). */
export const JsonRpcErrorCode = {
  ParseError: -32700,
  InvalidRequest: -32600,
  MethodNotFound: -32601,
  InvalidParams: -32602,
  InternalError: -32603,
  /** MCP 2026-07-28: HTTP headers do not match the body (`Mcp-Method`, `Mcp-Name`, `MCP-Protocol-Version`). */
  HeaderMismatch: -32020,
  /** MCP 2026-07-28: a capability the server needs from the client is missing. */
  MissingRequiredClientCapability: -32021,
  /** MCP 2026-07-28: the protocol version is not supported. */
  UnsupportedProtocolVersion: -32022,
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
