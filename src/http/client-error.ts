import { STATUS_CODES, type Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { jsonRpcError, JsonRpcErrorCode } from '../core/wire/jsonrpc.js';
import { JSON_MEDIA_TYPE } from './media-type.js';
import { endSocketThenLinger } from './lingering-close.js';

/** Status and message for what Node's HTTP parser refused before any handler ran. */
function describeClientError(code: string | undefined): { status: number; message: string } {
  if (code === 'HPE_HEADER_OVERFLOW') return { status: 431, message: 'Request Header Fields Too Large: the request headers are over the limit; send fewer or shorter headers' };
  if (code === 'ERR_HTTP_REQUEST_TIMEOUT') return { status: 408, message: 'Request Timeout: the request did not arrive in time' };
  if (code === 'HPE_CHUNK_EXTENSIONS_OVERFLOW') return { status: 413, message: 'Payload Too Large: the chunk extensions are over the limit' };
  return { status: 400, message: 'Bad Request: the request is not valid HTTP/1.1' };
}

/**
 * Answers what Node's HTTP server refuses itself (headers too large, malformed HTTP or chunked framing, a request
 * not received within `requestTimeout`) as the guard answers everything else: the status Node would send (431,
 * 400, 413, 408), with a JSON-RPC error body (`id` null, -32600), so
 * an MCP client can show why. Node's own answer has no body. Nothing of the request is repeated. A connection
 * already writing a response, or already gone, is closed without an answer, as Node does.
 *
 * @example
 * answerClientErrors(createServer(handler));
 */
export function answerClientErrors(server: Server): void {
  // Sockets answered and now lingering: Node's parser reports every further piece of their body as an error
  // again, and the lingering close, not this handler, decides when they are closed.
  const answered = new WeakSet<Duplex>();
  server.on('clientError', (error: NodeJS.ErrnoException, socket: Duplex) => {
    if (answered.has(socket)) return;
    const inFlight = (socket as Duplex & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
    if (error.code === 'ECONNRESET' || !socket.writable || inFlight?.headersSent === true) {
      socket.destroy();
      return;
    }
    const { status, message } = describeClientError(error.code);
    const body = JSON.stringify(jsonRpcError(null, JsonRpcErrorCode.InvalidRequest, message));
    // Written, then closed gracefully: what the client still sends is read and discarded, within the lingering
    // bounds, so that a client still sending its body reads the answer instead of a reset; then destroyed, so a
    // half-open socket never holds its per-address connection slot longer than those bounds.
    answered.add(socket);
    endSocketThenLinger(
      socket,
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: ${JSON_MEDIA_TYPE}\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  });
}
