import type { ServerResponse } from 'node:http';
import type { JsonRpcMessage } from '../../../core/wire/jsonrpc.js';
import type { ResumableEventStream } from '../session-event-streams.js';

/**
 * An open HTTP answer of the stdio upstream: a POST waiting for its response (`PostExchange`) or a session's
 * GET stream (`GetStream`). The child's messages are routed to them (`routeChildMessage`), and shutdown ends them.
 */
export interface Exchange {
  readonly res: ServerResponse;
  readonly isGet: boolean;
  /** Whether the client accepts an event stream on this answer. */
  readonly sse: boolean;
  /**
   * Whether a client connection carries this answer now: false once it closed, even while a resume may come. A
   * method, not a getter: V8 makes an object literal with a getter in dictionary mode, and such per-request
   * objects kept their requests alive through young-generation collections (see `handlerContext` in
   * answer-with-function.ts).
   */
  connected(): boolean;
  /** The MCP revision of the request it answers (what its stream may carry depends on it). */
  readonly protocolVersion: string | undefined;
  /** Its resumable event stream, once it has one. */
  stream?: ResumableEventStream | undefined;
  /** Delivers a message on this answer's stream; false when it cannot carry it. */
  push(message: JsonRpcMessage): boolean;
  /** Ends the exchange: a POST still waiting gets `status` and a JSON-RPC error, a stream is ended. */
  end(status: number, message: string): void;
}
