/**
 * The written-answer filter: list filtering for the middleware and the gateway alike. The request pipeline
 * (`request-pipeline.ts`) calls {@link filterListResponse} on the response of every POST (and GET stream) it hands to
 * a handler, before the handler (the MCP server, or the gateway's upstream) writes to it; the rules of what is
 * rewritten live in `core/policy/response-filter.ts`.
 *
 * - this module: the interception of the response (`writeHead`, `write`, `end`, `flushHeaders`) and the
 *   state machine that decides, by `Content-Type`, what happens to the answer;
 * - `filter-written-json.ts`: a JSON answer held back and filtered whole (with `list-answer-memo.ts`);
 * - `filter-written-event-stream.ts`: an event-stream answer filtered event by event;
 * - `written-head.ts`: the head's headers argument.
 */
import type { ServerResponse } from 'node:http';
import type { EventStreamRewriter } from '../core/wire/event-stream.js';
import { messageEventFrame } from '../core/wire/event-stream-frame.js';
import type { JsonRpcId, JsonRpcMessage } from '../core/wire/jsonrpc.js';
import { EVENT_STREAM_MEDIA_TYPE, JSON_MEDIA_TYPE, mediaType } from './media-type.js';
import { answerRewrites, UNFILTERABLE, UNFILTERABLE_STATUS, unfilterableAnswer, type AnswerRewrites } from '../core/policy/response-filter.js';
import { createAnswerEventRewriter } from './filter-written-event-stream.js';
import { HeldJsonAnswer, type ListAnswerMemoEntry } from './filter-written-json.js';
import type { ListAnswerMemo } from './list-answer-memo.js';
import { appendHeader, headArgs, headerValue, toBuffer, withoutHeaders, type Chunk, type HeadersArg, type WriteCallback } from './written-head.js';

export type { ListAnswerMemo } from './list-answer-memo.js';

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
   * everything the filter depends on (see `CompiledPolicy.listFilterKey`). `part`, when given, is a part of it that
   * may change while the answer is awaited (a handler's list filter, see `HandlerListFilter.key`), and `partKey` what
   * it was when `key` was made: the memo is used, and the answer kept, only while `part.key()` still returns it.
   */
  memo?: { key: string; store: ListAnswerMemo; part?: { key(): string }; partKey?: string };
  /**
   * Which answers `filter` rewrites: those of its lists mode (`answerRewrites(guard.options.lists)`). With every
   * list shown (`all`), a list answer is passed on as a tool call's is: never held, parsed or re-serialised.
   * Default: lists filtered.
   */
  rewrites?: AnswerRewrites;
}

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
 * by a 502 JSON-RPC error: an unfiltered list must never leak (filtering is discovery hygiene, not the
 * access boundary, but a list still reveals what exists). Every answer replaced before its head was sent (not
 * JSON, compressed, over `maxBufferedBytes`) gets 502 with `unfilterableAnswer`: the server's answer is at fault.
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
  new WrittenResponseFilter(res, request, filter, options).install();
}

/**
 * Responses whose answer was replaced because it could not be filtered, with the status the client got: 502, or
 * undefined where an event stream had started (its last event then says why). Weak: an entry goes with its response.
 */
const REPLACED = new WeakMap<ServerResponse, number | undefined>();

/**
 * Whether the answer written to `res` was replaced because it could not be filtered (not JSON, compressed, or larger
 * than `maxBufferedBytes`), known once the handler has ended it: then the status the client got (502, absent when an
 * event stream had started), for the handler to name the failure in its logs and metrics (the gateway's
 * `upstream_unfilterable`: the fault is its server's answer); undefined when it was not.
 *
 * @example
 * res.end();
 * const replaced = unfilterableReplacement(res); // { status: 502 } after a compressed list answer
 */
export function unfilterableReplacement(res: ServerResponse): { status?: number } | undefined {
  if (!REPLACED.has(res)) return undefined;
  const status = REPLACED.get(res);
  return status === undefined ? {} : { status };
}

/**
 * `headersSent` while a JSON answer is held, with one getter for every response: V8 can then reuse one hidden
 * class transition for all of them, where a new getter each time cannot (see `handlerContext` in
 * answer-with-function.ts for what per-request getters cost).
 */
const HEADERS_SENT: PropertyDescriptor = { configurable: true, get: headersAreSent };

function headersAreSent(): boolean {
  return true;
}

const DEFAULT_MAX_BUFFERED_BYTES = 16 * 1024 * 1024;

/** The methods patched on a response, in the reverse of the order {@link WrittenResponseFilter.install} adds them. */
const PATCHED_NEWEST_FIRST = ['flushHeaders', 'end', 'write', 'writeHead'] as const;
type PatchedName = (typeof PATCHED_NEWEST_FIRST)[number];

/**
 * Where the answer stands:
 * - `undecided`: no head yet;
 * - `pass`: not filtered (another media type, or the filtered part is written): the patch is undone;
 * - `json`: a JSON answer, its head (and, once it may hold a list, its body) held in {@link HeldJsonAnswer};
 * - `scan`: an answer passed on as it comes, each chunk searched for a list key (found: the answer is cut off);
 * - `sse`: an event stream, filtered event by event;
 * - `closed`: replaced by an error or cut off; whatever the handler writes next is dropped.
 */
type Mode = 'undecided' | 'pass' | 'json' | 'scan' | 'sse' | 'closed';

/** Bytes kept from the end of one chunk to find a key cut in two by the next: the longest marker, less one. */
const SCAN_OVERLAP = '"resourceTemplates"'.length - 1;

/** Where a patched response keeps its filter, so that one set of patched methods serves every response. */
const FILTER = Symbol('written response filter');
type FilteredResponse = ServerResponse & { [FILTER]?: WrittenResponseFilter };

/**
 * The methods {@link WrittenResponseFilter.install} puts on a response, made once for every response (no closure per
 * request): each finds the response's filter under {@link FILTER}, the response being `this` as for the methods
 * they stand in for.
 */
const PATCHED_METHODS = {
  writeHead(this: FilteredResponse, statusCode: number, ...rest: unknown[]): ServerResponse {
    return this[FILTER]!.onWriteHead(statusCode, rest);
  },
  write(this: FilteredResponse, chunk: Chunk, encodingOrCb?: BufferEncoding | WriteCallback, maybeCb?: WriteCallback): boolean {
    return this[FILTER]!.onWrite(chunk, encodingOrCb, maybeCb);
  },
  end(this: FilteredResponse, ...args: unknown[]): ServerResponse {
    return this[FILTER]!.onEnd(args);
  },
  flushHeaders(this: FilteredResponse): void {
    this[FILTER]!.onFlushHeaders();
  },
};

/** The filter of one written answer: see {@link filterListResponse}. Its state moves through {@link Mode}. */
class WrittenResponseFilter {
  private mode: Mode = 'undecided';
  /** `json`: the held head and body. */
  private held: HeldJsonAnswer | undefined;
  /** `sse`: the project's one event-stream parser; every event is offered to the filter. */
  private events: EventStreamRewriter | undefined;
  /** `json`: whether the body must be held and parsed (a list or read answer, or first bytes holding a key). */
  private mustHold: boolean;
  /** `scan`: the end of the last chunk passed on, in which a key cut in two may begin. */
  private scanTail: Buffer | undefined;
  private readonly requestId: JsonRpcId | null;
  /** A list or read answer is parsed whatever its text; any other only when it could hold a list. */
  private readonly always: boolean;
  /** Which answers the filter rewrites (its lists mode): which are always parsed, and the search made in any other. */
  private readonly rewrites: AnswerRewrites;
  private readonly maxBuffered: number;
  private readonly memo: ListAnswerMemoEntry | undefined;
  /** Which patched methods the response had as its own properties, and the methods themselves, for {@link restore}. */
  private readonly own: Record<PatchedName, boolean>;
  private readonly original: Pick<ServerResponse, PatchedName>;
  /** Whether this filter's patch is the shared methods, finding it under {@link FILTER} (not when another filter's was first). */
  private sharedPatch = false;

  constructor(
    private readonly res: ServerResponse,
    request: JsonRpcMessage | undefined,
    private readonly filter: (response: JsonRpcMessage) => JsonRpcMessage,
    options: FilterListResponseOptions,
  ) {
    this.requestId = request !== undefined && 'id' in request && 'method' in request ? request.id : null;
    this.rewrites = options.rewrites ?? answerRewrites('filtered');
    this.always = this.rewrites.isFilteredRequest(request);
    this.mustHold = this.always;
    this.maxBuffered = options.maxBufferedBytes ?? DEFAULT_MAX_BUFFERED_BYTES;
    this.memo = options.memo;
    this.own = {
      writeHead: Object.hasOwn(res, 'writeHead'),
      write: Object.hasOwn(res, 'write'),
      end: Object.hasOwn(res, 'end'),
      flushHeaders: Object.hasOwn(res, 'flushHeaders'),
    };
    this.original = { writeHead: res.writeHead, write: res.write, end: res.end, flushHeaders: res.flushHeaders };
  }

  /** Patches `res.writeHead`, `write`, `end` and `flushHeaders`; {@link restore} undoes it. */
  install(): void {
    const res = this.res;
    // `statusCode` and `statusMessage` start on the prototype and become the response's own when the head is
    // written: made its own before the patch, so that the patch stays the newest properties and `restore` can roll
    // them back. (An unset `statusMessage` stays unset: `writeHead` fills in the standard one as before.)
    if (!Object.hasOwn(res, 'statusCode')) res.statusCode = res.statusCode;
    if (!Object.hasOwn(res, 'statusMessage')) res.statusMessage = res.statusMessage;
    if (Object.hasOwn(res, FILTER)) {
      // A response filtered twice (an application's filter inside the guard's): the other filter's patch is in
      // place, and the shared methods would reach it rather than this one, so this one gets methods of its own.
      const self = this;
      Object.assign(res, {
        writeHead(statusCode: number, ...rest: unknown[]): ServerResponse {
          return self.onWriteHead(statusCode, rest);
        },
        write(chunk: Chunk, encodingOrCb?: BufferEncoding | WriteCallback, maybeCb?: WriteCallback): boolean {
          return self.onWrite(chunk, encodingOrCb, maybeCb);
        },
        end(...args: unknown[]): ServerResponse {
          return self.onEnd(args);
        },
        flushHeaders(): void {
          self.onFlushHeaders();
        },
      });
      return;
    }
    this.sharedPatch = true;
    (res as FilteredResponse)[FILTER] = this;
    Object.assign(res, PATCHED_METHODS);
  }

  private restore(): void {
    const res = this.res as unknown as Record<string | symbol, unknown>;
    // Undone newest first: V8 then rolls the response's hidden class back, where deleting in any other order
    // leaves it a slow dictionary object that every later property access on it pays for.
    delete res.headersSent;
    for (const name of PATCHED_NEWEST_FIRST) {
      if (this.own[name]) res[name] = this.original[name];
      else delete res[name];
    }
    if (this.sharedPatch) delete res[FILTER];
  }

  private writeHeadNow(status: number, statusMessage: string | undefined, headers: HeadersArg): void {
    // The arguments `headArgs` gives, passed without an array made for them.
    const writeHead = this.original.writeHead as (...a: unknown[]) => ServerResponse;
    if (statusMessage !== undefined) {
      if (headers !== undefined) writeHead.call(this.res, status, statusMessage, headers);
      else writeHead.call(this.res, status, statusMessage);
    } else if (headers !== undefined) writeHead.call(this.res, status, headers);
    else writeHead.call(this.res, status);
  }

  private writeNow(chunk: Chunk, cb?: WriteCallback): boolean {
    return (this.original.write as (c: Chunk, cb?: WriteCallback) => boolean).call(this.res, chunk, cb);
  }

  private endNow(chunk?: Chunk, cb?: () => void): ServerResponse {
    return (this.original.end as (c?: Chunk, cb?: () => void) => ServerResponse).call(this.res, chunk as Chunk, cb);
  }

  /** The head arrives (or is implied by the first bytes): the media type decides the mode. */
  private decide(status: number, statusMessage: string | undefined, headers: HeadersArg): void {
    const res = this.res;
    const type = mediaType(headerValue(headers, 'content-type') ?? res.getHeader('content-type'));
    const encoding = String(headerValue(headers, 'content-encoding') ?? res.getHeader('content-encoding') ?? 'identity')
      .trim()
      .toLowerCase();
    if (type !== JSON_MEDIA_TYPE && type !== EVENT_STREAM_MEDIA_TYPE) {
      this.mode = 'pass';
      this.restore();
      this.writeHeadNow(status, statusMessage, headers);
      return;
    }
    if (encoding !== 'identity') {
      this.failClosed();
      return;
    }
    if (type === JSON_MEDIA_TYPE) {
      this.mode = 'json';
      this.held = new HeldJsonAnswer(status, statusMessage, headers);
      res.statusCode = status;
      // Code that checks `headersSent` after writing the head (error handlers) must see it as sent.
      Object.defineProperty(res, 'headersSent', HEADERS_SENT);
      return;
    }
    this.mode = 'sse';
    this.events = createAnswerEventRewriter(this.filter, this.always, this.requestId, this.maxBuffered, this.rewrites);
    res.removeHeader('content-length');
    this.writeHeadNow(status, statusMessage, withoutHeaders(headers, ['content-length']));
  }

  private ensureHead(): void {
    if (this.mode === 'undecided') this.decide(this.res.statusCode, this.res.statusMessage || undefined, undefined);
  }

  /** Replaces whatever the handler wrote with a JSON-RPC error, since an unfilterable list must not leak. */
  private failClosed(): void {
    const error = unfilterableAnswer(this.requestId);
    const restoredMode = this.mode;
    this.mode = 'closed';
    this.held?.drop();
    const res = this.res;
    REPLACED.set(res, restoredMode === 'sse' ? undefined : UNFILTERABLE_STATUS);
    if (restoredMode === 'sse') {
      this.endNow(messageEventFrame(JSON.stringify(error)));
      return;
    }
    delete (res as unknown as Record<string, unknown>).headersSent;
    for (const name of ['content-length', 'content-encoding', 'content-type', 'etag']) res.removeHeader(name);
    const body = JSON.stringify(error);
    this.writeHeadNow(UNFILTERABLE_STATUS, undefined, { 'Content-Type': JSON_MEDIA_TYPE, 'Content-Length': Buffer.byteLength(body) });
    this.endNow(body);
  }

  /** `end` of a held JSON answer: writes it filtered (or the error that replaces it), with its new length. */
  private finishJson(): void {
    const held = this.held!;
    const filtered = held.filter(this.filter, this.always, this.requestId, this.memo, this.rewrites);
    if (filtered === UNFILTERABLE) {
      this.failClosed();
      return;
    }
    const { out, changed } = filtered;
    const res = this.res;
    const drop = changed ? ['content-length', 'etag'] : ['content-length'];
    for (const name of drop) res.removeHeader(name);
    const headers = withoutHeaders(held.headers, drop) ?? {};
    const parts = Buffer.isBuffer(out) ? [out] : out;
    let length = 0;
    for (const part of parts) length += part.length;
    this.restore();
    this.writeHeadNow(held.status, held.statusMessage, appendHeader(headers, 'Content-Length', String(length)));
    const callback = held.endCallback;
    res.cork();
    for (let i = 0; i < parts.length - 1; i++) this.writeNow(parts[i]!);
    this.endNow(parts[parts.length - 1], callback === undefined ? undefined : () => callback());
    res.uncork();
  }

  /** Feeds bytes to the event-stream parser and writes what it completed; only the event being assembled is held. */
  private feedEventStream(buf: Buffer, cb?: WriteCallback): boolean {
    const events = this.events!;
    const pieces = events.push(buf);
    if (pieces === undefined) {
      // An event too large to hold: passed on if it could hold no list and answers no list or read request, and
      // the rest of the stream searched as it passes; else it must not be passed on unchecked.
      const held = Buffer.concat(events.giveUp());
      if (!this.always && !this.rewrites.mayNeedFiltering(held)) {
        this.mode = 'scan';
        this.scanTail = held.subarray(Math.max(0, held.length - SCAN_OVERLAP));
        return this.writeNow(held, cb);
      }
      this.failClosed();
      if (cb) process.nextTick(cb);
      return true;
    }
    for (const piece of pieces) this.writeNow(piece);
    if (events.done) {
      // The response is written: hand the rest of the stream to `res` directly.
      this.mode = 'pass';
      this.restore();
    }
    if (cb) process.nextTick(cb);
    return !this.res.writableNeedDrain;
  }

  onWriteHead(statusCode: number, rest: unknown[]): ServerResponse {
    const statusMessage = typeof rest[0] === 'string' ? rest[0] : undefined;
    const headers = (typeof rest[0] === 'string' ? rest[1] : rest[0]) as HeadersArg;
    const mode = this.mode;
    if (mode === 'json') this.held!.replaceHead(statusCode, statusMessage, headers);
    else if (mode !== 'closed' && mode !== 'scan') this.decide(statusCode, statusMessage, headers);
    return this.res;
  }

  onWrite(chunk: Chunk, encodingOrCb?: BufferEncoding | WriteCallback, maybeCb?: WriteCallback): boolean {
    const cb = typeof encodingOrCb === 'function' ? encodingOrCb : maybeCb;
    const encoding = typeof encodingOrCb === 'string' ? encodingOrCb : undefined;
    this.ensureHead();
    if (this.mode === 'pass') return this.res.write(chunk, encoding ?? 'utf8', cb);
    return this.writeBytes(toBuffer(chunk, encoding), cb);
  }

  private writeBytes(buf: Buffer, cb?: WriteCallback): boolean {
    const mode = this.mode;
    if (mode === 'closed') {
      if (cb) process.nextTick(cb);
      return true;
    }
    if (mode === 'sse') return this.feedEventStream(buf, cb);
    if (mode === 'scan') return this.scanOn(buf, cb);
    const held = this.held!;
    if (!this.mustHold && held.bytes === 0) {
      if (!this.rewrites.mayNeedFiltering(buf)) return this.passOn(buf, cb);
      this.mustHold = true;
    }
    held.push(buf);
    // Held, so nothing was written to `res`: it needs no drain unless something else wrote to it.
    if (held.bytes > this.maxBuffered) this.failClosed();
    if (cb) process.nextTick(cb);
    return !this.res.writableNeedDrain;
  }

  /** Writes the held head and the first bytes of a JSON answer that could hold no list; what follows is searched as it passes. */
  private passOn(buf: Buffer, cb?: WriteCallback): boolean {
    const held = this.held!;
    this.mode = 'scan';
    this.scanTail = buf.subarray(Math.max(0, buf.length - SCAN_OVERLAP));
    delete (this.res as unknown as Record<string, unknown>).headersSent;
    this.writeHeadNow(held.status, held.statusMessage, held.headers);
    return this.writeNow(buf, cb);
  }

  /** Passes on a chunk of an answer being passed on, unless it could hold a list: then the answer is cut off. */
  private scanOn(buf: Buffer, cb?: WriteCallback): boolean {
    const tail = this.scanTail!;
    const joint = Buffer.concat([tail, buf.subarray(0, SCAN_OVERLAP)]);
    if (this.rewrites.mayNeedFiltering(joint) || this.rewrites.mayNeedFiltering(buf)) {
      // Bytes already sent cannot be taken back: a cut body is an error to every client, never a complete list.
      this.mode = 'closed';
      this.res.destroy();
      if (cb) process.nextTick(cb);
      return true;
    }
    this.scanTail = buf.length >= SCAN_OVERLAP ? buf.subarray(buf.length - SCAN_OVERLAP) : Buffer.concat([tail, buf]).subarray(-SCAN_OVERLAP);
    return this.writeNow(buf, cb);
  }

  onEnd(args: unknown[]): ServerResponse {
    const cb = typeof args[args.length - 1] === 'function' ? (args.pop() as () => void) : undefined;
    const chunk = args[0] as Chunk | undefined | null;
    const encoding = typeof args[1] === 'string' ? (args[1] as BufferEncoding) : undefined;
    const res = this.res;
    this.ensureHead();
    if (this.mode === 'pass') return chunk == null ? res.end(cb) : res.end(chunk, encoding ?? 'utf8', cb);
    if (this.mode === 'json' && chunk != null && this.passesWhole(chunk, encoding)) {
      // The whole answer in one chunk that could hold no list (a tool call's, most often): written as it came.
      const held = this.held!;
      this.restore();
      res.writeHead(...(headArgs(held.status, held.statusMessage, held.headers) as [number]));
      return res.end(chunk, encoding ?? 'utf8', cb);
    }
    if (chunk != null) this.writeBytes(toBuffer(chunk, encoding));
    this.endAfterLastChunk(cb);
    return res;
  }

  /** Whether the last chunk of a JSON answer, with nothing held before it, is the whole answer and could hold no list. */
  private passesWhole(chunk: Chunk, encoding: BufferEncoding | undefined): boolean {
    return !this.mustHold && this.held!.bytes === 0 && !this.rewrites.mayNeedFiltering(typeof chunk === 'string' && encoding === undefined ? chunk : toBuffer(chunk, encoding));
  }

  /** `end`, once its last chunk (if any) went through {@link writeBytes}: finishes the answer as its mode says. */
  private endAfterLastChunk(cb: (() => void) | undefined): void {
    switch (this.mode) {
      case 'pass':
        // Writing the last chunk completed the match and handed the stream back to `res`.
        this.res.end(cb);
        return;
      case 'closed':
        if (cb) process.nextTick(cb);
        return;
      case 'scan':
        this.restore();
        this.endNow(undefined, cb);
        return;
      case 'json':
        this.held!.endCallback = cb;
        this.finishJson();
        return;
      case 'sse':
        // An event cut off by the end of the stream: still offered to the filter.
        for (const piece of this.events!.end()) this.writeNow(piece);
        this.restore();
        this.endNow(undefined, cb);
        return;
    }
  }

  onFlushHeaders(): void {
    this.ensureHead();
    // A held JSON head must not go out early: its Content-Length is not known yet.
    if (this.mode === 'sse' || this.mode === 'pass') (this.original.flushHeaders as () => void).call(this.res);
  }
}
