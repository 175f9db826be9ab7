import type { ServerResponse } from 'node:http';
import { jsonRpcError, JsonRpcErrorCode, type JsonRpcMessage } from '../../../core/wire/jsonrpc.js';
import { filterJsonText, UNFILTERABLE, unfilterableAnswer, UNKNOWN_REQUEST } from '../../../core/policy/response-filter.js';
import type { HttpHandlerContext } from '../../../http/http-handler.js';
import { startEventStream, writeJson } from '../../../http/write-response.js';
import type { StdioSession } from './stdio-session.js';

/**
 * A GET with `Last-Event-ID`: the stream it names is replayed from there and carried on, if it is this
 * session's and nothing after that event was forgotten; else 400, since a replay with a gap, or of another
 * stream, would let the client believe it missed nothing. The resumed stream's owner keeps the session in use.
 */
export function resumeStream(res: ServerResponse, session: StdioSession, lastEventId: string, context: HttpHandlerContext): Promise<void> | void {
  // The events kept were filtered when they were sent; filter them again for this request, so that a policy
  // narrowed since (or a token with fewer scopes) applies to the copies too. A list or read answer is recognised
  // by its result, whatever id it carries (fail closed).
  const filter = (response: JsonRpcMessage): JsonRpcMessage => context.filterResponse(UNKNOWN_REQUEST, response);
  const refilter = (data: string): string => {
    const out = filterJsonText(data, filter);
    return out === UNFILTERABLE ? JSON.stringify(unfilterableAnswer(null)) : (out ?? data);
  };
  const streams = session.existingEventStreams();
  const outcome = streams === undefined ? { refused: 'unknown_event' as const } : streams.resume(res, lastEventId, () => startEventStream(res), refilter);
  if (outcome !== undefined) {
    const why = outcome.refused === 'events_lost' ? 'events after it are no longer kept' : 'it is not an event id of this session';
    writeJson(res, 400, jsonRpcError(null, JsonRpcErrorCode.InvalidRequest, `Bad Request: the stream named by Last-Event-ID cannot be resumed (${why}); send the request again`));
    return;
  }
  if (res.writableEnded) return;
  return new Promise<void>((resolve) => res.once('close', () => resolve()));
}
