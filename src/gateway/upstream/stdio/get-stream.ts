import type { ServerResponse } from 'node:http';
import { jsonRpcError, JsonRpcErrorCode, type JsonRpcMessage } from '../../../core/wire/jsonrpc.js';
import { acceptsPrimingEvent } from '../../../core/mcp/protocol-version.js';
import type { BoundSession } from '../../../core/session/session-registry.js';
import type { GuardedRequest, HttpHandlerContext } from '../../../http/http-handler.js';
import { acceptsMediaType, EVENT_STREAM_MEDIA_TYPE } from '../../../http/media-type.js';
import { firstHeader } from '../../../http/request-headers.js';
import { startEventStream, writeJson } from '../../../http/write-response.js';
import type { ResumableEventStream, StreamOwner } from '../session-event-streams.js';
import { writeHoldingChild } from './child-backpressure.js';
import { sessionForGetOrDelete } from './session-for-get-or-delete.js';
import type { Exchange } from './stdio-exchange.js';
import type { StdioSession } from './stdio-session.js';
import type { StdioUpstreamState } from './stdio-upstream-state.js';
import { resumeStream } from './stream-resume.js';

/**
 * A GET on a session: resumes the stream `Last-Event-ID` names (see `resumeStream`), else opens the session's
 * one GET stream, which carries the child's messages no waiting POST takes. 406 without `Accept:
 * text/event-stream`, 409 while a connected GET stream is open.
 */
export function serveGet(upstream: StdioUpstreamState, req: GuardedRequest, res: ServerResponse, context: HttpHandlerContext): Promise<void> | void {
  const session = sessionForGetOrDelete(upstream, req, res, context);
  if (!session) return;
  const slot = session.value;
  if (!acceptsMediaType(req.headers.accept, EVENT_STREAM_MEDIA_TYPE)) {
    // A GET is answered with an event stream or not at all (2025-11-25 streamable-http, "Listening for Messages").
    writeJson(res, 406, jsonRpcError(null, JsonRpcErrorCode.InvalidRequest, `Not Acceptable: a GET is answered with an event stream; send Accept: ${EVENT_STREAM_MEDIA_TYPE}`));
    return;
  }
  const lastEventId = firstHeader(req.headers['last-event-id']);
  if (lastEventId !== undefined && upstream.replayBufferBytes > 0) return resumeStream(res, slot, lastEventId, context);
  if (slot.get !== undefined) {
    // A GET stream whose client left without resuming it is replaced; a connected one is not.
    if (slot.get.stream?.isAttached() === false) slot.get.end(200, '');
    else {
      writeJson(res, 409, jsonRpcError(null, JsonRpcErrorCode.InvalidRequest, 'Conflict: this session already has a GET stream open'));
      return;
    }
  }
  return new GetStream(upstream, res, session, context.protocolVersion).run();
}

/**
 * A session's GET stream (2025 revisions): open until the client leaves, the child ends or the gateway shuts
 * down. Resumable when the upstream keeps events (`replayBufferBytes`): a client that lost it has
 * `replayWindowMs` to resume it, and meanwhile its messages are kept for the resume.
 */
export class GetStream implements Exchange, StreamOwner {
  readonly isGet = true;
  readonly sse = true;
  stream: ResumableEventStream | undefined = undefined;
  private settled = false;
  private detachTimer: NodeJS.Timeout | undefined = undefined;
  private resolve: () => void = noop;
  private readonly settleNow = (): void => this.settle();

  constructor(
    private readonly upstream: StdioUpstreamState,
    readonly res: ServerResponse,
    private readonly session: BoundSession<StdioSession>,
    readonly protocolVersion: string | undefined,
  ) {}

  /** Opens the stream; resolves once it is over. */
  run(): Promise<void> {
    return new Promise<void>((resolve) => {
      this.resolve = resolve;
      this.session.acquire();
      this.upstream.exchanges.add(this);
      this.session.value.get = this;
      startEventStream(this.res);
      if (this.upstream.replayBufferBytes > 0) this.stream = this.session.value.eventStreams().open(this.res, this, acceptsPrimingEvent(this.protocolVersion));
      else this.res.once('close', this.settleNow);
    });
  }

  connected(): boolean {
    return this.stream ? this.stream.isAttached() : !this.res.writableEnded && !this.res.destroyed;
  }

  push(message: JsonRpcMessage): boolean {
    if (this.settled) return false;
    // A stream whose client lost it keeps its messages for the resume.
    if (this.stream) {
      this.stream.send(JSON.stringify(message));
      return true;
    }
    if (this.res.writableEnded) return false;
    writeHoldingChild(this.res, this.session.value.child, message);
    return true;
  }

  end(): void {
    if (this.stream) this.stream.end();
    else if (!this.settled && !this.res.writableEnded) this.res.end();
    this.settle();
  }

  detached(): void {
    this.detachTimer = setTimeout(this.settleNow, this.upstream.replayWindowMs);
  }

  attached(): void {
    clearTimeout(this.detachTimer);
  }

  private settle(): void {
    if (this.settled) return;
    this.settled = true;
    clearTimeout(this.detachTimer);
    this.stream?.end();
    this.upstream.exchanges.delete(this);
    if (this.session.value.get === this) this.session.value.get = undefined;
    this.session.release();
    this.resolve();
  }
}

function noop(): void {}
