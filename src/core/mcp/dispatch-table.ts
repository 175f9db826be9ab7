import type { HandlerContext, McpMessageHandler } from './handler.js';
import { JsonRpcErrorCode, jsonRpcError, type JsonRpcMessage, type JsonRpcResponse } from '../wire/jsonrpc.js';
import { isStatelessRevision } from './protocol-version.js';

/**
 * One method of a dispatch table: gets `params` (or `{}`) and the context, returns the JSON-RPC
 * `result` object. Returning `undefined` from a notification handler is normal.
 */
export type MethodHandler = (
  params: Record<string, unknown>,
  context: HandlerContext,
) => Record<string, unknown> | undefined | void | Promise<Record<string, unknown> | undefined | void>;

/**
 * Throw this from a method handler to answer a JSON-RPC error with a chosen code (e.g. -32602
 * Invalid params). Any other exception becomes -32603 with no detail, so internals never leak.
 */
export class JsonRpcMethodError extends Error {
  readonly code: number;
  readonly data?: unknown;
  constructor(code: number, message: string, data?: unknown) {
    super(message);
    this.name = 'JsonRpcMethodError';
    this.code = code;
    this.data = data;
  }
}

/**
 * Turns a table `{ "initialize": fn, "tools/list": fn, "tools/call": fn, ... }` into an
 * {@link McpMessageHandler}, the way a hand-written MCP server dispatches: unknown request methods get
 * -32601 (Method not found); notifications and client responses are delivered (when the table has
 * the notification's method) and get no answer. For 2026-07-28 requests a result without `resultType`
 * gets `resultType: "complete"`.
 *
 * Lookup is by own property only, so a method named `constructor` or `__proto__` is never resolved
 * through the prototype chain.
 */
export function dispatchTable(table: Readonly<Record<string, MethodHandler>>): McpMessageHandler {
  const methods = new Map<string, MethodHandler>(Object.entries(table));
  const handler: McpMessageHandler = async (message: JsonRpcMessage, context: HandlerContext): Promise<JsonRpcResponse | undefined> => {
    if (!('method' in message)) return undefined; // a response to a server request: nothing pending here
    const fn = methods.get(message.method);
    const isRequest = 'id' in message;
    if (!isRequest) {
      if (fn) await fn(message.params ?? {}, context);
      return undefined;
    }
    const id = message.id;
    if (!fn) return jsonRpcError(id, JsonRpcErrorCode.MethodNotFound, `Method not found: ${message.method}`);
    try {
      const result: Record<string, unknown> = (await fn(message.params ?? {}, context)) ?? {};
      // 2026-07-28: every result carries resultType; a method handler's result is a complete one.
      const modern = isStatelessRevision(context.protocolVersion);
      return { jsonrpc: '2.0', id, result: modern && result.resultType === undefined ? { resultType: 'complete', ...result } : result };
    } catch (error) {
      if (error instanceof JsonRpcMethodError) return jsonRpcError(id, error.code, error.message, error.data);
      return jsonRpcError(id, JsonRpcErrorCode.InternalError, 'Internal error');
    }
  };
  DISPATCH_TABLES.add(handler);
  return handler;
}

/** The handlers {@link dispatchTable} made: their list methods are the application's own, safe to ask at start-up. */
const DISPATCH_TABLES = new WeakSet<McpMessageHandler>();

/**
 * Whether `handler` was made by {@link dispatchTable}: then the middleware may ask it for its lists at start-up (with
 * no caller's token) to check the policy against them, as it does an SDK server. Any other function may do anything
 * when called, so it is never called but by a request.
 */
export function isDispatchTable(handler: unknown): handler is McpMessageHandler {
  return typeof handler === 'function' && DISPATCH_TABLES.has(handler as McpMessageHandler);
}
