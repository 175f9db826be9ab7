import type { IncomingHttpHeaders, ServerResponse } from 'node:http';
import type { AuthInfo } from '../../core/kernel/auth-info.js';
import type { GuardedRequest, HttpHandlerContext } from '../../http/http-handler.js';
import { EVENT_STREAM_MEDIA_TYPE, mediaType } from '../../http/media-type.js';
import { startEventStream } from '../../http/write-response.js';
import { CapturedResponse } from './captured-response.js';
import type { MemberSession } from './composite-sessions.js';
import { EventIdVector, EventRelabeller, LIST_CHANGED_COALESCE_MS } from './relabelled-events.js';
import type { SetMember } from './set-member.js';


/**
 * A client's standalone GET stream over a server set: one GET stream per server the client's session has opened
 * (and each server opened later, as it is), merged into one. Event ids are {@link EventIdVector}s, so
 * `Last-Event-ID` resumes each server's stream where it was; requests from any server reach the client with ids
 * naming it; `list_changed` notifications of one kind are passed once per {@link LIST_CHANGED_COALESCE_MS}, as
 * the client lists every server again anyway.
 */
export class MergedStream {
  private readonly ids: EventIdVector;
  private readonly streams = new Map<string, CapturedResponse>();
  private readonly lastListChanged = new Map<string, number>();
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
    const relabeller = new EventRelabeller(member.name, this.ids, (message) => this.keep(member.name, message));
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
    for (const stream of this.streams.values()) stream.destroy();
    this.streams.clear();
    if (!this.res.writableEnded) this.res.end();
    this.settle();
  }

  private keep(server: string, message: Record<string, unknown>): boolean {
    const method = message.method;
    if (typeof method !== 'string' || !method.endsWith('/list_changed')) return true;
    this.onListChanged(server);
    const now = Date.now();
    if (now - (this.lastListChanged.get(method) ?? -Infinity) < LIST_CHANGED_COALESCE_MS) return false;
    this.lastListChanged.set(method, now);
    return true;
  }
}
