import { readAccessToken } from './authorization-header.js';

/** Lower-case header name compared against `rawHeaders` entries. */
const AUTHORIZATION = 'authorization';

/**
 * The request headers {@link extractBearerToken} reads. Pass Node's `req.headersDistinct` (or an object whose
 * `authorization` is its array) so that duplicate headers are seen: Node's `req.headers` silently keeps only
 * the first `Authorization` header and drops the others, which would hide a smuggling attempt.
 */
export interface BearerTokenHeaders {
  /** The `Authorization` header: one value, or every value when the header was sent several times. */
  authorization?: string | readonly string[] | undefined;
}

/**
 * Extracts the access token from the `Authorization: Bearer` header (RFC 6750 §2.1), the only place MCP
 * allows it. Form-encoded body tokens (§2.2) and query tokens (§2.3) are never read. The guard itself also
 * knows the `DPoP` scheme (RFC 9449); here `DPoP …` is another scheme.
 *
 * @param headers - The request headers; see {@link BearerTokenHeaders} on duplicate headers.
 * @param url - The request target (`req.url`, path and query), checked for `access_token`. Optional.
 * @returns The token, exactly as sent (no decoding).
 * @throws MissingTokenError (401, bare challenge per RFC 6750 §3.1, so that the client starts the OAuth flow)
 *   when there is no `Authorization` header, an empty one, `Bearer` with no token, or another scheme (`Basic …`);
 *   also when the only token is an `access_token` query parameter, which is never read.
 * @throws InvalidRequestError (400, `invalid_request`) with reason `token_in_query` for a query token beside an
 *   `Authorization` header, `token_multiple` for two `Authorization` headers (an array of several values, or
 *   values joined by a comma), `token_malformed` for a token outside the b64token grammar (tabs, several
 *   tokens, trailing spaces…).
 */
export function extractBearerToken(headers: BearerTokenHeaders, url?: string): string {
  return readAccessToken(headers, url).token;
}

/**
 * Counts the `Authorization` headers in Node's `req.rawHeaders` (alternating names and values, as received).
 * Use it where `req.headersDistinct` is not available; more than one means {@link extractBearerToken}'s
 * `token_multiple` applies.
 *
 * @param rawHeaders - `[name0, value0, name1, value1, …]`.
 * @returns How many header lines are named `Authorization` (any case).
 */
export function countAuthorizationHeaders(rawHeaders: readonly string[]): number {
  let count = 0;
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = rawHeaders[i] as string;
    if (name.length === AUTHORIZATION.length && name.toLowerCase() === AUTHORIZATION) count++;
  }
  return count;
}
