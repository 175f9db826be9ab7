/**
 * Pins on the single upstream (`MCP_AUTH_UPSTREAM` or `MCP_AUTH_UPSTREAM_COMMAND`): its `tools/list` answers pass
 * through {@link ToolPins.observe} (a tools list on any other answer too, a GET's stream included, found by its shape
with the written-answer filter) and its `tools/call` requests through {@link ToolPins.refuses}, as a server set's
 * do. Wrapped only when pins are on: with them off the upstream is used as it is, at no cost per request.
 */
import type { ServerResponse } from 'node:http';
import { jsonRpcError, type JsonRpcId, type JsonRpcMessage } from '../../core/wire/jsonrpc.js';
import type { GuardedRequest, HttpHandlerContext } from '../../http/http-handler.js';
import { auditSessionRefused } from '../../http/audit-trail.js';
import { filterListResponse } from '../../http/filter-written-response.js';
import { writeJson } from '../../http/write-response.js';
import { CapturedResponse } from '../multiplex/captured-response.js';
import { findResponse } from '../upstream/answer-response.js';
import { unknownNameRefusal } from '../../core/mcp/unknown-name.js';
import { GATEWAY_JSONRPC_CODE, type Upstream } from '../upstream/upstream.js';
import type { ToolPins } from './tool-pins.js';

/**
 * The upstream, with its tools compared with their pins under `server` (`upstream` for the single upstream). A
 * `tools/list` answer is read whole (at most `maxBytes`; a larger one gets 502), then written on as it came when
 * nothing is hidden, or as JSON without the hidden tools. A refused call is answered as an unknown tool's.
 * Everything else is the upstream's own, as with `withRouteHook`.
 *
 * @example
 * const upstream = withToolPins(createUpstreamProxy(options), pins, 'upstream', 8 * 1_048_576);
 */
export function withToolPins<U extends Upstream>(upstream: U, pins: ToolPins, server: string, maxBytes: number): U {
  const handle = upstream.handle;
  const forward = (req: GuardedRequest, res: ServerResponse, context: HttpHandlerContext): Promise<void> | void => handle.call(upstream, req, res, context);
  const hooked: Pick<Upstream, 'handle'> = {
    handle(req, res, context) {
      const message = req.body as JsonRpcMessage | undefined;
      if (req.method !== 'POST' || message === undefined || !('method' in message) || !('id' in message) || message.id === undefined) {
        // A tools list may come on any answer (a GET's stream, another request's exchange): found by its shape.
        if (req.method === 'GET' || req.method === 'POST') filterListResponse(res, message, (response) => hideByPins(pins, server, response));
        return forward(req, res, context);
      }
      if (message.method === 'tools/call') {
        const name = (message.params as Record<string, unknown> | undefined)?.name;
        if (typeof name === 'string' && pins.refuses(server, name)) {
          const { code, message: text } = unknownNameRefusal('tool', name);
          // The gateway's own decision: the audit record says deny, as for any unknown tool.
          auditSessionRefused(req, 'target_unknown');
          writeJson(res, 200, jsonRpcError(message.id, code, text));
          return;
        }
      }
      if (message.method === 'tools/list') return listThroughPins({ forward, pins, server, maxBytes }, req, res, context, message.id);
      filterListResponse(res, message, (response) => hideByPins(pins, server, response));
      return forward(req, res, context);
    },
  };
  return Object.assign(Object.create(upstream) as U, hooked);
}

/**
 * Any JSON-RPC response whose result holds a tools list, compared with the pins: the tools they hide left out. The
 * written-answer filter calls it on every response of an answer, by shape, as the policy's list filter does.
 */
function hideByPins(pins: ToolPins, server: string, response: JsonRpcMessage): JsonRpcMessage {
  const result = 'result' in response ? (response.result as Record<string, unknown> | undefined) : undefined;
  const tools = result?.tools;
  if (!Array.isArray(tools)) return response;
  const shown = pins.observe(server, tools, typeof result!.nextCursor !== 'string');
  return shown === tools ? response : ({ ...response, result: { ...result, tools: shown } } as JsonRpcMessage);
}

/** What a listing through the pins needs. */
interface PinnedListing {
  readonly forward: (req: GuardedRequest, res: ServerResponse, context: HttpHandlerContext) => Promise<void> | void;
  readonly pins: ToolPins;
  readonly server: string;
  readonly maxBytes: number;
}

/** Forwards a `tools/list`, reads its answer, and writes it with the tools the pins show. */
async function listThroughPins(listing: PinnedListing, req: GuardedRequest, res: ServerResponse, context: HttpHandlerContext, id: JsonRpcId): Promise<void> {
  const captured = new CapturedResponse(listing.maxBytes);
  // The client leaving ends the upstream exchange, as it would have without pins.
  const stop = (): void => void (captured.writableEnded || captured.destroy());
  res.once('close', stop);
  try {
    await listing.forward(req, captured.asServerResponse(), context);
    await captured.done;
  } catch {
    captured.destroy();
  } finally {
    res.off('close', stop);
  }
  if (res.destroyed || res.writableEnded) return;
  if (captured.destroyed || captured.tooLarge) {
    writeJson(res, 502, jsonRpcError(id, GATEWAY_JSONRPC_CODE, 'Bad gateway: the upstream\'s tools/list answer could not be read whole to compare it with the pins'));
    return;
  }
  const text = captured.text();
  const headers = captured.getHeaders();
  delete headers['content-length'];
  const response = captured.statusCode === 200 ? findResponse(captured.header('content-type'), text, id) : undefined;
  const result = response && 'result' in response ? (response.result as Record<string, unknown> | undefined) : undefined;
  const tools = result?.tools;
  const shown = Array.isArray(tools) ? listing.pins.observe(listing.server, tools, typeof result!.nextCursor !== 'string') : tools;
  if (shown === tools) {
    res.writeHead(captured.statusCode, headers).end(text);
    return;
  }
  // Some tools are hidden: the answer is written again, as JSON (an event stream's other events are not kept).
  delete headers['content-type'];
  writeJson(res, 200, { ...response, result: { ...result, tools: shown } }, Object.fromEntries(Object.entries(headers).filter((entry): entry is [string, string] => typeof entry[1] === 'string')));
}
