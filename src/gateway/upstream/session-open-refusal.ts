/**
 * The answer to an `initialize` whose session the gateway could not keep: every way the gateway opens sessions of its
 * own (a server set's, a connected upstream's before the user connects) refuses alike, so that a client sees one
 * contract. The session registry's bounds are `'busy'` (no slot or no room for its bytes: retry once one is ended);
 * a token naming nobody cannot own a session (`'no_identity'`).
 */
import type { ServerResponse } from 'node:http';
import { JsonRpcErrorCode, jsonRpcError, type JsonRpcRequest } from '../../core/wire/jsonrpc.js';
import { writeJson } from '../../http/write-response.js';

/** Why a session could not be kept. */
export type SessionOpenRefusalReason = 'no_identity' | 'busy';

/**
 * Writes the refusal of an `initialize` (JSON-RPC id `id`): 429 with `Retry-After: 1` and `RateLimited` when busy,
 * 403 `Forbidden` when the token names no subject or client.
 *
 * @example
 * if (outcome !== 'bound') return writeSessionOpenRefusal(res, initialize.id, outcome === 'no_identity' ? 'no_identity' : 'busy');
 */
export function writeSessionOpenRefusal(res: ServerResponse, id: JsonRpcRequest['id'], refusal: SessionOpenRefusalReason): void {
  if (refusal === 'busy') writeJson(res, 429, jsonRpcError(id, JsonRpcErrorCode.RateLimited, 'Too many sessions: end one (DELETE) or try again later'), { 'Retry-After': '1' });
  else writeJson(res, 403, jsonRpcError(id, JsonRpcErrorCode.Forbidden, 'Sessions need a token naming a subject or a client'));
}
