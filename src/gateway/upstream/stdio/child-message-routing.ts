import type { JsonRpcNotification, JsonRpcRequest } from '../../../core/wire/jsonrpc.js';
import { mayStreamServerMessage } from '../../../core/mcp/protocol-version.js';
import type { Exchange } from './stdio-exchange.js';

/** Where a child's messages can go: the POSTs waiting on it and its session's GET stream. */
export interface ChildMessageTargets {
  /** POSTs waiting for an answer from the child, oldest first. */
  readonly waiting: ReadonlySet<Exchange>;
  readonly get: Exchange | undefined;
}

/**
 * Delivers a message of the child's that answers none of its requests: to the one POST waiting on it, else to
 * the session's GET stream, else to the newest waiting POST that streams. Streams a client is connected to come
 * first, in that order; a stream whose client is away (it may resume) only gets a notification, kept for the
 * resume, and only when no connected one can: a request of the child's sent there would wait for an answer that
 * may never come, so with nothing connected it is refused (false: the child answers it with an error at once).
 */
export function routeChildMessage(targets: ChildMessageTargets, message: JsonRpcRequest | JsonRpcNotification): boolean {
  const only = targets.waiting.size === 1 ? [...targets.waiting][0] : undefined;
  // What the revision lets a stream carry: 2026-07-28 request streams take no request of the child's, and only
  // notifications that relate to their request, which the child's are known to be when only one request waits.
  // Others are dropped (a list change has no stream of its own there); no log, as there is no debug level.
  const fits = (exchange: Exchange): boolean => mayStreamServerMessage(message, exchange.protocolVersion, exchange === only);
  const order: Exchange[] = only !== undefined ? [only] : [];
  if (targets.get !== undefined) order.push(targets.get);
  // Newest first: the request most recently sent is the one most likely still being read.
  for (const exchange of [...targets.waiting].reverse()) if (exchange.sse && only === undefined) order.push(exchange);
  for (const exchange of order) if (exchange.connected() && fits(exchange) && exchange.push(message)) return true;
  if ('id' in message) return false;
  for (const exchange of order) if (!exchange.connected() && fits(exchange) && exchange.push(message)) return true;
  return false;
}
