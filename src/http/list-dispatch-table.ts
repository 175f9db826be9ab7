/**
 * Listing what a {@link dispatchTable} handler offers, for the policy coverage check the middleware logs at start-up:
 * its own list methods are asked through the handler, as a stateless client would ask them, by the gateway's catalog
 * reader. No caller is behind these calls: the context carries no token and no scope, so a list that depends on the
 * caller shows what a caller with no scope would see.
 */
import { waitBounded } from '../core/kernel/bounded-wait.js';
import type { HandlerContext, McpMessageHandler } from '../core/mcp/handler.js';
import {
  catalogCallResult,
  DEFAULT_CATALOG_MAX_ITEMS,
  DEFAULT_CATALOG_MAX_PAGES,
  readServerCatalog,
  type ListedServerCatalog,
} from '../core/policy/read-server-catalog.js';
import type { JsonRpcResponse } from '../core/wire/jsonrpc.js';

/** Time allowed for each listing call, in milliseconds: the application's own function answers at once. */
const CALL_TIMEOUT_MS = 10_000;

/** The context of a start-up listing call: nobody's token, no scope, given up after {@link CALL_TIMEOUT_MS}. */
function listingContext(): HandlerContext {
  return {
    auth: { token: '', clientId: '', scopes: [], extra: { claims: {}, tokenType: 'jwt' } },
    signal: AbortSignal.timeout(CALL_TIMEOUT_MS),
  };
}

/** Reads every list `handler` answers (a method it lacks is an empty list). */
export async function listDispatchTable(handler: McpMessageHandler): Promise<ListedServerCatalog> {
  let id = 0;
  const call = async (method: string, params?: Record<string, unknown>): Promise<Record<string, unknown>> => {
    const context = listingContext();
    const answer = Promise.resolve(handler({ jsonrpc: '2.0', id: ++id, method, params: params ?? {} }, context));
    const end = await waitBounded(answer, { signal: context.signal });
    if (end.ended !== 'settled') throw new Error(`${method}: the handler did not answer in ${CALL_TIMEOUT_MS} ms`);
    // A dispatch table answers with one response (never a stream), or none to a notification.
    return catalogCallResult(end.value as JsonRpcResponse | undefined, method, 'the handler');
  };
  return readServerCatalog(call, undefined, { maxPages: DEFAULT_CATALOG_MAX_PAGES, maxItems: DEFAULT_CATALOG_MAX_ITEMS });
}
