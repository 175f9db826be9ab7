import type { OutgoingHttpHeader, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import { createEventStreamRewriter, type EventStreamRewriter } from '../core/wire/event-stream.js';
import type { JsonRpcId, JsonRpcMessage } from '../core/wire/jsonrpc.js';
import { EVENT_STREAM_MEDIA_TYPE, JSON_MEDIA_TYPE, mediaType } from './media-type.js';
import { filterJsonText, isFilteredRequest, mayNeedFiltering, UNFILTERABLE, unfilterableAnswer } from '../core/policy/response-filter.js';

/** Options of {@link filterListResponse}. */
export interface FilterListResponseOptions {
  /**
   * Most bytes held back for filtering, in bytes: the body of an `application/json` answer that must be parsed
   * (the answer to a list or read request, or one whose first bytes hold a key of a list, see
   * `mayNeedFiltering`), or the one SSE event being assembled. Such a body or event larger than this cannot be
   * filtered, so it is replaced by a JSON-RPC `-32603` error (fail closed) instead of being forwarded unfiltered;
   * an event of a stream that does not answer a list or read request is passed on instead when none of it could
   * hold a list, and the rest of its stream searched as it passes. Default 16 777 216 (16 MiB).
   */
  maxBufferedBytes?: number;
  /**
   * Reuse the filtered answer when the upstream's answer is byte for byte the last one seen under `key`
   * (after the canonical `{"jsonrpc":"2.0","id":<id>,"result":` prefix, so the id may differ): list answers
   * rarely change, and parsing and re-serialising a large one is most of a gateway's work. `key` must cover
   * everything the filter depends on (see `CompiledPolicy.listFilterKey`).
   */
  memo?: { key: string; store: ListAnswerMemo };
}

/** Filtered JSON list answers by filter key: the upstream's bytes after the prefix, and the filtered rest. */
export type ListAnswerMemo = Map<string, { rest: Buffer; filteredRest: Buffer | undefined }>;

/**
 * `headersSent` while a JSON answer is held, with one getter for every response: V8 can then reuse one hidden
 * class transition for all of them, where a new getter each time cannot (see `handlerContext` in
 * answer-with-function.ts for what per-request getters cost).
 */
const HEADERS_SENT: PropertyDescriptor = { configurable: true, get: headersAreSent };

function headersAreSent(): boolean {
  return true;
}

/** Keys a {@link ListAnswerMemo} keeps (oldest forgotten first): a few methods times a few scope sets. */
const LIST_ANSWER_MEMO_KEYS = 32;
/** Largest answer a {@link ListAnswerMemo} keeps, in bytes. */
const LIST_ANSWER_MEMO_MAX_BYTES = 1_048_576;
/** Most bytes a {@link ListAnswerMemo} holds in all (answers and their filtered forms); oldest forgotten first. */
const LIST_ANSWER_MEMO_TOTAL_BYTES = 8 * 1_048_576;

/** Stores one answer in a memo, keeping it within {@link LIST_ANSWER_MEMO_KEYS} and {@link LIST_ANSWER_MEMO_TOTAL_BYTES}. */
function remember(store: ListAnswerMemo, key: string, rest: Buffer, filteredRest: Buffer | undefined): void {
  store.delete(key);
  store.set(key, { rest, filteredRest });
  let total = 0;
  for (const entry of store.values()) total += entry.rest.length + (entry.filteredRest?.length ?? 0);
  for (const [oldest, entry] of store) {
    if (store.size <= LIST_ANSWER_MEMO_KEYS && total <= LIST_ANSWER_MEMO_TOTAL_BYTES) break;
    total -= entry.rest.length + (entry.filteredRest?.length ?? 0);
    store.delete(oldest);
  }
}

const DEFAULT_MAX_BUFFERED_BYTES = 16 * 1024 * 1024;

/** The methods patched on a response, in the reverse of the order `Object.assign` below adds them. */
const PATCHED_NEWEST_FIRST = ['flushHeaders', 'end', 'write', 'writeHead'] as const;

type Mode = 'undecided' | 'pass' | 'json' | 'scan' | 'sse' | 'closed';

/** Bytes kept from the end of one chunk to find a key cut in two by the next: the longest marker, less one. */
const SCAN_OVERLAP = '"resourceTemplates"'.length - 1;
type HeadersArg = OutgoingHttpHeaders | OutgoingHttpHeader[] | undefined;
type Callback = (error?: Error | null) => void;
type Chunk = string | Uint8Array;

/**
 * Filters the answer an inner MCP handler writes to `res` for one request, so the caller sees only what it may
 * use: every JSON-RPC response in it goes through `filter`, which decides by the shape of the result, not by its
 * id (see `response-filter.ts`): an upstream may carry the list answer to one request on the exchange of another.
 * Call it before handing `res` to the handler; it patches `res.writeHead`, `write`, `end` and
 * `flushHeaders` on this one response and undoes the patch as soon as filtering is no longer needed.
 *
 * The answer to a list or read request is always parsed; the answer to any other request only when its text could
 * hold a list result (`mayNeedFiltering`, a search for the keys), so a tool call's answer passes without a parse.
 *
 * What it does by `Content-Type` (read from the `writeHead` headers or from `res.setHeader`):
 * - `application/json`, answering a list or read request: holds the body back (up to `maxBufferedBytes`), parses
 *   it, passes every JSON-RPC response in it through `filter`, and writes the result with a recomputed
 *   `Content-Length` (a stale `ETag` is dropped). Batch arrays are handled element by element. A body that is not
 *   JSON (after a UTF-8 byte order mark, which clients skip) is replaced by a `-32603` error: clients may still
 *   read something in it.
 * - `application/json`, answering anything else: the head is held until the first bytes of the body. When they
 *   hold no key of a list they go on at once, head and all, and so does every later chunk, each searched as it
 *   passes (with an overlap, for a key cut in two); a key found then cuts the answer off (the connection is
 *   destroyed: bytes sent cannot be taken back, and a cut body is an error to every client). When the first
 *   bytes hold a key, the body is held and filtered as a list answer's is. So the common answer costs one search
 *   of its bytes and no copy, and `write` returns false while `res` needs to drain.
 * - `text/event-stream`: parses the stream incrementally (MCP Streamable HTTP; WHATWG HTML §9.2 event
 *   stream format: `\n`, `\r\n` or `\r` line ends, multi-line `data:`, `id:`, `event:`, `retry:`, comments)
 *   and rewrites each `message` event whose data the filter changes. Every other event is written on as soon as
 *   its terminating blank line arrives, byte for byte; only the event being assembled is held.
 *   `Content-Length`, if any, is dropped since the length changes.
 * - anything else (or no body): passed through untouched.
 *
 * A JSON or SSE answer with a `Content-Encoding` other than `identity` cannot be read, so it is replaced
 * by a 500 JSON-RPC error: an unfiltered list must never leak (filtering is discovery hygiene, not the
 * access boundary, but a list still reveals what exists).
 *
 * Works with handlers that call `writeHead(status, headers)` then `write`/`end` (the MCP SDK's Streamable
 * HTTP transport, through `@hono/node-server`), with implicit headers (`setHeader` + `end`, Express
 * `res.json`), and with `flushHeaders`. Backpressure is kept: `write` returns false while `res` needs to
 * drain, so `'drain'` arrives as usual.
 *
 * @param request The JSON-RPC message the POST carried (a request, or a notification or client response, whose
 *   answer should have no body but is filtered all the same), or undefined for a GET's event stream.
 * @param filter Maps the matching response to the filtered one (e.g. `guard.filterResponse`).
 */
export function filterListResponse(
  res: ServerResponse,
  request: JsonRpcMessage | undefined,
  filter: (response: JsonRpcMessage) => JsonRpcMessage,
  options: FilterListResponseOptions = {},
): void {
  const requestId: JsonRpcId | null = request !== undefined && 'id' in request && 'method' in request ? request.id : null;
  // A list or read answer is parsed whatever its text; any other only when it could hold a list.
  const always = isFilteredRequest(request);
  const maxBuffered = options.maxBufferedBytes ?? DEFAULT_MAX_BUFFERED_BYTES;

  const own = {
    writeHead: Object.hasOwn(res, 'writeHead'),
    write: Object.hasOwn(res, 'write'),
    end: Object.hasOwn(res, 'end'),
    flushHeaders: Object.hasOwn(res, 'flushHeaders'),
  };
  const original = {
    writeHead: res.writeHead,
    write: res.write,
    end: res.end,
    flushHeaders: res.flushHeaders,
  };
  const realWriteHead = (...args: unknown[]): ServerResponse =>
    (original.writeHead as (...a: unknown[]) => ServerResponse).apply(res, args);
  const realWrite = (chunk: Chunk, cb?: Callback): boolean =>
    (original.write as (c: Chunk, cb?: Callback) => boolean).call(res, chunk, cb);
  const realEnd = (chunk?: Chunk, cb?: () => void): ServerResponse =>
    (original.end as (c?: Chunk, cb?: () => void) => ServerResponse).call(res, chunk as Chunk, cb);

  let mode: Mode = 'undecided';
  // JSON: the head and body held back until `end`.
  let heldStatus = 200;
  let heldMessage: string | undefined;
  let heldHeaders: HeadersArg;
  let heldChunks: Buffer[] = [];
  let heldBytes = 0;
  let heldEndCallbacks: Array<() => void> = [];
  // SSE: the project's one event-stream parser; every event is offered to the filter.
  let events: EventStreamRewriter | undefined;
  const rewriteData = (data: string): string | undefined => {
    const out = filterJsonText(data, filter, always);
    if (out !== UNFILTERABLE) return out;
    // Data no client parses as JSON, holding no key of a list (`data: hello` in a list answer's stream), hides none.
    return mayNeedFiltering(data) ? JSON.stringify(unfilterableAnswer(requestId)) : undefined;
  };
  // JSON: whether the body must be held and parsed (a list or read answer, or first bytes holding a key).
  let mustHold = always;
  // 'scan': the end of the last chunk passed on, in which a key cut in two may begin.
  let scanTail: Buffer | undefined;

  function restore(): void {
    // Undone newest first: V8 then rolls the response's hidden class back, where deleting in any other order
    // leaves it a slow dictionary object that every later property access on it pays for.
    delete (res as unknown as Record<string, unknown>).headersSent;
    for (const name of PATCHED_NEWEST_FIRST) {
      if (own[name]) (res as unknown as Record<string, unknown>)[name] = original[name];
      else delete (res as unknown as Record<string, unknown>)[name];
    }
  }


  function decide(status: number, statusMessage: string | undefined, headers: HeadersArg): void {
    const type = mediaType(headerValue(headers, 'content-type') ?? res.getHeader('content-type'));
    const encoding = String(headerValue(headers, 'content-encoding') ?? res.getHeader('content-encoding') ?? 'identity')
      .trim()
      .toLowerCase();
    if (type !== JSON_MEDIA_TYPE && type !== EVENT_STREAM_MEDIA_TYPE) {
      mode = 'pass';
      restore();
      realWriteHead(...headArgs(status, statusMessage, headers));
      return;
    }
    if (encoding !== 'identity') {
      failClosed();
      return;
    }
    if (type === JSON_MEDIA_TYPE) {
      mode = 'json';
      heldStatus = status;
      heldMessage = statusMessage;
      heldHeaders = headers;
      res.statusCode = status;
      // Code that checks `headersSent` after writing the head (error handlers) must see it as sent.
      Object.defineProperty(res, 'headersSent', HEADERS_SENT);
      return;
    }
    mode = 'sse';
    events = createEventStreamRewriter(rewriteData, { maxEventBytes: maxBuffered });
    res.removeHeader('content-length');
    realWriteHead(...headArgs(status, statusMessage, withoutHeaders(headers, ['content-length'])));
  }

  function ensureHead(): void {
    if (mode === 'undecided') decide(res.statusCode, res.statusMessage || undefined, undefined);
  }

  /** Replaces whatever the handler wrote with a JSON-RPC error, since an unfilterable list must not leak. */
  function failClosed(): void {
    const error = unfilterableAnswer(requestId);
    const restoredMode = mode;
    mode = 'closed';
    heldChunks = [];
    if (restoredMode === 'sse') {
      realEnd(`event: message\ndata: ${JSON.stringify(error)}\n\n`);
      return;
    }
    delete (res as unknown as Record<string, unknown>).headersSent;
    for (const name of ['content-length', 'content-encoding', 'content-type', 'etag']) res.removeHeader(name);
    const body = JSON.stringify(error);
    realWriteHead(500, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) });
    realEnd(body);
  }

  /** Whether the held chunks are `prefix` followed by `rest`, compared in place. */
  function heldEquals(prefix: Buffer, rest: Buffer): boolean {
    if (heldBytes !== prefix.length + rest.length) return false;
    let at = 0;
    for (const chunk of heldChunks) {
      let i = 0;
      if (at < prefix.length) {
        const n = Math.min(prefix.length - at, chunk.length);
        if (chunk.compare(prefix, at, at + n, 0, n) !== 0) return false;
        i = n;
        at += n;
      }
      if (i < chunk.length) {
        const offset = at - prefix.length;
        if (chunk.compare(rest, offset, offset + chunk.length - i, i) !== 0) return false;
        at += chunk.length - i;
      }
    }
    return true;
  }

  /** The answer to write and whether it was rewritten, reusing or filling `options.memo`. */
  function filterHeld(): { out: Buffer | readonly Buffer[]; changed: boolean } | typeof UNFILTERABLE {
    const memo = options.memo;
    const prefixText = memo === undefined ? undefined : `{"jsonrpc":"2.0","id":${JSON.stringify(requestId)},"result":`;
    const prefix = prefixText === undefined ? undefined : Buffer.from(prefixText);
    const seen = memo?.store.get(memo.key);
    // Only a rewritten answer is reused: one the filter left alone is forwarded as written anyway. Kept as
    // bytes, so a hit costs two copies and no parse, filter, serialisation or UTF-8 encoding.
    if (prefix !== undefined && seen?.filteredRest !== undefined && heldEquals(prefix, seen.rest)) {
      heldChunks = [];
      // Written as two buffers in one corked write: no copy of a large answer, no allocation to collect.
      return { out: [prefix, seen.filteredRest], changed: true };
    }
    const body = heldChunks.length === 1 ? heldChunks[0]! : Buffer.concat(heldChunks, heldBytes);
    heldChunks = [];
    // An empty body reveals nothing; the answer to a call that could hold no list is never decoded or parsed.
    if (body.length === 0 || (!always && !mayNeedFiltering(body))) return { out: body, changed: false };
    // Nothing rewritten: forwarded as written. Not JSON: nothing is forwarded (fail closed).
    const filteredText = filterJsonText(body.toString('utf8'), filter, always);
    if (filteredText === UNFILTERABLE) return UNFILTERABLE;
    // Encoded once: the same bytes are written and, on a miss, kept (`body` is a fresh copy nothing changes).
    const filtered = filteredText === undefined ? undefined : Buffer.from(filteredText);
    const canonical = prefix !== undefined && body.length > prefix.length && body.compare(prefix, 0, prefix.length, 0, prefix.length) === 0;
    if (memo !== undefined && canonical && body.length <= LIST_ANSWER_MEMO_MAX_BYTES && (filteredText === undefined || filteredText.startsWith(prefixText!))) {
      remember(memo.store, memo.key, body.subarray(prefix.length), filtered?.subarray(prefix.length));
    }
    return filtered === undefined ? { out: body, changed: false } : { out: filtered, changed: true };
  }

  function finishJson(): void {
    const filtered = filterHeld();
    if (filtered === UNFILTERABLE) {
      failClosed();
      return;
    }
    const { out, changed } = filtered;
    const drop = changed ? ['content-length', 'etag'] : ['content-length'];
    for (const name of drop) res.removeHeader(name);
    const headers = withoutHeaders(heldHeaders, drop) ?? {};
    const parts = Buffer.isBuffer(out) ? [out] : out;
    let length = 0;
    for (const part of parts) length += part.length;
    restore();
    realWriteHead(...headArgs(heldStatus, heldMessage, appendHeader(headers, 'Content-Length', String(length))));
    const callbacks = heldEndCallbacks;
    heldEndCallbacks = [];
    res.cork();
    for (let i = 0; i < parts.length - 1; i++) realWrite(parts[i]!);
    realEnd(parts[parts.length - 1], () => {
      for (const cb of callbacks) cb();
    });
    res.uncork();
  }

  /** Feeds bytes to the event-stream parser and writes what it completed; only the event being assembled is held. */
  function feedSse(buf: Buffer, cb?: Callback): boolean {
    const pieces = events!.push(buf);
    if (pieces === undefined) {
      // An event too large to hold: passed on if it could hold no list and answers no list or read request, and
      // the rest of the stream searched as it passes; else it must not be passed on unchecked.
      const held = Buffer.concat(events!.giveUp());
      if (!always && !mayNeedFiltering(held)) {
        mode = 'scan';
        scanTail = held.subarray(Math.max(0, held.length - SCAN_OVERLAP));
        return realWrite(held, cb);
      }
      failClosed();
      if (cb) process.nextTick(cb);
      return true;
    }
    for (const piece of pieces) realWrite(piece);
    if (events!.done) {
      // The response is written: hand the rest of the stream to `res` directly.
      mode = 'pass';
      restore();
    }
    if (cb) process.nextTick(cb);
    return !res.writableNeedDrain;
  }

  function patchedWriteHead(this: unknown, statusCode: number, ...rest: unknown[]): ServerResponse {
    const statusMessage = typeof rest[0] === 'string' ? rest[0] : undefined;
    const headers = (typeof rest[0] === 'string' ? rest[1] : rest[0]) as HeadersArg;
    if (mode === 'json') {
      // A second head before the body was sent (an error path): the newest one wins.
      heldStatus = statusCode;
      heldMessage = statusMessage;
      heldHeaders = headers;
      heldChunks = [];
      heldBytes = 0;
      return res;
    }
    if (mode === 'closed' || mode === 'scan') return res;
    decide(statusCode, statusMessage, headers);
    return res;
  }

  function patchedWrite(this: unknown, chunk: Chunk, encodingOrCb?: BufferEncoding | Callback, maybeCb?: Callback): boolean {
    const cb = typeof encodingOrCb === 'function' ? encodingOrCb : maybeCb;
    const encoding = typeof encodingOrCb === 'string' ? encodingOrCb : undefined;
    ensureHead();
    if (mode === 'pass') return res.write(chunk, encoding ?? 'utf8', cb);
    return writeBytes(toBuffer(chunk, encoding), cb);
  }

  function writeBytes(buf: Buffer, cb?: Callback): boolean {
    if (mode === 'closed') {
      if (cb) process.nextTick(cb);
      return true;
    }
    if (mode === 'sse') return feedSse(buf, cb);
    if (mode === 'scan') return scanOn(buf, cb);
    if (!mustHold && heldBytes === 0) {
      if (!mayNeedFiltering(buf)) return passOn(buf, cb);
      mustHold = true;
    }
    heldChunks.push(buf);
    heldBytes += buf.length;
    // Held, so nothing was written to `res`: it needs no drain unless something else wrote to it.
    if (heldBytes > maxBuffered) failClosed();
    if (cb) process.nextTick(cb);
    return !res.writableNeedDrain;
  }

  /** Writes the held head and the first bytes of a JSON answer that could hold no list; what follows is searched as it passes. */
  function passOn(buf: Buffer, cb?: Callback): boolean {
    mode = 'scan';
    scanTail = buf.subarray(Math.max(0, buf.length - SCAN_OVERLAP));
    delete (res as unknown as Record<string, unknown>).headersSent;
    realWriteHead(...headArgs(heldStatus, heldMessage, heldHeaders));
    return realWrite(buf, cb);
  }

  /** Passes on a chunk of an answer being passed on, unless it could hold a list: then the answer is cut off. */
  function scanOn(buf: Buffer, cb?: Callback): boolean {
    const joint = Buffer.concat([scanTail!, buf.subarray(0, SCAN_OVERLAP)]);
    if (mayNeedFiltering(joint) || mayNeedFiltering(buf)) {
      // Bytes already sent cannot be taken back: a cut body is an error to every client, never a complete list.
      mode = 'closed';
      res.destroy();
      if (cb) process.nextTick(cb);
      return true;
    }
    scanTail = buf.length >= SCAN_OVERLAP ? buf.subarray(buf.length - SCAN_OVERLAP) : Buffer.concat([scanTail!, buf]).subarray(-SCAN_OVERLAP);
    return realWrite(buf, cb);
  }

  function patchedEnd(this: unknown, ...args: unknown[]): ServerResponse {
    const cb = typeof args[args.length - 1] === 'function' ? (args.pop() as () => void) : undefined;
    const chunk = args[0] as Chunk | undefined | null;
    const encoding = typeof args[1] === 'string' ? (args[1] as BufferEncoding) : undefined;
    ensureHead();
    if (mode === 'pass') return chunk == null ? res.end(cb) : res.end(chunk, encoding ?? 'utf8', cb);
    if (mode === 'json' && !mustHold && heldBytes === 0 && chunk != null && !mayNeedFiltering(typeof chunk === 'string' && encoding === undefined ? chunk : toBuffer(chunk, encoding))) {
      // The whole answer in one chunk that could hold no list (a tool call's, most often): written as it came.
      restore();
      res.writeHead(...(headArgs(heldStatus, heldMessage, heldHeaders) as [number]));
      return res.end(chunk, encoding ?? 'utf8', cb);
    }
    if (chunk != null) writeBytes(toBuffer(chunk, encoding));
    // Writing the last chunk may have completed the match and handed the stream back to `res`.
    if ((mode as Mode) === 'pass') return res.end(cb);
    if (mode === 'closed') {
      if (cb) process.nextTick(cb);
      return res;
    }
    if (mode === 'scan') {
      restore();
      realEnd(undefined, cb);
      return res;
    }
    if (mode === 'json') {
      if (cb) heldEndCallbacks.push(cb);
      finishJson();
      return res;
    }
    if (mode === 'sse') {
      // An event cut off by the end of the stream: still offered to the filter.
      for (const piece of events!.end()) realWrite(piece);
      restore();
      realEnd(undefined, cb);
    }
    return res;
  }

  function patchedFlushHeaders(this: unknown): void {
    ensureHead();
    // A held JSON head must not go out early: its Content-Length is not known yet.
    if (mode === 'sse' || mode === 'pass') (original.flushHeaders as () => void).call(res);
  }

  // `statusCode` and `statusMessage` start on the prototype and become the response's own when the head is
  // written: made its own before the patch, so that the patch stays the newest properties and `restore` can roll
  // them back. (An unset `statusMessage` stays unset: `writeHead` fills in the standard one as before.)
  if (!Object.hasOwn(res, 'statusCode')) res.statusCode = res.statusCode;
  if (!Object.hasOwn(res, 'statusMessage')) res.statusMessage = res.statusMessage;
  Object.assign(res, {
    writeHead: patchedWriteHead,
    write: patchedWrite,
    end: patchedEnd,
    flushHeaders: patchedFlushHeaders,
  });
}

/** A header from `writeHead`'s headers argument (object, or flat `[name, value, …]` array). */
function headerValue(headers: HeadersArg, name: string): OutgoingHttpHeader | undefined {
  if (headers === undefined || headers === null) return undefined;
  if (Array.isArray(headers)) {
    for (let i = 0; i + 1 < headers.length; i += 2) {
      if (String(headers[i]).toLowerCase() === name) return headers[i + 1];
    }
    return undefined;
  }
  for (const key of Object.keys(headers)) {
    if (key.toLowerCase() === name) return headers[key];
  }
  return undefined;
}

/** A copy of the headers argument without the named headers (lowercase names). */
function withoutHeaders(headers: HeadersArg, names: readonly string[]): HeadersArg {
  if (headers === undefined || headers === null) return headers;
  if (Array.isArray(headers)) {
    const out: OutgoingHttpHeader[] = [];
    for (let i = 0; i + 1 < headers.length; i += 2) {
      if (!names.includes(String(headers[i]).toLowerCase())) out.push(headers[i]!, headers[i + 1]!);
    }
    return out;
  }
  const out: OutgoingHttpHeaders = {};
  for (const key of Object.keys(headers)) {
    if (!names.includes(key.toLowerCase())) out[key] = headers[key];
  }
  return out;
}

function appendHeader(headers: OutgoingHttpHeaders | OutgoingHttpHeader[], name: string, value: string): HeadersArg {
  return Array.isArray(headers) ? [...headers, name, value] : { ...headers, [name]: value };
}

function headArgs(status: number, statusMessage: string | undefined, headers: HeadersArg): unknown[] {
  const args: unknown[] = [status];
  if (statusMessage !== undefined) args.push(statusMessage);
  if (headers !== undefined) args.push(headers);
  return args;
}

function toBuffer(chunk: Chunk, encoding: BufferEncoding | undefined): Buffer {
  if (typeof chunk === 'string') return Buffer.from(chunk, encoding ?? 'utf8');
  return Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
}

