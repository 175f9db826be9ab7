import { jsonRpcError, JsonRpcErrorCode, type JsonRpcId, type JsonRpcNotification, type JsonRpcRequest, type JsonRpcResponse } from '../../../core/wire/jsonrpc.js';
import { truncateLoggedLine } from './logged-lines.js';
import type { ChildEndReason, PendingRequest, RequestSink, StdioChildOptions } from './stdio-child-contract.js';

/** Requests of the child's awaiting a client's answer; past it the oldest is answered with an error. */
const MAX_SERVER_REQUESTS = 256;

/** What the line protocol needs of the options of `startStdioChild`. */
export type ChildLineProtocolOptions = Pick<StdioChildOptions, 'label' | 'log' | 'onMessage' | 'onAnswered'>;

/**
 * A request of the gateway's in flight in the child: where its answer goes, and the client's id and progress
 * token to restore in what reaches the sink. It is also the {@link PendingRequest} handed to the caller, so a
 * request costs one object.
 */
class InFlightRequest implements PendingRequest {
  constructor(
    private readonly protocol: ChildLineProtocol,
    readonly childId: number,
    readonly originalId: JsonRpcId,
    readonly progressToken: unknown,
    public sink: RequestSink | null,
  ) {}

  abandon(cancel: boolean, reason?: string): void {
    if (this.sink === null) return;
    this.sink = null;
    this.protocol.cancelIfInFlight(this.childId, cancel, reason);
  }
}

/**
 * The JSON-RPC a gateway speaks with one stdio child, one message a line, apart from the process itself:
 *
 * - the gateway's requests get ids unique in the child (and their progress tokens likewise), restored in what
 *   reaches their sink, so two clients' requests with the same id cannot collide;
 * - the child's responses go to the sink of the request they answer, its progress notifications to the request
 *   whose token they carry, everything else to `onMessage`;
 * - the child's own requests get an id the gateway chose, and a client's answer goes back with the child's id;
 *   one no client stream can carry, or left unanswered past {@link MAX_SERVER_REQUESTS}, is answered with an
 *   error, so the child never waits for an answer that cannot come.
 *
 * Lines that are not JSON-RPC go to `log` only, never to a client.
 */
export class ChildLineProtocol {
  private nextId = 0;
  private nextServerId = 0;
  private answeredOnce = false;
  private readonly inFlight = new Map<number, InFlightRequest>();
  /** Requests of the child's, by the id the gateway gave the client: the child's own id. */
  private readonly serverRequests = new Map<number, JsonRpcId>();

  /** @param writeLine - Writes one message to the child's stdin; false when it cannot (the child is not running). */
  constructor(
    private readonly options: ChildLineProtocolOptions,
    private readonly writeLine: (message: unknown) => boolean,
  ) {}

  /** Requests in flight. */
  get pending(): number {
    return this.inFlight.size;
  }

  /** Sends a client request: see `StdioChild.request`. */
  request(message: JsonRpcRequest, sink: RequestSink): PendingRequest {
    const childId = ++this.nextId;
    const meta = message.params?._meta;
    const progressToken = typeof meta === 'object' && meta !== null ? (meta as Record<string, unknown>).progressToken : undefined;
    const entry = new InFlightRequest(this, childId, message.id, progressToken, sink);
    this.inFlight.set(childId, entry);
    // The progress token is the child id too: unique in this child, and it names the request.
    const params = progressToken === undefined ? message.params : { ...message.params, _meta: { ...(meta as object), progressToken: childId } };
    this.writeLine({ ...message, id: childId, ...(params !== undefined ? { params } : {}) });
    return entry;
  }

  /** Tells the child a request it still has is cancelled, when `cancel` asks for it. */
  cancelIfInFlight(childId: number, cancel: boolean, reason: string | undefined): void {
    if (cancel && this.inFlight.has(childId)) {
      this.writeLine({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: childId, ...(reason ? { reason } : {}) } });
    }
  }

  /** Sends a client notification: see `StdioChild.notify`. */
  notify(message: JsonRpcNotification): boolean {
    if (message.method === 'notifications/cancelled') {
      const requestId = message.params?.requestId;
      let childId: number | undefined;
      for (const [id, entry] of this.inFlight) if (entry.originalId === requestId) childId = id;
      if (childId === undefined) return true; // Nothing in flight by that id: nothing to cancel.
      return this.writeLine({ ...message, params: { ...message.params, requestId: childId } });
    }
    return this.writeLine(message);
  }

  /** Delivers a client's answer to a request of the child's: see `StdioChild.answer`. */
  answer(message: JsonRpcResponse): boolean {
    const id = message.id;
    const childId = typeof id === 'number' ? this.serverRequests.get(id) : undefined;
    if (childId === undefined) return false;
    this.serverRequests.delete(id as number);
    return this.writeLine({ ...message, id: childId });
  }

  /** The child ended: every request in flight fails with `reason`, and its own requests are forgotten. */
  failAll(reason: ChildEndReason): void {
    const sinks = [...this.inFlight.values()];
    this.inFlight.clear();
    this.serverRequests.clear();
    for (const entry of sinks) entry.sink?.fail(reason);
  }

  /** One line of the child's stdout. */
  readLine(line: string): void {
    if (line.trim() === '') return;
    let parsed: unknown;
    try {
      parsed = JSON.parse(line);
    } catch {
      this.logLine('upstream_stdout_not_json', line);
      return;
    }
    // A batch from a 2025-03-26 server: each element on its own.
    for (const item of Array.isArray(parsed) ? parsed : [parsed]) this.route(item, line);
  }

  private route(item: unknown, line: string): void {
    if (typeof item !== 'object' || item === null || Array.isArray(item)) {
      this.logLine('upstream_stdout_not_json', line);
      return;
    }
    const message = item as Record<string, unknown>;
    if (typeof message.method === 'string') {
      const id = message.id;
      if (typeof id === 'string' || typeof id === 'number') {
        this.fromChildRequest(message as unknown as JsonRpcRequest);
        return;
      }
      this.fromChildNotification(message as unknown as JsonRpcNotification);
      return;
    }
    const id = message.id;
    const entry = typeof id === 'number' ? this.inFlight.get(id) : undefined;
    if (entry === undefined || !('result' in message || 'error' in message)) {
      this.logLine('upstream_unmatched_response', line);
      return;
    }
    this.inFlight.delete(id as number);
    if (!this.answeredOnce) {
      this.answeredOnce = true;
      this.options.onAnswered?.();
    }
    entry.sink?.response({ ...message, id: entry.originalId } as JsonRpcResponse);
  }

  private fromChildRequest(request: JsonRpcRequest): void {
    const gatewayId = ++this.nextServerId;
    this.serverRequests.set(gatewayId, request.id);
    if (this.serverRequests.size > MAX_SERVER_REQUESTS) {
      const [oldest, childId] = this.serverRequests.entries().next().value as [number, JsonRpcId];
      this.serverRequests.delete(oldest);
      this.writeLine(jsonRpcError(childId, JsonRpcErrorCode.InternalError, 'Internal error: the client did not answer in time'));
    }
    let delivered = false;
    try {
      delivered = this.options.onMessage({ ...request, id: gatewayId });
    } catch {
      delivered = false;
    }
    if (!delivered && this.serverRequests.delete(gatewayId)) {
      this.writeLine(jsonRpcError(request.id, JsonRpcErrorCode.InternalError, 'Internal error: no client stream is open to carry this request'));
    }
  }

  private fromChildNotification(notification: JsonRpcNotification): void {
    if (notification.method === 'notifications/progress') {
      const token = notification.params?.progressToken;
      const entry = typeof token === 'number' ? this.inFlight.get(token) : undefined;
      if (entry !== undefined && entry.progressToken !== undefined) {
        entry.sink?.message({ ...notification, params: { ...notification.params, progressToken: entry.progressToken } });
        return;
      }
    }
    try {
      this.options.onMessage(notification);
    } catch {
      // A client stream that fails is the client's loss, never the child's.
    }
  }

  private logLine(event: 'upstream_stdout_not_json' | 'upstream_unmatched_response', line: string): void {
    this.options.log({ event, session: this.options.label, line: truncateLoggedLine(line) });
  }
}
