/**
 * Whether a JSON-RPC message may be an error, read from its text without parsing it: an answer's record needs its
 * error code, and a success whose result merely mentions `"error"` (a tool's text, a structured result with an
 * `error` field) should not cost a parse of the whole answer to learn that it is none.
 */

const ERROR_KEY = '"error"';
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COLON = 0x3a;
const OPEN_OBJECT = 0x7b;
const OPEN_ARRAY = 0x5b;
const CLOSE_OBJECT = 0x7d;
const CLOSE_ARRAY = 0x5d;

/**
 * False when the JSON text `json` certainly has no member named `error` in its top-level object (what
 * `JSON.parse(json).error` would read), true when it may. Exact for valid JSON; for text that is not, either answer
 * is safe, since a parse of it finds no member at all. A top-level key written with a `\u` escape is taken as maybe
 * `error`.
 *
 * How: a member named `error` is the bytes `"error"` with an unescaped opening quote, then a colon; when no such
 * bytes occur (the word inside a string shows as `\"error\"`), there is none. Otherwise the object is walked up to
 * the last of them, counting nesting and skipping strings, to see whether one is a key of the top-level object.
 *
 * @example
 * mayHaveTopLevelError('{"jsonrpc":"2.0","id":1,"result":{"structuredContent":{"error":null}}}'); // false
 * mayHaveTopLevelError('{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"Method not found"}}'); // true
 */
export function mayHaveTopLevelError(json: string): boolean {
  let last = -1;
  for (let at = json.indexOf(ERROR_KEY); at !== -1; at = json.indexOf(ERROR_KEY, at + ERROR_KEY.length)) {
    if (!isEscaped(json, at) && followedByColon(json, at + ERROR_KEY.length)) last = at;
  }
  // A key may spell `error` with \u escapes: then every top-level key is looked at.
  const escapes = json.includes('\\u');
  if (last === -1 && !escapes) return false;
  return topLevelKeyMayBeError(json, escapes ? json.length : last);
}

/** Walks `json` up to `end` (included): whether a key of the top-level object is, or may be, `error`. */
function topLevelKeyMayBeError(json: string, end: number): boolean {
  let depth = 0;
  for (let i = 0; i <= end && i < json.length; i++) {
    const c = json.charCodeAt(i);
    if (c === QUOTE) {
      const close = closingQuote(json, i);
      if (close === -1) return false;
      if (depth === 1 && followedByColon(json, close + 1)) {
        const length = close - i - 1;
        if (length === 5 && json.startsWith('error', i + 1)) return true;
        if (json.lastIndexOf('\\u', close) > i) return true;
      }
      i = close;
    } else if (c === OPEN_OBJECT || c === OPEN_ARRAY) depth++;
    else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) depth--;
  }
  return false;
}

/** The index of the quote closing the string opened at `open`, or -1 when it is never closed. */
function closingQuote(json: string, open: number): number {
  for (let at = json.indexOf('"', open + 1); at !== -1; at = json.indexOf('"', at + 1)) {
    if (!isEscaped(json, at)) return at;
  }
  return -1;
}

/** Whether the character at `at` follows an odd number of backslashes (and so is escaped, inside a string). */
function isEscaped(json: string, at: number): boolean {
  let backslashes = 0;
  while (at - backslashes - 1 >= 0 && json.charCodeAt(at - backslashes - 1) === BACKSLASH) backslashes++;
  return backslashes % 2 === 1;
}

/** Whether JSON whitespace, then a colon, starts at `at`. */
function followedByColon(json: string, at: number): boolean {
  for (let i = at; i < json.length; i++) {
    const c = json.charCodeAt(i);
    if (c === COLON) return true;
    // JSON whitespace (RFC 8259 §2): space, tab, line feed, carriage return.
    if (c !== 0x20 && c !== 0x09 && c !== 0x0a && c !== 0x0d) return false;
  }
  return false;
}
