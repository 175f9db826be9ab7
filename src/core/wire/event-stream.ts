/**
 * The project's one Server-Sent Events parser (WHATWG HTML §9.2 event stream format: `\n`, `\r\n` or `\r`
 * line ends, multi-line `data:`, `id:`, `event:`, `retry:`, comments), incremental over byte chunks.
 * See {@link createEventStreamRewriter}.
 */

/** Options of {@link createEventStreamRewriter}. */
export interface EventStreamRewriterOptions {
  /** Most bytes held for the event being assembled; past it `push` returns `undefined`. */
  maxEventBytes: number;
  /**
   * Stop after the first rewritten event and pass the rest of the stream through unparsed (an answer to
   * one request has one response). Default false: every event is offered to `rewrite`.
   */
  once?: boolean;
}

/** An incremental rewriter of one event stream. */
export interface EventStreamRewriter {
  /**
   * Feeds bytes; returns what to write now, in order: complete events byte for byte, or rewritten. Only the
   * event being assembled is held back. `undefined` when that event grew past `maxEventBytes`: it cannot be
   * checked, so the stream must be ended (fail closed).
   */
  push(chunk: Uint8Array): Buffer[] | undefined;
  /**
   * The stream ended: an event still unterminated is offered to `rewrite` like any other and returned
   * still unterminated (clients discard an incomplete event, but a list in it must not pass unfiltered).
   */
  end(): Buffer[];
  /**
   * Stops parsing after `push` returned `undefined`, for a caller that checks the rest another way: returns the
   * bytes that push did not return (the events it completed, then the event being assembled), in order; every
   * later `push` returns its bytes unparsed.
   */
  giveUp(): Buffer[];
  /** True once a `once` rewriter has rewritten its event: the rest passes unparsed, and may bypass it. */
  readonly done: boolean;
}

const LF = 0x0a;
const CR = 0x0d;
/** A UTF-8 byte order mark, which a stream may start with and every SSE parser skips (WHATWG HTML §9.2.5). */
const BOM = Buffer.from([0xef, 0xbb, 0xbf]);

/**
 * Creates a rewriter for one event stream. For each complete `message` event (the default type) that has
 * data, `rewrite` gets the data (multi-line data joined with `\n`) and returns the replacement data, which
 * must be one line (JSON.stringify output is), or `undefined` to keep the event byte for byte. A rewritten
 * event keeps its other fields (`id`, `event`, `retry`, comments) in order, with `\n` line ends.
 *
 * @example
 * const rewriter = createEventStreamRewriter((data) => data.includes('secret') ? '{}' : undefined, { maxEventBytes: 1 << 20 });
 * for (const piece of rewriter.push(chunk) ?? []) res.write(piece);
 */
export function createEventStreamRewriter(rewrite: (data: string) => string | undefined, options: EventStreamRewriterOptions): EventStreamRewriter {
  return new IncrementalEventStreamRewriter(rewrite, options.maxEventBytes, options.once ?? false);
}

/** {@link EventStreamRewriter} over byte chunks: a byte order mark at the start, then events split at blank lines. */
class IncrementalEventStreamRewriter implements EventStreamRewriter {
  /** The bytes of the event being assembled, and their count. */
  private partial: Buffer[] = [];
  private partialBytes = 0;
  /** Whether the line being read is empty so far (a line end then ends the event). */
  private lineEmpty = true;
  /** Whether the last byte read was `\r`, so that a `\n` after it ends no second line. */
  private previousWasCr = false;
  /** Whether the last event ended with a `\r` at the end of a chunk, whose `\n` may open the next chunk. */
  private eventEndedOnCr = false;
  /** Whether the last event was rewritten (its line ends are then `\n`, so such a `\n` is not passed on). */
  private lastRewritten = false;
  private stopped = false;
  /** What the `push` that overflowed had completed, for `giveUp`. */
  private overflow: Buffer[] = [];
  /** The first bytes, held until it is known whether they are a byte order mark (it may be split across chunks). */
  private head: Buffer | undefined = Buffer.alloc(0);

  constructor(
    private readonly rewrite: (data: string) => string | undefined,
    private readonly maxEventBytes: number,
    private readonly once: boolean,
  ) {}

  get done(): boolean {
    return this.stopped;
  }

  push(chunk: Uint8Array): Buffer[] | undefined {
    const buf = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    const head = this.head;
    if (head === undefined) return this.scan(buf);
    // Skipped by clients, so it must be skipped here too: else the first line is no `data` field to this
    // parser but is one to the client, and the event would pass unfiltered. The mark itself passes on.
    const start = head.length > 0 ? Buffer.concat([head, buf]) : buf;
    const n = Math.min(start.length, BOM.length);
    if (start.compare(BOM, 0, n, 0, n) !== 0) {
      this.head = undefined;
      return this.scan(start);
    }
    if (start.length < BOM.length) {
      this.head = Buffer.from(start);
      return [];
    }
    this.head = undefined;
    const out = this.scan(start.subarray(BOM.length));
    if (out === undefined) this.overflow.unshift(start.subarray(0, BOM.length));
    return out === undefined ? undefined : [start.subarray(0, BOM.length), ...out];
  }

  giveUp(): Buffer[] {
    const out = [...this.overflow, ...this.partial];
    this.overflow = [];
    this.partial = [];
    this.partialBytes = 0;
    this.stopped = true;
    return out;
  }

  end(): Buffer[] {
    if (this.head !== undefined && this.head.length > 0) return [this.head];
    if (this.stopped || this.partialBytes === 0) return [];
    const event = Buffer.concat(this.partial, this.partialBytes);
    this.partial = [];
    this.partialBytes = 0;
    const out: Buffer[] = [];
    this.emit(event, out);
    // A cut-off event stays cut off: rewritten if need be, but never completed into one clients dispatch.
    if (this.lastRewritten) out[out.length - 1] = out[out.length - 1]!.subarray(0, -1);
    return out;
  }

  /** Offers one complete event to `rewrite` and adds it, as it came or rewritten, to `out`. */
  private emit(event: Buffer, out: Buffer[]): void {
    const replaced = rewriteEvent(event, this.rewrite);
    this.lastRewritten = replaced !== undefined;
    if (replaced === undefined) {
      out.push(event);
      return;
    }
    out.push(Buffer.from(replaced));
    if (this.once) this.stopped = true;
  }

  /** The events `buf` completes (with what was held before it); keeps the rest. Undefined past `maxEventBytes`. */
  private scan(buf: Buffer): Buffer[] | undefined {
    if (this.stopped) return buf.length > 0 ? [buf] : [];
    const out: Buffer[] = [];
    let i = 0;
    if (this.eventEndedOnCr) {
      // The previous event ended with a `\r` at the end of a chunk; a `\n` here completes that `\r\n`.
      this.eventEndedOnCr = false;
      if (buf.length > 0 && buf[0] === LF) {
        this.previousWasCr = false;
        i = 1;
        if (!this.lastRewritten) out.push(buf.subarray(0, 1));
      }
    }
    let start = i;
    const n = buf.length;
    // Kept in locals through the loop over every byte, written back before anything else reads them.
    let lineEmpty = this.lineEmpty;
    let previousWasCr = this.previousWasCr;
    for (; i < n; i++) {
      const b = buf[i]!;
      if (b === LF && previousWasCr) {
        previousWasCr = false;
        continue;
      }
      previousWasCr = b === CR;
      if (b !== CR && b !== LF) {
        lineEmpty = false;
        continue;
      }
      if (!lineEmpty) {
        lineEmpty = true;
        continue;
      }
      // A blank line: the event is complete.
      let end = i + 1;
      if (b === CR) {
        if (end < n) {
          if (buf[end] === LF) end++;
          previousWasCr = false;
        } else {
          this.eventEndedOnCr = true;
        }
      }
      this.completeEvent(buf.subarray(start, end), out);
      start = end;
      i = end - 1;
      if (this.stopped) {
        this.lineEmpty = lineEmpty;
        this.previousWasCr = previousWasCr;
        if (end < n) out.push(buf.subarray(end));
        return out;
      }
    }
    this.lineEmpty = lineEmpty;
    this.previousWasCr = previousWasCr;
    return start < n ? this.hold(buf.subarray(start), out) : out;
  }

  /** The last piece of an event arrived: the event, joined with what was held of it, is emitted. */
  private completeEvent(piece: Buffer, out: Buffer[]): void {
    const event = this.partialBytes > 0 ? Buffer.concat([...this.partial, piece], this.partialBytes + piece.length) : piece;
    this.partial = [];
    this.partialBytes = 0;
    this.emit(event, out);
  }

  /** Holds the start of an event still arriving: `out`, or undefined when the event outgrew `maxEventBytes`. */
  private hold(rest: Buffer, out: Buffer[]): Buffer[] | undefined {
    this.partial.push(rest);
    this.partialBytes += rest.length;
    if (this.partialBytes > this.maxEventBytes) {
      this.overflow = out;
      return undefined;
    }
    return out;
  }
}

/** The rewritten event, or undefined when it is no `message` event with data or `rewrite` keeps it. */
function rewriteEvent(bytes: Buffer, rewrite: (data: string) => string | undefined): string | undefined {
  const lines = bytes.toString('utf8').split(/\r\n|\r|\n/);
  let type = '';
  const data: string[] = [];
  for (const line of lines) {
    if (line === '' || line.startsWith(':')) continue;
    const { field, value } = splitField(line);
    if (field === 'event') type = value;
    else if (field === 'data') data.push(value);
  }
  // Clients act only on `message` events (the default type); others carry no JSON-RPC message.
  if (data.length === 0 || (type !== '' && type !== 'message')) return undefined;
  const replacement = rewrite(data.join('\n'));
  if (replacement === undefined) return undefined;
  // Keep the other fields in order; one `data` line replaces them all.
  const out: string[] = [];
  let dataWritten = false;
  for (const line of lines) {
    if (line === '') continue;
    if (!line.startsWith(':') && splitField(line).field === 'data') {
      if (!dataWritten) out.push(`data: ${replacement}`);
      dataWritten = true;
      continue;
    }
    out.push(line);
  }
  return `${out.join('\n')}\n\n`;
}

/** Splits an SSE line into field name and value (one leading space of the value is dropped). */
function splitField(line: string): { field: string; value: string } {
  const colon = line.indexOf(':');
  if (colon === -1) return { field: line, value: '' };
  const value = line.charCodeAt(colon + 1) === 0x20 ? line.slice(colon + 2) : line.slice(colon + 1);
  return { field: line.slice(0, colon), value };
}

/**
 * The data of every `message` event of a complete event stream, in order (multi-line data joined with `\n`), by
 * the same parser: for reading an answer already held whole (a listing, a client), where rewriting is not needed.
 * An event left unterminated at the end counts, as {@link EventStreamRewriter.end} offers it.
 *
 * @example
 * eventStreamData('event: message\ndata: {"jsonrpc":"2.0","id":1,"result":{}}\n\n').map((d) => JSON.parse(d));
 */
export function eventStreamData(stream: string | Uint8Array): string[] {
  const bytes = typeof stream === 'string' ? Buffer.from(stream, 'utf8') : stream;
  const data: string[] = [];
  // The whole stream is in hand (and bounded by whoever read it), so no event can outgrow it.
  const reader = createEventStreamRewriter((event) => void data.push(event), { maxEventBytes: bytes.length + 1 });
  reader.push(bytes);
  reader.end();
  return data;
}
