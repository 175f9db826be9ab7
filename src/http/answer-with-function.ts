import { once } from 'node:events';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AuthInfo } from '../core/auth-info.js';
import type { Guard } from '../core/create-guard.js';
import type { HandlerContext, HandlerResult, McpMessageHandler } from '../core/handler.js';
import { jsonRpcError, type JsonRpcId, type JsonRpcMessage } from '../core/jsonrpc.js';
import { httpStatusForResponse } from '../core/protocol-version.js';
import { abortSignalFor } from './abort-signal.js';
import { startEventStream, writeAccepted, writeError, writeEvent, writeJson } from './write-response.js';

/** One authorized message for a plain function handler, and what the pipeline knows of its request. */
export interface FunctionCall {
  message: JsonRpcMessage;
  id: JsonRpcId | null;
  auth: AuthInfo;
  protocolVersion: string | undefined;
}

/**
 * Calls a plain {@link McpMessageHandler} and writes its answer: a JSON response (list results filtered,
 * 2026-07-28 statuses), `202` for notifications and responses, or an event stream for an async iterable
 * (backpressure kept; the final response filtered). A throwing handler gets a bare 500 JSON-RPC error:
 * the client learns nothing of its internals.
 */
export async function answerWithFunction(
  guard: Guard,
  fn: McpMessageHandler,
  call: FunctionCall,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  const { message, id, auth, protocolVersion } = call;
  const sessionId = req.headers['mcp-session-id'];
  const isRequest = 'method' in message && 'id' in message;
  // The signal is made on first read: most handlers never look at it, and an AbortController with its
  // 'close' listener costs more than all of the guard's checks of a cached token.
  let signal: AbortSignal | undefined;
  const context: HandlerContext = {
    auth,
    get signal() {
      return (signal ??= abortSignalFor(res));
    },
    protocolVersion,
    sessionId: typeof sessionId === 'string' ? sessionId : undefined,
  };
  let result: HandlerResult;
  try {
    result = await fn(message, context);
  } catch {
    writeError(res, guard.errorResponse(undefined, id));
    return;
  }
  if (!isRequest) {
    // Notifications and responses to the server's own requests: delivered, then 202 with no body.
    writeAccepted(res);
    return;
  }
  if (result === undefined) {
    writeJson(res, 500, jsonRpcError(id, -32603, 'Internal error: the handler returned no response'));
    return;
  }
  if (isAsyncIterable(result)) {
    await streamMessages(guard, result, call, res, context.signal);
    return;
  }
  writeJson(res, httpStatusForResponse(result, protocolVersion), guard.filterResponse(message, result, auth, protocolVersion));
}

async function streamMessages(
  guard: Guard,
  messages: AsyncIterable<JsonRpcMessage>,
  call: FunctionCall,
  res: ServerResponse,
  signal: AbortSignal,
): Promise<void> {
  const { message: request, id, auth, protocolVersion } = call;
  const iterator = messages[Symbol.asyncIterator]();
  const stop = (): void => {
    void iterator.return?.()?.catch(() => {});
  };
  signal.addEventListener('abort', stop, { once: true });
  startEventStream(res);
  try {
    for (;;) {
      const next = await iterator.next();
      if (next.done || signal.aborted) break;
      const m = next.value;
      const isFinal = !('method' in m) && 'id' in m && m.id === id;
      const writable = writeEvent(res, isFinal ? guard.filterResponse(request, m, auth, protocolVersion) : m);
      if (isFinal) break;
      // A chatty handler must not fill memory faster than the client reads: wait for the socket.
      if (!writable) await once(res, 'drain', { signal });
    }
  } catch {
    if (!signal.aborted) writeEvent(res, jsonRpcError(id, -32603, 'Internal error'));
  } finally {
    signal.removeEventListener('abort', stop);
    res.end();
  }
}

function isAsyncIterable(v: unknown): v is AsyncIterable<JsonRpcMessage> {
  return typeof v === 'object' && v !== null && typeof (v as { [Symbol.asyncIterator]?: unknown })[Symbol.asyncIterator] === 'function';
}
