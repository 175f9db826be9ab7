import { RequestRejectedError, UNAVAILABLE_JSONRPC_CODE } from './errors.js';

/** `Retry-After` of a {@link storeUnavailableError}, in seconds: long enough for a store to fail over. */
export const STORE_RETRY_AFTER_SECONDS = 5;

/**
 * The refusal when a store the guard must consult before serving cannot answer (the rate limiter's counters, the
 * DPoP replay cache; in a fleet, Redis): 503 with `Retry-After` and the unavailable JSON-RPC code, no challenge.
 * The request is neither served unchecked nor blamed on the client's credentials (fail closed). The one shape of
 * both refusals, so a client or an alert handles them alike.
 *
 * @example
 * throw storeUnavailableError('Rate limiter unavailable: retry later', 'rate_limiter_unavailable');
 */
export function storeUnavailableError(message: string, reason: 'rate_limiter_unavailable' | 'dpop_replay_cache_unavailable'): RequestRejectedError {
  return new RequestRejectedError(message, {
    status: 503,
    reason,
    jsonRpcCode: UNAVAILABLE_JSONRPC_CODE,
    headers: { 'Retry-After': String(STORE_RETRY_AFTER_SECONDS) },
  });
}
