import type { IncomingHttpHeaders, ServerResponse } from 'node:http';
import type { AuthInfo } from '../../core/kernel/auth-info.js';
import type { GuardedRequest, HttpHandlerContext } from '../../http/http-handler.js';
import { EVENT_STREAM_MEDIA_TYPE, mediaType } from '../../http/media-type.js';
import { startEventStream, writeEvent } from '../../http/write-response.js';
import { CapturedResponse } from './captured-response.js';
import type { MemberSession } from './composite-sessions.js';
import { ListChangedWindow } from './list-changed-window.js';
import { EventIdVector, EventRelabeller } from './relabelled-events.js';
import type { SetMember } from './set-member.js';
import type { JsonRpcMessage } from '../../core/wire/jsonrpc.js';
import { hideByPins } from '../pins/pinned-upstream.js';

/** Whether a message is a JSON-RPC response (a result or an error, not a request or notification). */
function isResponse(message: Record<string, unknown>): boolean {
  return typeof message.method !== 'string' && ('result' in message || 'error' in message);
}


/**
 * A client's standalone GET stream over a server set: one GET stream per server the client's session has opened
 * (and each server opened later, as it is), merged into one. Event ids are {@link EventIdVector}s, so
 * `Last-Event-ID` resumes each server's stream where it was; requests from any server reach the client with ids
 * naming it; `list_changed` notifications of one kind are collapsed by a {@link ListChangedWindow} (one more
 * following the window when any were held back), as the client lists every server again anyway. Responses pass
 * only on a server's stream the client resumed, and then with every tools list compared with the pins.
 */
export class MergedStream {
  private readonly ids: EventIdVector;
  private readonly streams = new Map<string, CapturedResponse>();
  private readonly listChanged = new ListChangedWindow((method) => {
    if (!this.ended && !this.res.writableEnded) writeEvent(this.res, { jsonrpc: '2.0', method });
  });
  private ended = false;
  private settle!: () => void;
  /** Settles once the client's stream ended. */
  readonly done = new Promise<void>((resolve) => (this.settle = resolve));

  /**
   * @param resumeFrom - Each server's last event id, from the client's `Last-Event-ID`.
   * @param onListChanged - Told of each server whose `list_changed` arrives: the lists kept of it are stale.
   */
  constructor(
    private readonly res: ServerResponse,
    private readonly auth: AuthInfo,
    private readonly signal: AbortSignal,
    private readonly resumeFrom: ReadonlyMap<string, string>,
    private readonly onListChanged: (server: string) => void = () => {},
  ) {
    this.ids = new EventIdVector(resumeFrom);
    startEventStream(res);
    res.once('close', () => this.end());
    signal.addEventListener('abort', () => this.end(), { once: true });
  }

  /** Adds a server's GET stream within its session (none for a server without sessions). */
  attach(member: SetMember, opened: MemberSession): void {
    if (this.ended || opened.id === undefined || this.streams.has(member.name)) return;
    // MCP Streamable HTTP: a GET stream carries no response unless it resumes the stream of an earlier request. One
    // opened afresh passes on none (its id may name a request the client sent another server); one resumed passes on
    // those it replays, every tools list in them compared with the pins, as on the single upstream.
    const resumed = this.resumeFrom.has(member.name);
    const pins = member.pins;
    const relabeller = new EventRelabeller(
      member.name,
      this.ids,
      (message) => (resumed || !isResponse(message)) && this.keep(member.name, message),
      pins ? (message) => hideByPins(pins, member.name, message as unknown as JsonRpcMessage) as unknown as Record<string, unknown> : undefined,
    );
    const captured: CapturedResponse = new CapturedResponse(0, (chunk) => {
      if (captured.statusCode !== 200 || mediaType(captured.header('content-type')) !== EVENT_STREAM_MEDIA_TYPE) return;
      const out = relabeller.push(chunk);
      if (out === undefined) captured.destroy();
      else if (out !== '' && !this.res.writableEnded) this.res.write(out);
    });
    this.streams.set(member.name, captured);
    const headers: IncomingHttpHeaders = { accept: EVENT_STREAM_MEDIA_TYPE, 'mcp-session-id': opened.id };
    if (opened.protocolVersion !== undefined) headers['mcp-protocol-version'] = opened.protocolVersion;
    const lastEventId = this.resumeFrom.get(member.name);
    if (lastEventId !== undefined) headers['last-event-id'] = lastEventId;
    const req = { method: 'GET', headers, auth: this.auth } as unknown as GuardedRequest;
    const context: HttpHandlerContext = { auth: this.auth, signal: this.signal, filterResponse: (_request, response) => response, ...(opened.protocolVersion ? { protocolVersion: opened.protocolVersion } : {}) };
    void Promise.resolve()
      .then(() => member.upstream.handle(req, captured.asServerResponse(req), context))
      .catch(() => captured.destroy())
      .finally(() => void captured.done.then(() => this.streams.delete(member.name)));
  }

  /** Ends the client's stream and every server's. Idempotent. */
  end(): void {
    if (this.ended) return;
    this.ended = true;
    this.listChanged.close();
    for (const stream of this.streams.values()) stream.destroy();
    this.streams.clear();
    if (!this.res.writableEnded) this.res.end();
    this.settle();
  }

  private keep(server: string, message: Record<string, unknown>): boolean {
    const method = message.method;
    if (typeof method !== 'string' || !method.endsWith('/list_changed')) return true;
    this.onListChanged(server);
    return this.listChanged.pass(method);
  }
}
