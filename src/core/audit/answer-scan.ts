/**
 * What an answer chunk's bytes say about a JSON-RPC error, read in one pass: whether they name a message (the bytes
 * `"jsonrpc"`), and whether that message may be an error (the bytes `"error"`, or a `\u` escape, with which a key may
 * spell `error` too; see `mayHaveTopLevelError`).
 */

/** No `"jsonrpc"` in the chunk: no message. */
export const NO_MESSAGE = 0;
/** A message, with neither `"error"` nor `\u`: not an error. */
export const NOT_AN_ERROR = 1;
/** A message that may be an error: its text is to be read for the code. */
export const MAYBE_AN_ERROR = 2;
/** What {@link scanAnswerBytes} finds. */
export type AnswerScan = typeof NO_MESSAGE | typeof NOT_AN_ERROR | typeof MAYBE_AN_ERROR;

// Searched for as bytes made once: a string needle is encoded again on every search.
const JSONRPC_KEY = Buffer.from('"jsonrpc"');
const ERROR_KEY = Buffer.from('"error"');
const ESCAPE = Buffer.from('\\u');
/**
 * Longest chunk read byte by byte, in one pass. A small answer (most are) costs a loop rather than three native
 * searches, each a call into C++ that costs more than the loop; a longer one is searched natively, which is faster
 * per byte.
 */
const ONE_PASS_BYTES = 1_024;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const LETTER_U = 0x75;

/**
 * Whether `bytes` hold `"jsonrpc"` and, if so, `"error"` or `\u`: exactly what three substring searches would say.
 *
 * @example
 * scanAnswerBytes(Buffer.from('{"jsonrpc":"2.0","id":1,"result":{}}')); // NOT_AN_ERROR
 */
export function scanAnswerBytes(bytes: Buffer): AnswerScan {
  if (bytes.length > ONE_PASS_BYTES) {
    if (bytes.indexOf(JSONRPC_KEY) === -1) return NO_MESSAGE;
    return bytes.indexOf(ERROR_KEY) !== -1 || bytes.indexOf(ESCAPE) !== -1 ? MAYBE_AN_ERROR : NOT_AN_ERROR;
  }
  let message = false;
  let maybeError = false;
  // Each occurrence of a needle starts at a quote or a backslash: only there are the next bytes compared.
  for (let i = 0; i < bytes.length; i++) {
    const c = bytes[i];
    if (c === QUOTE) {
      if (!message && startsAt(bytes, i, JSONRPC_KEY)) message = true;
      else if (!maybeError && startsAt(bytes, i, ERROR_KEY)) maybeError = true;
    } else if (c === BACKSLASH && bytes[i + 1] === LETTER_U) maybeError = true;
    if (message && maybeError) return MAYBE_AN_ERROR;
  }
  return message ? NOT_AN_ERROR : NO_MESSAGE;
}

function startsAt(bytes: Buffer, at: number, needle: Buffer): boolean {
  if (at + needle.length > bytes.length) return false;
  for (let k = 1; k < needle.length; k++) if (bytes[at + k] !== needle[k]) return false;
  return true;
}
