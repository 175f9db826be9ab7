import type { IncomingMessage, ServerResponse } from 'node:http';
import type { GuardHttpResponse } from '../core/guard/create-guard.js';
import { jsonRpcError, type JsonRpcId, type JsonRpcMessage } from '../core/wire/jsonrpc.js';
import { messageEventFrame } from '../core/wire/event-stream-frame.js';
import { pendingIdRefusal, type PendingIdRefusal } from '../core/mcp/pending-request-ids.js';
import { answerThenLinger, bodyStillArriving } from './lingering-close.js';
import { EVENT_STREAM_MEDIA_TYPE, JSON_MEDIA_TYPE } from './media-type.js';

/** Writes a JSON body with an exact Content-Length (cheaper than res.json on the hot path). */
export function writeJson(res: ServerResponse, status: number, body: unknown, headers?: Record<string, string>): void {
  res.end(writeJsonHead(res, status, body, headers));
}

/**
 * Writes a JSON-RPC error answer: `status`, and a body of `jsonRpcError(id, code, message)`, through
 * {@link writeJson} with its `headers` (for example `Retry-After`). Call it only before the head is sent.
 *
 * @example
 * writeJsonRpcError(res, 503, id, JsonRpcErrorCode.InternalError, 'Service unavailable: shutting down', { 'Retry-After': '5' });
 */
export function writeJsonRpcError(res: ServerResponse, status: number, id: JsonRpcId | null, code: number, message: string, headers?: Record<string, string>): void {
  writeJson(res, status, jsonRpcError(id, code, message), headers);
}

/**
 * Answers a request whose id was refused by the pending-ids rule (see `pendingIdRefusal`): 400 `-32600` for an
 * id in use, 429 with `Retry-After: 1` for too many requests in progress. One writer for every adapter.
 */
export function writePendingIdRefusal(res: ServerResponse, refusal: PendingIdRefusal, id: JsonRpcId): void {
  const answer = pendingIdRefusal(refusal, id);
  writeJson(res, answer.status, answer.body, answer.headers);
}

/** Writes the status and headers of a JSON answer and returns its body, not yet written. */
function writeJsonHead(res: ServerResponse, status: number, body: unknown, headers?: Record<string, string>): string {
  const text = JSON.stringify(body);
  if (headers) for (const k in headers) res.setHeader(k, headers[k]!);
  res.writeHead(status, { 'Content-Type': JSON_MEDIA_TYPE, 'Content-Length': Buffer.byteLength(text) });
  return text;
}

/**
 * Writes a guard error answer, unless headers were already sent (then the connection is ended). A refusal given
 * while the request body is still arriving (a 413, a 408, a forbidden `Origin`, a 405, a missing token) also
 * closes the connection, gracefully (see `answerThenLinger`): the rest of the body is read and discarded first,
 * within bounds, so that the client reads the answer instead of a reset, and a client trickling that body cannot
 * hold the connection open past those bounds.
 */
export function writeError(res: ServerResponse, answer: GuardHttpResponse): void {
  if (res.headersSent) {
    res.end();
    return;
  }
  const req = res.req as IncomingMessage | undefined;
  if (req !== undefined && bodyStillArriving(req)) {
    answerThenLinger(req, res, () => void res.write(writeJsonHead(res, answer.status, answer.body, answer.headers)));
    return;
  }
  writeJson(res, answer.status, answer.body, answer.headers);
}

/** `202 Accepted` with no body: notifications and client responses (MCP Streamable HTTP). */
export function writeAccepted(res: ServerResponse): void {
  res.writeHead(202, { 'Content-Length': '0' });
  res.end();
}

/**
 * The header that asks a reverse proxy (nginx, and others that read it) not to buffer an answer, so each event
 * of a stream reaches the client when it is sent. MCP 2026-07-28 says servers SHOULD send it when starting an
 * event stream (basic/transports/streamable-http); every stream the guard starts or forwards carries it.
 */
export const NO_PROXY_BUFFERING = { name: 'x-accel-buffering', value: 'no' } as const;

/** Starts a `text/event-stream` answer. */
export function startEventStream(res: ServerResponse): void {
  res.writeHead(200, {
    'Content-Type': EVENT_STREAM_MEDIA_TYPE,
    'Cache-Control': 'no-cache, no-transform',
    Connection: 'keep-alive',
    [NO_PROXY_BUFFERING.name]: NO_PROXY_BUFFERING.value,
  });
  res.flushHeaders();
}

/** Writes one SSE `message` event carrying a JSON-RPC message (one data line: JSON has no raw newlines). */
export function writeEvent(res: ServerResponse, message: JsonRpcMessage): boolean {
  return res.write(messageEventFrame(JSON.stringify(message)));
}

/**
 * Writes one SSE event of a stream the client may resume (MCP Streamable HTTP, "Resumability and
 * Redelivery"): `data` is a serialised JSON-RPC message, sent as a `message` event with the `id` the client
 * gives back as `Last-Event-ID`; empty `data` is a priming event. See `messageEventFrame`.
 */
export function writeEventWithId(res: ServerResponse, id: string, data: string): boolean {
  return res.write(messageEventFrame(data, id));
}
