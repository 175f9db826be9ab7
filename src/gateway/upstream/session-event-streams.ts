import type { ServerResponse } from 'node:http';
import { createStreamReplayBuffer, type ResumeRefusal, type StreamReplayBuffer, type StreamReplayBufferOptions } from './stream-replay-buffer.js';

/** Options of {@link createSessionEventStreams}. */
export interface SessionEventStreamsOptions extends StreamReplayBufferOptions {
  /** Writes one event on a client connection (and holds its source while that connection drains). */
  write(res: ServerResponse, id: string, data: string): void;
}

/** What the owner of a stream (a POST waiting for its response, or a GET stream) hears about its connections. */
export interface StreamOwner {
  /** The connection carrying the stream closed before the stream ended: the client may come back with `Last-Event-ID`. */
  detached(): void;
  /** A client resumed the stream on a new connection. */
  attached(): void;
}

/** One event stream of a session, which may outlive the HTTP answer that started it. */
export interface ResumableEventStream {
  /** Whether a client connection carries it now. (A method: an object literal with a getter is made in dictionary mode.) */
  isAttached(): boolean;
  /** Records one event (a serialised JSON-RPC message) and writes it to the connection, if one is attached. */
  send(data: string): void;
  /** Ends the stream: the connection, if any, is ended; a later resume replays what is left, then ends. */
  end(): void;
}

/**
 * The resumable event streams of one MCP session (2025-03-26 to 2025-11-25 Streamable HTTP, "Resumability
 * and Redelivery"), where the gateway itself is the MCP server, as for a stdio upstream: every event gets an
 * id from the session's {@link StreamReplayBuffer}, and a client that lost a connection resumes its stream
 * with a GET carrying `Last-Event-ID`.
 */
export interface SessionEventStreams {
  /**
   * Starts a stream on `res`, whose event-stream head is written; with `priming`, its first event is a
   * priming event (an id and empty data, 2025-11-25), so the client holds a cursor before any message.
   */
  open(res: ServerResponse, owner: StreamOwner, priming: boolean): ResumableEventStream;
  /**
   * Resumes the stream `lastEventId` names on `res`: calls `startHead` (which writes the event-stream head),
   * writes the events recorded after that id, in order, then carries the rest of the stream if it is still
   * running, else ends `res`. A connection still attached to that stream is closed first: the newest
   * connection wins, so no event goes to two. Refused, nothing written, when the id cannot be honoured.
   * `replayed`, when given, rewrites the data of each replayed event (not of a priming event, nor of the live
   * events that follow), e.g. to filter it again for the resuming request.
   */
  resume(res: ServerResponse, lastEventId: string, startHead: () => void, replayed?: (data: string) => string): { refused: ResumeRefusal } | undefined;
  /** Bytes of events held. */
  readonly bytes: number;
}

/**
 * Creates the resumable event streams of one session: {@link SessionEventStreams}. Replay is exactly once and
 * in order because recording and writing happen together, synchronously: an event is either among those
 * replayed to a resuming connection or written live to it, never both, never neither.
 *
 * @example
 * const streams = createSessionEventStreams({ maxBytes: 1_048_576, maxAgeMs: 60_000, write: (res, id, data) => writeEventWithId(res, id, data) });
 * startEventStream(res);
 * const stream = streams.open(res, { detached() {}, attached() {} }, true);
 * stream.send(JSON.stringify(progress));
 */
export function createSessionEventStreams(options: SessionEventStreamsOptions): SessionEventStreams {
  const buffer = createStreamReplayBuffer(options);
  const write = options.write;
  const running = new Map<number, Stream>();

  interface Stream extends ResumableEventStream {
    attach(res: ServerResponse): void;
  }

  function open(res: ServerResponse, owner: StreamOwner, priming: boolean): ResumableEventStream {
    const number = buffer.openStream();
    let connection: ServerResponse | undefined;
    let ended = false;

    function onClose(this: ServerResponse): void {
      if (connection !== this || ended) return;
      connection = undefined;
      owner.detached();
    }

    function connect(next: ServerResponse): void {
      connection = next;
      next.once('close', onClose.bind(next));
    }

    const stream: Stream = {
      isAttached: () => connection !== undefined,
      send(data) {
        if (ended) return;
        const id = buffer.record(number, data);
        if (connection !== undefined && !connection.writableEnded) write(connection, id, data);
      },
      end() {
        if (ended) return;
        ended = true;
        buffer.endStream(number);
        running.delete(number);
        if (connection !== undefined && !connection.writableEnded) connection.end();
        connection = undefined;
      },
      attach(next) {
        const previous = connection;
        // The newest connection wins: the client gave up on the old one, whatever the gateway saw of it.
        connection = undefined;
        if (previous !== undefined && !previous.writableEnded) previous.destroy();
        connect(next);
        owner.attached();
      },
    };
    running.set(number, stream);
    connect(res);
    if (priming) write(res, buffer.record(number, ''), '');
    return stream;
  }

  function resume(res: ServerResponse, lastEventId: string, startHead: () => void, replayed?: (data: string) => string): { refused: ResumeRefusal } | undefined {
    const point = buffer.after(lastEventId);
    if ('refused' in point) return point;
    startHead();
    for (const event of point.events) write(res, event.id, replayed && event.data !== '' ? replayed(event.data) : event.data);
    const stream = running.get(point.stream);
    if (stream === undefined || point.ended) res.end();
    else stream.attach(res);
    return undefined;
  }

  return {
    open,
    resume,
    get bytes() {
      return buffer.bytes;
    },
  };
}
