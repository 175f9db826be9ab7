import type { ServerResponse } from 'node:http';
import { jsonRpcError, type JsonRpcId } from '../../core/wire/jsonrpc.js';
import { writeJson } from '../../http/write-response.js';
import { GATEWAY_JSONRPC_CODE } from './upstream.js';

/** The text of the 503 every upstream answers while the gateway shuts down. */
export const GATEWAY_SHUTDOWN_MESSAGE = 'Service unavailable: the gateway is shutting down';

/**
 * Writes the gateway's own answer for a failed exchange, whatever the upstream's transport: `status` with a
 * JSON-RPC error carrying {@link GATEWAY_JSONRPC_CODE}, the request's id and `message` (never upstream error text).
 *
 * @example
 * writeGatewayError(res, 504, 7, 'Gateway timeout: the upstream MCP server did not answer in time');
 */
export function writeGatewayError(res: ServerResponse, status: number, id: JsonRpcId | null, message: string, retryAfter?: string): void {
  writeJson(res, status, jsonRpcError(id, GATEWAY_JSONRPC_CODE, message), retryAfter ? { 'Retry-After': retryAfter } : undefined);
}
