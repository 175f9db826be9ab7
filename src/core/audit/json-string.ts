/**
 * A string as JSON, without `JSON.stringify` for the strings that need no escaping (most of an audit record's: an
 * issuer URL, a client id, a method, a reason). Quoting a string is cheaper than the call, and a record has several.
 */

/**
 * What `JSON.stringify` escapes in a string (a quote, a backslash, a control character, a lone surrogate: ECMA-262
 * QuoteJSONString), and any surrogate, paired or not, so that a string without a match is written as it is.
 */
const MAY_NEED_ESCAPING = /["\\\u0000-\u001f\ud800-\udfff]/;

/**
 * `JSON.stringify(value)`, exactly: the string quoted when nothing in it needs escaping, else stringified.
 *
 * @example
 * jsonString('tools/call'); // '"tools/call"'
 * jsonString('say "hi"'); // '"say \\"hi\\""'
 */
export function jsonString(value: string): string {
  return MAY_NEED_ESCAPING.test(value) ? JSON.stringify(value) : `"${value}"`;
}
