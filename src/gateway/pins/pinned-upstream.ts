/**
 * Pins on the single upstream (`MCP_AUTH_UPSTREAM` or `MCP_AUTH_UPSTREAM_COMMAND`): every tools list its answers
 * carry passes through {@link ToolPins.observe} in the request pipeline's list-filter step (the handler's
 * `listFilter`, before the policy's filter: one parse per answer, and an event stream's other events pass as they
 * came), and its `tools/call` requests through `pinRefusal`, as a server set's do. Wrapped only when pins are on:
 * with them off the upstream is used as it is, at no cost per request.
 */
import { jsonRpcError, type JsonRpcMessage } from '../../core/wire/jsonrpc.js';
import type { HandlerListFilter } from '../../http/http-handler.js';
import { auditSessionRefused } from '../../http/audit-trail.js';
import { writeJson } from '../../http/write-response.js';
import { decorateUpstream } from '../upstream/decorated-upstream.js';
import type { Upstream } from '../upstream/upstream.js';
import { pinRefusal } from './pin-hidden-target.js';
import type { ToolPins } from './tool-pins.js';

/**
 * The upstream, with its tools compared with their pins under `server` (`upstream` for the single upstream): the
 * tools they hide left out of every list (see the module's description), and a refused call answered as an unknown
 * tool's. Everything else is the upstream's own (see `decorateUpstream`).
 *
 * @example
 * const upstream = withToolPins(createUpstreamProxy(options), pins, 'upstream');
 */
export function withToolPins<U extends Upstream>(upstream: U, pins: ToolPins, server: string): U {
  const handle = upstream.handle;
  const listFilter: HandlerListFilter = {
    filter: (response) => hideByPins(pins, server, response),
    // A filtered list answer is reused only while the pins stand as they were when it was filtered.
    key: () => `pins:${pins.generation}`,
  };
  const hooked: Pick<Upstream, 'handle'> & { listFilter: HandlerListFilter } = {
    listFilter,
    handle(req, res, context) {
      const message = req.body as JsonRpcMessage | undefined;
      if (req.method === 'POST' && message !== undefined && 'method' in message && message.method === 'tools/call' && 'id' in message && message.id !== undefined) {
        const name = (message.params as Record<string, unknown> | undefined)?.name;
        const refusal = typeof name === 'string' ? pinRefusal(pins, server, name) : undefined;
        if (refusal) {
          auditSessionRefused(req, refusal.audit);
          writeJson(res, 200, jsonRpcError(message.id, refusal.code, refusal.message));
          return;
        }
      }
      return handle.call(upstream, req, res, context);
    },
  };
  return decorateUpstream(upstream, hooked as Partial<U>);
}

/**
 * Any JSON-RPC response whose result holds a tools list, compared with the pins: the tools they hide left out (the
 * response itself when none is). The list-filter step calls it on every response of an answer, by shape, as the
 * policy's list filter does; a server set, on every response a server's stream carries into the client's.
 *
 * @example
 * const shown = hideByPins(pins, 'notes', { jsonrpc: '2.0', id: 1, result: { tools } });
 */
export function hideByPins(pins: ToolPins, server: string, response: JsonRpcMessage): JsonRpcMessage {
  const result = 'result' in response ? (response.result as Record<string, unknown> | undefined) : undefined;
  const tools = result?.tools;
  if (!Array.isArray(tools)) return response;
  const shown = pins.observe(server, tools, typeof result!.nextCursor !== 'string');
  return shown === tools ? response : ({ ...response, result: { ...result, tools: shown } } as JsonRpcMessage);
}
