import type { IncomingMessage } from 'node:http';
import { RequestRejectedError } from '../core/kernel/errors.js';
import { JsonRpcErrorCode } from '../core/wire/jsonrpc.js';

function tooLarge(limit: number): RequestRejectedError {
  return new RequestRejectedError(`Request body larger than ${limit} bytes`, {
    status: 413,
    reason: 'request_too_large',
    jsonRpcCode: JsonRpcErrorCode.InvalidRequest,
    headers: { Connection: 'close' },
  });
}

function timedOut(timeoutMs: number): RequestRejectedError {
  return new RequestRejectedError(`Request body not received within ${timeoutMs} ms`, {
    status: 408,
    reason: 'request_timeout',
    jsonRpcCode: JsonRpcErrorCode.InvalidRequest,
    headers: { Connection: 'close' },
  });
}

/**
 * Reads a request body as UTF-8 text, at most `limit` bytes, within `timeoutMs`. A declared `Content-Length` over
 * the limit is refused before reading; a body that grows past it stops being buffered at once (the rest is
 * drained and discarded, and the connection is closed after the answer).
 *
 * `timeoutMs` bounds the whole read, not the gap between bytes: a client sending one byte a second would
 * otherwise hold the connection until Node's request timeout (300 s). On expiry the rest is discarded, and the
 * answer's `Connection: close` makes `node:http` close the socket once the answer is written.
 *
 * If a body parser already ran (e.g. `express.json()` before the guard), its result is re-serialized,
 * so the guard still sees exactly one JSON value.
 */
export function readBody(req: IncomingMessage & { body?: unknown }, limit: number, timeoutMs: number): Promise<string> {
  if (req.body !== undefined && req.readableEnded) {
    return Promise.resolve(typeof req.body === 'string' ? req.body : JSON.stringify(req.body) ?? '');
  }
  const declared = req.headers['content-length'];
  if (declared !== undefined && Number(declared) > limit) {
    req.resume();
    return Promise.reject(tooLarge(limit));
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let failed = false;
    const timer = setTimeout(() => {
      if (failed) return;
      failed = true;
      chunks.length = 0;
      // What still arrives is discarded (unread bytes would make the close a reset, which can cost the client
      // the answer); `Connection: close` on the answer makes node:http close the socket once it is written.
      req.off('data', onData);
      req.resume();
      reject(timedOut(timeoutMs));
    }, timeoutMs);
    const onData = (chunk: Buffer): void => {
      if (failed) return;
      size += chunk.length;
      if (size > limit) {
        failed = true;
        clearTimeout(timer);
        chunks.length = 0;
        reject(tooLarge(limit));
        return;
      }
      chunks.push(chunk);
    };
    req.on('data', onData);
    req.once('end', () => {
      clearTimeout(timer);
      if (!failed) resolve(chunks.length === 1 ? chunks[0]!.toString('utf8') : Buffer.concat(chunks).toString('utf8'));
    });
    req.once('error', (err) => {
      clearTimeout(timer);
      if (failed) return;
      failed = true;
      reject(new RequestRejectedError('Request body could not be read', { status: 400, reason: 'request_invalid', jsonRpcCode: JsonRpcErrorCode.InvalidRequest, headers: { Connection: 'close' } }));
      void err;
    });
  });
}
