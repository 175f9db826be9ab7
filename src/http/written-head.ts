/**
 * The head a handler writes, as `ServerResponse.writeHead` takes it: reading, dropping and adding headers in
 * its headers argument (an object, or a flat `[name, value, …]` array), for the written-answer filter.
 */
import type { OutgoingHttpHeader, OutgoingHttpHeaders } from 'node:http';

/** The headers argument of `writeHead`, as a handler passed it. */
export type HeadersArg = OutgoingHttpHeaders | OutgoingHttpHeader[] | undefined;
/** A chunk a handler writes. */
export type Chunk = string | Uint8Array;
/** The callback of `write` and `end`. */
export type WriteCallback = (error?: Error | null) => void;

/** A header from `writeHead`'s headers argument (object, or flat `[name, value, …]` array); `name` is lowercase. */
export function headerValue(headers: HeadersArg, name: string): OutgoingHttpHeader | undefined {
  if (headers === undefined || headers === null) return undefined;
  if (Array.isArray(headers)) {
    for (let i = 0; i + 1 < headers.length; i += 2) {
      if (String(headers[i]).toLowerCase() === name) return headers[i + 1];
    }
    return undefined;
  }
  for (const key of Object.keys(headers)) {
    if (key.toLowerCase() === name) return headers[key];
  }
  return undefined;
}

/** A copy of the headers argument without the named headers (lowercase names). */
export function withoutHeaders(headers: HeadersArg, names: readonly string[]): HeadersArg {
  if (headers === undefined || headers === null) return headers;
  if (Array.isArray(headers)) {
    const out: OutgoingHttpHeader[] = [];
    for (let i = 0; i + 1 < headers.length; i += 2) {
      if (!names.includes(String(headers[i]).toLowerCase())) out.push(headers[i]!, headers[i + 1]!);
    }
    return out;
  }
  const out: OutgoingHttpHeaders = {};
  for (const key of Object.keys(headers)) {
    if (!names.includes(key.toLowerCase())) out[key] = headers[key];
  }
  return out;
}

/** A copy of the headers argument with one more header. */
export function appendHeader(headers: OutgoingHttpHeaders | OutgoingHttpHeader[], name: string, value: string): HeadersArg {
  return Array.isArray(headers) ? [...headers, name, value] : { ...headers, [name]: value };
}

/** The arguments of a `writeHead` call: the status, then the message and the headers when given. */
export function headArgs(status: number, statusMessage: string | undefined, headers: HeadersArg): unknown[] {
  const args: unknown[] = [status];
  if (statusMessage !== undefined) args.push(statusMessage);
  if (headers !== undefined) args.push(headers);
  return args;
}

/** A written chunk as bytes (a string in `encoding`, UTF-8 by default); a `Buffer` comes back as it is. */
export function toBuffer(chunk: Chunk, encoding: BufferEncoding | undefined): Buffer {
  if (typeof chunk === 'string') return Buffer.from(chunk, encoding ?? 'utf8');
  return Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
}
