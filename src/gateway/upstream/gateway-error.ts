import type { ServerResponse } from 'node:http';
import { jsonRpcError, type JsonRpcId } from '../../core/wire/jsonrpc.js';
import { writeJson } from '../../http/write-response.js';
import { GATEWAY_JSONRPC_CODE } from './upstream.js';

/** The text of the 503 every upstream answers while the gateway shuts down. */
export const GATEWAY_SHUTDOWN_MESSAGE = 'Service unavailable: the gateway is shutting down';

/**
 * Writes the gateway's own answer for a failed exchange, whatever the upstream's transport: `status` with a
 * JSON-RPC error carrying `code` ({@link GATEWAY_JSONRPC_CODE} by default; the unavailable code for a 503 the
 * client should retry), the request's id and `message` (never upstream error text).
 *
 * @example
 * writeGatewayError(res, 504, 7, 'Gateway timeout: the upstream MCP server did not answer in time');
 */
export function writeGatewayError(res: ServerResponse, status: number, id: JsonRpcId | null, message: string, retryAfter?: string, code: number = GATEWAY_JSONRPC_CODE): void {
  writeJson(res, status, jsonRpcError(id, code, message), retryAfter ? { 'Retry-After': retryAfter } : undefined);
}
