/**
 * The one encoding of a header value that may hold any text: plain visible ASCII as is, anything else as
 * `=?base64?<base64 of the UTF-8>?=`. It is MCP 2026-07-28's "Value Encoding" for mirrored headers
 * (basic/transports/streamable-http), so one rule reads what clients mirror (`Mcp-Name`, `Mcp-Param-*`) and
 * writes what the gateway tells its upstream (identity headers and `MCP_CALLER_*` variables).
 */

const SENTINEL_PREFIX = '=?base64?';
const SENTINEL_SUFFIX = '?=';
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;
// Visible ASCII and space only: anything else in a mirrored header is "invalid characters".
const HEADER_VALUE = /^[\x20-\x7e]*$/;
// What is sent as is: visible ASCII with single inner spaces allowed, nothing at either end that HTTP trims.
const PLAIN_VALUE = /^(?:[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?)?$/;
const utf8 = new TextDecoder('utf-8', { fatal: true });

/** Whether `raw` has the encoded form: the prefix, then the suffix, not overlapping. Case-sensitive. */
function isSentinel(raw: string): boolean {
  return raw.length >= SENTINEL_PREFIX.length + SENTINEL_SUFFIX.length && raw.startsWith(SENTINEL_PREFIX) && raw.endsWith(SENTINEL_SUFFIX);
}

/**
 * Encodes `value` for a header (or an environment variable) so that distinct values stay distinct and every
 * value is safe to send: visible ASCII (0x21–0x7E, inner spaces allowed, no space at either end), and the
 * empty string, pass as they are; any other value (non-ASCII, a control character, a tab, a space at either
 * end) and any plain value that itself looks encoded (starts with `=?base64?` and ends with `?=`) becomes
 * `=?base64?` + standard base64 (RFC 4648 §4) of its UTF-8 + `?=`. A reader tells the two forms apart by
 * those markers alone, and {@link decodeMirroredHeaderValue} reverses either.
 *
 * `value` must be well-formed Unicode (no lone surrogate): UTF-8 has no form for one. The guard refuses a
 * token whose subject, issuer or client id holds one.
 *
 * @example
 * encodeHeaderValue('alice@example.com'); // 'alice@example.com'
 * encodeHeaderValue('aliceЖ@example.com'); // '=?base64?YWxpY2XQlkBleGFtcGxlLmNvbQ==?='
 */
export function encodeHeaderValue(value: string): string {
  if (PLAIN_VALUE.test(value) && !isSentinel(value)) return value;
  return `${SENTINEL_PREFIX}${Buffer.from(value, 'utf8').toString('base64')}${SENTINEL_SUFFIX}`;
}

/**
 * Decodes an `Mcp-Name` / `Mcp-Param-*` value (or an identity header the gateway sent): plain ASCII as is, or
 * the `=?base64?…?=` sentinel form (MCP 2026-07-28 Streamable HTTP "Value Encoding"). Returns `undefined` for
 * a malformed value.
 */
export function decodeMirroredHeaderValue(raw: string): string | undefined {
  if (!HEADER_VALUE.test(raw)) return undefined;
  // Only a value that starts with the prefix AND ends with the suffix is encoded; clients send any
  // other plain-ASCII value (even one that merely starts with "=?base64?") as is.
  if (!isSentinel(raw)) return raw;
  const b64 = raw.slice(SENTINEL_PREFIX.length, raw.length - SENTINEL_SUFFIX.length);
  if (b64.length % 4 !== 0 || !BASE64.test(b64)) return undefined;
  try {
    return utf8.decode(Buffer.from(b64, 'base64'));
  } catch {
    return undefined;
  }
}
