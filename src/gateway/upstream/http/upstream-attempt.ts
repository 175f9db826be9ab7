import type { IncomingHttpHeaders } from 'node:http';
import type { Dispatcher } from 'undici';
import { nodeStyleHeaders } from '../upstream-dispatcher.js';

/** An undici error, with Node's or undici's code when there is one. */
export type UpstreamError = Error & { code?: string };

/**
 * What an {@link UpstreamAttempt} reports to: the exchange it is an attempt of. Only the exchange's current
 * attempt is heard; one it abandoned (retried, or sent again with renewed credentials) can no longer touch it.
 */
export interface AttemptOwner {
  /** The attempt the exchange waits on; undefined between attempts. */
  readonly attempt: UpstreamAttempt | undefined;
  /** Whether the exchange has ended. */
  readonly settled: boolean;
  /** The request is on a connection (a new one, or a pooled one already open). */
  attemptConnected(): void;
  /** The upstream's final status and headers (node-style, see `nodeStyleHeaders`) arrived. */
  attemptAnswered(attempt: UpstreamAttempt, controller: Dispatcher.DispatchController, status: number, headers: IncomingHttpHeaders): void;
  /** The request failed before any answer started. */
  attemptFailed(error: UpstreamError): void;
  /** A chunk of the answer's body, once delivered ({@link UpstreamAttempt.deliver}). */
  answerData(chunk: Buffer, controller: Dispatcher.DispatchController): void;
  /** The whole answer arrived. */
  answerEnd(): void;
  /** The answer's body failed. */
  answerFailed(error: UpstreamError): void;
}

/**
 * One request sent upstream for an exchange, and undici's handler for it (undici 7's `DispatchHandler`): one
 * object per attempt, with no closure. The body's events are held until the exchange is ready for them
 * ({@link UpstreamAttempt.deliver}): with sealed sessions the head waits while the session id is sealed, the pool
 * paused.
 */
export class UpstreamAttempt implements Dispatcher.DispatchHandler {
  /** undici's handle on the request, once it is on a connection. */
  controller: Dispatcher.DispatchController | undefined = undefined;
  /** Whether the request reached a connection. */
  connected = false;
  /** Whether the exchange ended before the request reached a connection. */
  aborted = false;
  /** Whether the upstream's answer (a final status) started. */
  started = false;
  /** A failure of the answer before it was delivered. */
  failure: UpstreamError | undefined = undefined;
  /** Whether the answer goes to the owner as it comes ({@link deliver}). */
  private delivering = false;
  /** Chunks that arrived before {@link deliver}; made only when one does. */
  private held: Buffer[] | undefined = undefined;
  private ended = false;

  constructor(private readonly owner: AttemptOwner) {}

  private get current(): boolean {
    return this.owner.attempt === this;
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller;
    if (this.aborted || this.owner.settled) {
      controller.abort(new Error('exchange ended'));
      return;
    }
    this.connected = true;
    this.owner.attemptConnected();
  }

  onResponseStart(controller: Dispatcher.DispatchController, statusCode: number, headers: IncomingHttpHeaders): void {
    // 1xx answers (103 Early Hints) are not the answer; undici itself refuses an unasked-for 100 Continue.
    if (statusCode < 200 || !this.current || this.owner.settled) return;
    this.started = true;
    this.owner.attemptAnswered(this, controller, statusCode, nodeStyleHeaders(headers));
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (!this.current) return;
    if (this.delivering) this.owner.answerData(chunk, controller);
    else (this.held ??= []).push(chunk);
  }

  onResponseEnd(): void {
    if (!this.current) return;
    if (this.delivering) this.owner.answerEnd();
    else this.ended = true;
  }

  onResponseError(_controller: Dispatcher.DispatchController, error: UpstreamError): void {
    if (this.owner.settled || !this.current) return;
    if (!this.started) {
      this.owner.attemptFailed(error);
      return;
    }
    if (this.delivering) this.owner.answerFailed(error);
    else this.failure ??= error;
  }

  /** Hands the answer to the owner, what arrived so far first. */
  deliver(controller: Dispatcher.DispatchController): void {
    this.delivering = true;
    const held = this.held;
    this.held = undefined;
    if (held) for (const chunk of held) this.owner.answerData(chunk, controller);
    if (this.failure) this.owner.answerFailed(this.failure);
    else if (this.ended) this.owner.answerEnd();
  }

  /** Stops the request, wherever it is. */
  abort(): void {
    this.aborted = true;
    this.controller?.abort(new Error('exchange ended'));
  }
}
