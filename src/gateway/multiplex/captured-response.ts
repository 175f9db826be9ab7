import { EventEmitter } from 'node:events';
import type { OutgoingHttpHeader, OutgoingHttpHeaders, ServerResponse } from 'node:http';

/**
 * A response an upstream writes into memory instead of onto a socket: how the server set asks one of its servers
 * something for itself (a list page, a session's `initialize`, a `DELETE`) through the very handler that serves
 * clients, so that the server's credentials, identity headers, timeouts, bounds and session rules all apply as
 * they do to a client's request. It offers the part of `ServerResponse` the upstreams use.
 *
 * Bounded: past `maxBytes` it stops keeping the body and reads as destroyed, which the upstream takes as the
 * client going away.
 *
 * @example
 * const captured = new CapturedResponse(8 * 1_048_576);
 * await member.handle(request, captured.asServerResponse(request), context);
 * await captured.done;
 * captured.statusCode; captured.text();
 */
export class CapturedResponse extends EventEmitter {
  statusCode = 200;
  headersSent = false;
  writableEnded = false;
  writableFinished = false;
  destroyed = false;
  /** Whether the body went past the bound (then it was cut). */
  tooLarge = false;
  private readonly headers = new Map<string, OutgoingHttpHeader>();
  private readonly chunks: Buffer[] = [];
  private bytes = 0;
  private closed = false;
  private settle!: () => void;
  /** Settles once the answer ended or was cut off. */
  readonly done: Promise<void> = new Promise<void>((resolve) => (this.settle = resolve));

  /**
   * @param maxBytes - Most body bytes kept.
   * @param onChunk - Given each body chunk as it comes, for a streamed answer (then nothing is kept).
   */
  constructor(
    private readonly maxBytes: number,
    private readonly onChunk?: (chunk: Buffer) => void,
  ) {
    super();
  }

  /**
   * The request this response answers, as a server response names its own: an upstream finds its exchange in
   * progress through it when the response closes (the server set's client left), and ends it at the server.
   */
  req: object | undefined = undefined;

  /** This object as the response type an upstream's handler takes, answering `req` when given. */
  asServerResponse(req?: object): ServerResponse {
    if (req !== undefined) this.req = req;
    return this as unknown as ServerResponse;
  }

  setHeader(name: string, value: OutgoingHttpHeader): this {
    this.headers.set(name.toLowerCase(), value);
    return this;
  }

  getHeader(name: string): OutgoingHttpHeader | undefined {
    return this.headers.get(name.toLowerCase());
  }

  hasHeader(name: string): boolean {
    return this.headers.has(name.toLowerCase());
  }

  removeHeader(name: string): void {
    this.headers.delete(name.toLowerCase());
  }

  getHeaders(): OutgoingHttpHeaders {
    return Object.fromEntries(this.headers);
  }

  writeHead(status: number, reasonOrHeaders?: string | OutgoingHttpHeaders | OutgoingHttpHeader[], headers?: OutgoingHttpHeaders | OutgoingHttpHeader[]): this {
    this.statusCode = status;
    const given = typeof reasonOrHeaders === 'string' ? headers : reasonOrHeaders;
    if (Array.isArray(given)) {
      for (let i = 0; i + 1 < given.length; i += 2) this.setHeader(String(given[i]), given[i + 1]!);
    } else if (given) {
      for (const name of Object.keys(given)) {
        const value = given[name];
        if (value !== undefined) this.setHeader(name, value);
      }
    }
    this.headersSent = true;
    return this;
  }

  flushHeaders(): void {
    this.headersSent = true;
  }

  /** The header's value as one string (the first of several). */
  header(name: string): string | undefined {
    const value = this.headers.get(name.toLowerCase());
    if (value === undefined) return undefined;
    return Array.isArray(value) ? value[0] : String(value);
  }

  write(chunk: string | Uint8Array, encodingOrCallback?: BufferEncoding | (() => void), callback?: () => void): boolean {
    this.headersSent = true;
    if (!this.destroyed && !this.writableEnded) this.take(chunk);
    const done = typeof encodingOrCallback === 'function' ? encodingOrCallback : callback;
    if (done) queueMicrotask(done);
    return true;
  }

  end(chunkOrCallback?: string | Uint8Array | (() => void), encodingOrCallback?: BufferEncoding | (() => void), callback?: () => void): this {
    if (this.writableEnded) return this;
    if (typeof chunkOrCallback === 'string' || chunkOrCallback instanceof Uint8Array) this.write(chunkOrCallback);
    this.headersSent = true;
    this.writableEnded = true;
    this.writableFinished = true;
    const done = typeof chunkOrCallback === 'function' ? chunkOrCallback : typeof encodingOrCallback === 'function' ? encodingOrCallback : callback;
    if (done) queueMicrotask(done);
    this.emit('finish');
    this.close();
    return this;
  }

  /** Ends the answer from this side (the asker no longer wants it): the upstream sees its client leave. */
  destroy(): this {
    if (this.destroyed) return this;
    this.destroyed = true;
    this.close();
    return this;
  }

  cork(): void {}
  uncork(): void {}

  /** The body kept, as text. */
  text(): string {
    return this.body().toString('utf8');
  }

  /**
   * The body kept, as bytes: the one chunk itself when it came in one and is most of the memory it is a view on (a
   * kept page must not hold a larger socket buffer alive), else a copy.
   */
  body(): Buffer {
    const only = this.chunks.length === 1 ? this.chunks[0]! : undefined;
    if (only !== undefined && only.buffer.byteLength <= 2 * only.length) return only;
    return Buffer.concat(this.chunks, this.bytes);
  }

  private take(chunk: string | Uint8Array): void {
    const buffer = typeof chunk === 'string' ? Buffer.from(chunk) : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    if (this.onChunk) {
      this.onChunk(buffer);
      return;
    }
    if (this.bytes + buffer.length > this.maxBytes) {
      this.tooLarge = true;
      this.destroy();
      return;
    }
    this.chunks.push(buffer);
    this.bytes += buffer.length;
  }

  private close(): void {
    if (this.closed) return;
    this.closed = true;
    // Emitted once, after the current step, as a socket's close is.
    queueMicrotask(() => {
      this.emit('close');
      this.settle();
    });
  }
}
