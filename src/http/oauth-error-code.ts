/** Longest error code repeated; a real one is a short word (`invalid_client`), anything longer is not shown. */
const MAX_ERROR_CODE_LENGTH = 64;

/** RFC 6749 §5.2: `error = 1*( %x20-21 / %x23-5B / %x5D-7E )`, printable ASCII without `"` and `\`. */
const ERROR_CODE = /^[\x20\x21\x23-\x5b\x5d-\x7e]+$/;

/**
 * An authorization server's `error` value, when it may be repeated to a client, a log or a report: a string of
 * at most 64 characters that RFC 6749 §5.2 allows (so it cannot break out of a quoted header value or a JSON
 * string, nor carry control characters). Undefined for anything else, which is not shown.
 *
 * @example
 * printableOAuthErrorCode('invalid_client'); // 'invalid_client'
 * printableOAuthErrorCode('bad"code'); // undefined
 */
export function printableOAuthErrorCode(code: unknown): string | undefined {
  return typeof code === 'string' && code.length <= MAX_ERROR_CODE_LENGTH && ERROR_CODE.test(code) ? code : undefined;
}
