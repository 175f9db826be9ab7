/**
 * A server's list page as bytes, with where the request's own id sits in it: two answers to the same page differ
 * only by the id the set gave each request, so they are compared around it. Kept as a `Buffer` rather than text,
 * since many large strings alive across requests in flight make every young-generation collection copy them;
 * bytes live outside the JavaScript heap and compare with `memcmp`.
 */
export interface PageBytes {
  /** The answer's body as it came. */
  readonly bytes: Buffer;
  /** Where the id's JSON text starts in {@link bytes}, or -1 when the body does not hold it. */
  readonly idAt: number;
  /** The id's JSON text's length in bytes (0 when not found). */
  readonly idLength: number;
}

/**
 * `bytes` with the place of `idJson` (the request id as JSON text, e.g. `"abc-1"`) found.
 *
 * @example
 * const page = pageBytesOf(Buffer.from('{"jsonrpc":"2.0","id":"r-1","result":{}}'), '"r-1"'); // idAt 22, idLength 5
 */
export function pageBytesOf(bytes: Buffer, idJson: string): PageBytes {
  const idAt = bytes.indexOf(idJson);
  return { bytes, idAt, idLength: idAt < 0 ? 0 : Buffer.byteLength(idJson) };
}

/**
 * Whether two pages are the same answer, byte for byte, but for the request id each carries.
 *
 * @example
 * samePage(pageBytesOf(Buffer.from('{"id":"a-1","x":1}'), '"a-1"'), pageBytesOf(Buffer.from('{"id":"a-22","x":1}'), '"a-22"')); // true
 */
export function samePage(a: PageBytes, b: PageBytes): boolean {
  if (a === b) return true;
  if (a.idAt !== b.idAt || a.bytes.length - a.idLength !== b.bytes.length - b.idLength) return false;
  if (a.idAt < 0) return a.bytes.equals(b.bytes);
  return a.bytes.compare(b.bytes, 0, b.idAt, 0, a.idAt) === 0 && a.bytes.compare(b.bytes, b.idAt + b.idLength, b.bytes.length, a.idAt + a.idLength, a.bytes.length) === 0;
}
