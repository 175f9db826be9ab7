import type { Dispatcher } from 'undici';
import { createEventStreamRewriter, eventStreamData } from '../../core/wire/event-stream.js';
import type { JsonRpcId, JsonRpcResponse } from '../../core/wire/jsonrpc.js';
import { EVENT_STREAM_MEDIA_TYPE, mediaType } from '../../http/media-type.js';

/**
 * Reading an upstream's answer to one request the gateway sent for itself (a listing, a server set's own request):
 * the JSON-RPC response it carries, in a JSON body (one message or a batch) or in an event stream.
 */

/** An upstream's answer grew past the bytes the gateway reads of it. */
export class UpstreamAnswerTooLargeError extends Error {
  constructor(readonly maxBytes: number) {
    super(`the upstream's answer is larger than ${maxBytes} bytes`);
  }
}

/**
 * Reads the body of an upstream's answer to one request the gateway sent for itself, as text, at most `maxBytes`.
 * An event stream may stay open after its answer: reading stops at the end of the first event whose data is a
 * JSON-RPC response (found by the one event-stream parser, as an event's end may be split across chunks), and the
 * rest of the body is cancelled, its connection closed. The time allowed is the request's own signal, which covers
 * the body too.
 *
 * @param contentType - The answer's `Content-Type` header; only `text/event-stream` is read event by event.
 * @throws UpstreamAnswerTooLargeError past `maxBytes`; the body's own error when it fails (a timeout, a reset).
 * @example
 * const text = await readAnswerBody(answer.body, answer.headers['content-type'], 1_048_576);
 * const response = findResponse(answer.headers['content-type'], text, id);
 */
export async function readAnswerBody(body: Dispatcher.ResponseData['body'], contentType: unknown, maxBytes: number): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  let answered = false;
  const events = mediaType(contentType) === EVENT_STREAM_MEDIA_TYPE ? createEventStreamRewriter((data) => void (answered ||= isResponseData(data)), { maxEventBytes: maxBytes }) : undefined;
  try {
    for await (const chunk of body as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > maxBytes) throw new UpstreamAnswerTooLargeError(maxBytes);
      chunks.push(chunk);
      events?.push(chunk);
      if (answered) break;
    }
  } finally {
    // Leaving the loop early (an answered event stream, a bound) closes the body, and its connection.
    body.on('error', () => undefined).destroy();
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** Whether an event's data is a JSON-RPC response (has `result` or `error`); data that is not JSON is not. */
function isResponseData(data: string): boolean {
  const message = parseOrUndefined(data);
  return typeof message === 'object' && message !== null && ('result' in message || 'error' in message);
}

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
