import { StringDecoder } from 'node:string_decoder';
import { messageEventFrame } from '../../core/wire/event-stream-frame.js';
import { exposeRequestId } from './server-request-ids.js';

/** Most characters held for one event being assembled; a longer event ends the stream (it cannot be relabelled). */
export const MAX_RELABELLED_EVENT_CHARS = 16 * 1_048_576;

/**
 * The last event id seen from each server of a stream, as the one id the client gets back: base64url of a JSON
 * object `{ server: eventId }`. `Last-Event-ID` then resumes every server's stream where it was.
 */
export class EventIdVector {
  private readonly last = new Map<string, string>();

  constructor(initial?: ReadonlyMap<string, string>) {
    if (initial) for (const [server, id] of initial) this.last.set(server, id);
  }

  /** Records `id` as `server`'s latest; returns the id to give the client. */
  advance(server: string, id: string): string {
    this.last.set(server, id);
    return Buffer.from(JSON.stringify(Object.fromEntries(this.last))).toString('base64url');
  }

  /** Each server's last event id in a `Last-Event-ID` this class made; empty for anything else. */
  static read(value: string | undefined, servers: ReadonlySet<string>): Map<string, string> {
    const found = new Map<string, string>();
    if (value === undefined || value.length > MAX_EVENT_ID_VECTOR_LENGTH) return found;
    try {
      const parsed: unknown = JSON.parse(Buffer.from(value, 'base64url').toString('utf8'));
      if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return found;
      for (const [server, id] of Object.entries(parsed)) if (servers.has(server) && typeof id === 'string') found.set(server, id);
    } catch {
      // Not one of ours: nothing to resume.
    }
    return found;
  }
}

/** Longest `Last-Event-ID` read, in characters. */
const MAX_EVENT_ID_VECTOR_LENGTH = 4096;

/**
 * Relabels one server's event stream for the client: each event's id becomes the stream's {@link EventIdVector}
 * id, and each request the server sends the client gets an id naming the server ({@link exposeRequestId}).
 * Incremental over chunks; only the event being assembled is held.
 */
export class EventRelabeller {
  private readonly decoder = new StringDecoder('utf8');
  private pending = '';

  /**
   * @param server - The server whose stream this is.
   * @param ids - The stream's id vector (shared by every server of a merged stream).
   * @param keep - Says whether a message may go on (e.g. to drop a repeated `list_changed`). Default: all.
   * @param shown - A message kept, as the client may see it (e.g. a tools list compared with the pins); the very
   *   same object when unchanged. Default: as it came.
   */
  constructor(
    private readonly server: string,
    private readonly ids: EventIdVector,
    private readonly keep: (message: Record<string, unknown>) => boolean = () => true,
    private readonly shown?: (message: Record<string, unknown>) => Record<string, unknown>,
  ) {}

  /** Feeds a chunk; returns the complete events relabelled, or undefined when an event grew too long. */
  push(chunk: Buffer): string | undefined {
    let text = this.pending + this.decoder.write(chunk);
    // A `\r` at the end may be the first half of `\r\n`: held until the next chunk says.
    const held = text.endsWith('\r') ? '\r' : '';
    if (held) text = text.slice(0, -1);
    // Every line end (CRLF, CR, LF) as LF: an event ends at an empty line.
    const events = text.replace(/\r\n?/g, '\n').split('\n\n');
    this.pending = events.pop()! + held;
    let out = '';
    for (const event of events) out += this.relabel(event);
    return this.pending.length > MAX_RELABELLED_EVENT_CHARS ? undefined : out;
  }

  private relabel(event: string): string {
    let id: string | undefined;
    let data: string[] = [];
    let retry = '';
    for (const line of event.split('\n')) {
      const colon = line.indexOf(':');
      const field = colon === -1 ? line : line.slice(0, colon);
      let value = colon === -1 ? '' : line.slice(colon + 1);
      if (value.startsWith(' ')) value = value.slice(1);
      if (field === 'id') id = value;
      else if (field === 'data') data.push(value);
      else if (field === 'retry') retry = `retry: ${value}\n`;
    }
    const exposedId = id === undefined || id === '' ? undefined : this.ids.advance(this.server, id);
    if (data.length === 0) return exposedId === undefined ? retry : `${retry}id: ${exposedId}\n\n`;
    const text = data.join('\n');
    if (text === '') return `${retry}${messageEventFrame('', exposedId ?? '')}`;
    const parsed = parse(text);
    if (Array.isArray(parsed)) {
      // A batch (2025-03-26): each of its messages is kept or dropped as one alone would be.
      const kept = parsed.filter((item) => typeof item !== 'object' || item === null || this.keep(item as Record<string, unknown>));
      if (kept.length === 0) return retry;
      const shown = this.shown;
      const out = shown ? kept.map((item) => (typeof item === 'object' && item !== null ? shown(item as Record<string, unknown>) : item)) : kept;
      const same = kept.length === parsed.length && out.every((item, i) => item === kept[i]);
      return `${retry}${messageEventFrame(same ? text : JSON.stringify(out), exposedId)}`;
    }
    let message = parsed;
    if (message && !this.keep(message)) return retry;
    if (message && this.shown) {
      const shown = this.shown(message);
      if (shown !== message) data = [JSON.stringify((message = shown))];
    }
    if (message && typeof message.method === 'string' && (typeof message.id === 'number' || typeof message.id === 'string')) {
      data = [JSON.stringify({ ...message, id: exposeRequestId(this.server, message.id) })];
    } else if (message?.method === 'notifications/cancelled') {
      // The server gives up a request it sent the client: named by the id the client knows it by.
      const params = message.params as { requestId?: unknown } | undefined;
      if (typeof params?.requestId === 'number' || typeof params?.requestId === 'string') {
        data = [JSON.stringify({ ...message, params: { ...params, requestId: exposeRequestId(this.server, params.requestId) } })];
      }
    }
    return `${retry}${messageEventFrame(data.join('\n'), exposedId)}`;
  }
}

function parse(text: string): Record<string, unknown> | unknown[] | undefined {
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === 'object' && value !== null ? (value as Record<string, unknown> | unknown[]) : undefined;
  } catch {
    return undefined;
  }
}
