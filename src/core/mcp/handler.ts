import type { AuthInfo } from '../kernel/auth-info.js';
import type { JsonRpcMessage, JsonRpcResponse } from '../wire/jsonrpc.js';

/** What a message handler is given besides the message. */
export interface HandlerContext {
  /** The verified caller. */
  auth: AuthInfo;
  /** Fires when the client goes away (connection closed before the answer was sent). */
  signal: AbortSignal;
  /** The MCP protocol revision the request speaks (`MCP-Protocol-Version`, or the body's `_meta`), when known. */
  protocolVersion?: string;
  /** `Mcp-Session-Id` sent by the client, when any (2025 revisions). Never authentication. */
  sessionId?: string;
}

/**
 * What a message handler may return:
 * - a JSON-RPC response, sent as `application/json`;
 * - `undefined`, for notifications and client responses (answered `202 Accepted`);
 * - an async iterable of messages, streamed as `text/event-stream` (progress notifications first,
 *   then the response, which ends the stream).
 */
export type HandlerResult = JsonRpcResponse | undefined | AsyncIterable<JsonRpcMessage>;

/**
 * A plain MCP handler: one JSON-RPC message in, an answer out. The guard has already authenticated
 * the caller and authorized the message against the policy before calling it.
 */
export type McpMessageHandler = (message: JsonRpcMessage, context: HandlerContext) => HandlerResult | Promise<HandlerResult>;
