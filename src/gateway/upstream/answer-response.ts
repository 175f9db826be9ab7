import { eventStreamData } from '../../core/wire/event-stream.js';
import type { JsonRpcId, JsonRpcResponse } from '../../core/wire/jsonrpc.js';
import { EVENT_STREAM_MEDIA_TYPE, mediaType } from '../../http/media-type.js';

/**
 * Reading an upstream's answer to one request the gateway sent for itself (a listing, a server set's own request):
 * the JSON-RPC response it carries, in a JSON body (one message or a batch) or in an event stream.
 */

/** The response with `id` in a JSON or event-stream body; anything else in the body is not an answer to it. */
export function findResponse(contentType: string | undefined, body: string, id: JsonRpcId): JsonRpcResponse | undefined {
  const candidates: unknown[] = [];
  if (mediaType(contentType) === EVENT_STREAM_MEDIA_TYPE) {
    for (const data of eventStreamData(body)) candidates.push(parseOrUndefined(data));
  } else {
    const parsed = parseOrUndefined(body);
    if (Array.isArray(parsed)) candidates.push(...(parsed as unknown[]));
    else candidates.push(parsed);
  }
  for (const candidate of candidates) {
    if (typeof candidate !== 'object' || candidate === null) continue;
    const message = candidate as { id?: unknown };
    if (message.id === id && ('result' in message || 'error' in message)) return candidate as JsonRpcResponse;
  }
  return undefined;
}

function parseOrUndefined(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
