import type { ServerResponse } from 'node:http';
import { jsonRpcError, type JsonRpcMessage, type JsonRpcRequest, type JsonRpcResponse } from '../../../core/wire/jsonrpc.js';
import { acceptsPrimingEvent, httpStatusForResponse } from '../../../core/mcp/protocol-version.js';
import type { BoundSession } from '../../../core/session/session-registry.js';
import { unfilterableReplacement } from '../../../http/filter-written-response.js';
import type { GuardedRequest, HttpHandlerContext } from '../../../http/http-handler.js';
import { acceptsMediaType, EVENT_STREAM_MEDIA_TYPE } from '../../../http/media-type.js';
import { startEventStream, writeJson } from '../../../http/write-response.js';
import { GATEWAY_JSONRPC_CODE } from '../upstream.js';
import { writeGatewayError } from '../gateway-error.js';
import type { ResumableEventStream, StreamOwner } from '../session-event-streams.js';
import { writeHoldingChild } from './child-backpressure.js';
import { CHILD_END_MESSAGES } from './stdio-answers.js';
import type { ChildEndReason, PendingRequest, RequestSink } from './stdio-child.js';
import type { Exchange } from './stdio-exchange.js';
import type { StdioSession } from './stdio-session.js';
import type { StdioUpstreamState } from './stdio-upstream-state.js';

/**
 * The exchange of one client request (a POST) with its session's child, from sending it to the HTTP answer:
 *
 * - The answer is JSON unless the child sends something about the request first (progress, or a request of its
 *   own), which turns it into an event stream ending with the response; a resumable one when the client named
 *   its session (a client that lost it resumes it with a GET, and the request runs on for `replayWindowMs`).
 * - No word from the child for `idleTimeoutMs`: 504 (or an error event), and the child is told the request is
 *   cancelled, as it is when the client goes away. A child that ends fails it with 502.
 * - An `initialize` that opened a session announces it (`Mcp-Session-Id`) with a successful answer only; a
 *   session whose id never reached its client is ended with the exchange.
 *
 * It is at once the child's {@link RequestSink} for the request, the {@link Exchange} the child's other messages
 * are routed to, and the {@link StreamOwner} of its resumable stream, so a request costs one object.
 */
export class PostExchange implements Exchange, RequestSink, StreamOwner {
  readonly isGet = false;
  readonly sse: boolean;
  readonly protocolVersion: string | undefined;
  stream: ResumableEventStream | undefined = undefined;
  private settled = false;
  private streaming = false;
  /** A successful answer was sent: a session this request opened is the client's now. */
  private answered = false;
  private idleTimer: NodeJS.Timeout | undefined = undefined;
  private detachTimer: NodeJS.Timeout | undefined = undefined;
  private pendingRequest: PendingRequest | undefined = undefined;
  private resolve: () => void = noop;
  private readonly onClose = (): void => this.closed();

  /**
   * @param opened - This request is the `initialize` that opened `session`.
   * @param resumable - Its event stream, if it gets one, is recorded for a resume.
   * @param releaseId - Frees the client's request id in the session once answered.
   */
  constructor(
    private readonly upstream: StdioUpstreamState,
    private readonly req: GuardedRequest,
    readonly res: ServerResponse,
    private readonly context: HttpHandlerContext,
    private readonly session: BoundSession<StdioSession>,
    private readonly request: JsonRpcRequest,
    private readonly opened: boolean,
    private readonly resumable: boolean,
    private readonly releaseId: (() => void) | undefined,
  ) {
    this.sse = acceptsMediaType(req.headers.accept, EVENT_STREAM_MEDIA_TYPE);
    this.protocolVersion = context.protocolVersion;
  }

  /** Sends the request to the child; resolves once the exchange is over. */
  run(): Promise<void> {
    return new Promise<void>((resolve) => {
      this.resolve = resolve;
      this.begin();
    });
  }

  connected(): boolean {
    return this.stream ? this.stream.isAttached() : !this.res.writableEnded && !this.res.destroyed;
  }

  push(message: JsonRpcMessage): boolean {
    return this.message(message);
  }

  end(status: number, text: string): void {
    this.pendingRequest?.abandon(true, 'the gateway is shutting down');
    this.upstream.reportFailure(this.req, this.res, 'gateway_shutdown', status);
    this.failWith(status, text);
  }

  /** {@link RequestSink.message}: a message about the request, or routed to its stream; turns the answer into a stream. */
  message(message: JsonRpcMessage): boolean {
    if (this.settled || !this.sse || (this.stream === undefined && this.res.writableEnded)) return false;
    this.idleTimer?.refresh();
    if (!this.streaming) this.startStream();
    this.write(message);
    return true;
  }

  response(message: JsonRpcResponse): void {
    if (this.settled) return;
    // An initialize the child refused started no session after all (settle ends it).
    this.answered = !('error' in message);
    if (this.streaming) {
      this.write(message);
      this.endStream();
    } else {
      writeJson(this.res, httpStatusForResponse(message, this.context.protocolVersion), message, 'error' in message ? {} : this.sessionHeader());
    }
    // A list answer the guard could not filter (too large to hold) was replaced on its way out: the process's answer failed.
    if (unfilterableReplacement(this.res) !== undefined) this.upstream.reportFailure(this.req, this.res, 'upstream_unfilterable');
    this.settle();
  }

  fail(reason: ChildEndReason): void {
    if (this.settled) return;
    this.upstream.reportFailure(this.req, this.res, reason, 502);
    this.failWith(502, CHILD_END_MESSAGES[reason]);
  }

  /** {@link StreamOwner.detached}: the client lost its resumable stream; the request runs on for `replayWindowMs`, for it to come back. */
  detached(): void {
    this.detachTimer = setTimeout(() => {
      this.pendingRequest?.abandon(true, 'the client did not resume its stream');
      this.upstream.reportFailure(this.req, this.res, 'upstream_idle_timeout');
      // The stream's last event says the request ended, for a client that resumes now: never a stream that just stops.
      this.failWith(504, 'Gateway timeout: the client did not resume its stream in time, so its request was cancelled');
    }, this.upstream.replayWindowMs);
  }

  attached(): void {
    clearTimeout(this.detachTimer);
  }

  private begin(): void {
    const slot = this.session.value;
    this.session.acquire();
    this.upstream.exchanges.add(this);
    slot.waiting.add(this);
    this.res.once('close', this.onClose);
    const pendingRequest = slot.child.request(this.request, this);
    if (pendingRequest === undefined) {
      this.fail('upstream_exited');
      return;
    }
    this.pendingRequest = pendingRequest;
    this.idleTimer = setTimeout(() => this.timedOut(pendingRequest), this.upstream.idleTimeoutMs);
  }

  private timedOut(pendingRequest: PendingRequest): void {
    pendingRequest.abandon(true, 'the gateway timed out waiting for an answer');
    // Only an unanswered initialize says the program does not serve: the first request of a sessionless
    // process may be any call, which a caller could make slow on purpose to take the replica out of service.
    if (this.request.method === 'initialize') this.session.value.start?.timedOut(this.upstream.idleTimeoutMs);
    this.upstream.reportFailure(this.req, this.res, this.streaming ? 'upstream_idle_timeout' : 'upstream_timeout', 504);
    this.failWith(504, 'Gateway timeout: the upstream MCP server did not answer in time');
  }

  private closed(): void {
    // A resumable stream's owner hears of its connections (`detached`): the client may resume it.
    if (this.settled || this.res.writableFinished || this.stream !== undefined) return;
    // The client went away: its answer can be sent nowhere, so the work stops.
    this.pendingRequest?.abandon(true, 'the client went away');
    this.settle();
  }

  /** Only the session the gateway just issued is announced, and only with a successful answer. */
  private sessionHeader(): Record<string, string> {
    return this.opened ? { 'Mcp-Session-Id': this.upstream.sealing?.sealedIdFor(this.req) ?? this.session.value.sessionId } : {};
  }

  private startStream(): void {
    const res = this.res;
    for (const [name, value] of Object.entries(this.sessionHeader())) res.setHeader(name, value);
    startEventStream(res);
    this.streaming = true;
    if (this.resumable) this.stream = this.session.value.eventStreams().open(res, this, acceptsPrimingEvent(this.context.protocolVersion));
  }

  /**
   * One message on the answer's stream. A resumable stream records each event for a replay, so it keeps the
   * filtered form of a list answer (a resumed stream is a GET, which the guard does not filter).
   */
  private write(message: JsonRpcMessage): void {
    if (this.stream) this.stream.send(JSON.stringify('method' in message ? message : this.context.filterResponse(this.request, message)));
    else writeHoldingChild(this.res, this.session.value.child, message);
  }

  private endStream(): void {
    if (this.stream) this.stream.end();
    else this.res.end();
  }

  /** Ends the exchange with an error: `status` while nothing was sent, else a last error event on its stream. */
  private failWith(status: number, text: string): void {
    if (this.settled) return;
    const res = this.res;
    if (!res.headersSent && !res.writableEnded) writeGatewayError(res, status, this.request.id, text);
    else if (this.streaming && (this.stream !== undefined || !res.writableEnded)) {
      this.write(jsonRpcError(this.request.id, GATEWAY_JSONRPC_CODE, text));
      this.endStream();
    }
    this.settle();
  }

  private settle(): void {
    this.settled = true;
    const slot = this.session.value;
    // A session whose id never reached its client (it left, the answer timed out or failed) can never be
    // used: its process goes now rather than after the idle timeout, and frees the caller's slot.
    if (this.opened && !this.answered) this.upstream.pool.end(slot.sessionId);
    clearTimeout(this.idleTimer);
    clearTimeout(this.detachTimer);
    this.stream?.end();
    this.upstream.exchanges.delete(this);
    slot.waiting.delete(this);
    this.res.off('close', this.onClose);
    this.session.release();
    this.releaseId?.();
    this.resolve();
  }
}

function noop(): void {}
