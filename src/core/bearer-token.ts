import { InvalidRequestError, MissingTokenError } from './errors.js';

/**
 * `credentials = "Bearer" 1*SP b64token` with `b64token = 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"="`
 * (RFC 6750 §2.1). The scheme is case-insensitive (RFC 9110 §11.1); the `i` flag is harmless for the token
 * class, which already holds both cases. Compiled once: this runs on every request.
 */
const BEARER_CREDENTIALS = /^Bearer +([A-Za-z0-9\-._~+/]+=*)$/i;

/** Only the scheme, to tell "wrong scheme" from "bad token" on the (cold) failure path. */
const BEARER_SCHEME = /^Bearer(?: |$)/i;

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
 * allows it. Form-encoded body tokens (§2.2) are never read and query tokens (§2.3) are refused.
 *
 * Order of checks: an `access_token` query parameter is refused first, even beside a valid header, because
 * such a URL leaks the token into logs and `Referer` headers whatever else the request carries.
 *
 * @param headers - The request headers; see {@link BearerTokenHeaders} on duplicate headers.
 * @param url - The request target (`req.url`, path and query), checked for `access_token`. Optional.
 * @returns The token, exactly as sent (no decoding).
 * @throws MissingTokenError (401, bare challenge per RFC 6750 §3.1) when there is no `Authorization` header
 *   or it is empty.
 * @throws InvalidRequestError (400, `invalid_request`) with reason `token_in_query` for a query token,
 *   `token_multiple` for two `Authorization` headers (an array of several values, or values joined by a
 *   comma), `token_malformed` for another scheme or a token outside the b64token grammar (tabs, several
 *   tokens, trailing spaces…).
 */
export function extractBearerToken(headers: BearerTokenHeaders, url?: string): string {
  if (url !== undefined) rejectQueryToken(url);

  let value = headers.authorization;
  if (typeof value !== 'string') {
    if (value === undefined || value.length === 0) throw new MissingTokenError();
    if (value.length > 1) throw multipleTokens();
    value = value[0] as string;
  }
  if (value.length === 0) throw new MissingTokenError();

  const match = BEARER_CREDENTIALS.exec(value);
  if (match !== null) return match[1] as string;

  // Cold path from here on: tell the client precisely what was wrong, without echoing the value.
  // A comma never occurs in a single credential of either common scheme; proxies and `fetch` join
  // repeated headers with ", ", so a comma means two credentials.
  if (value.includes(',')) throw multipleTokens();
  if (!BEARER_SCHEME.test(value)) {
    throw new InvalidRequestError('Authorization header must use the Bearer scheme (RFC 6750 section 2.1)', 'token_malformed');
  }
  throw new InvalidRequestError(
    'Bearer token is malformed: expected exactly one b64token after "Bearer " (RFC 6750 section 2.1)',
    'token_malformed',
  );
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

/** Throws when the query string carries `access_token` (RFC 6750 §2.3, which MCP forbids). */
function rejectQueryToken(url: string): void {
  const start = url.indexOf('?');
  if (start === -1) return;
  const query = url.slice(start + 1);
  // Only parse when the name could be there, literally or percent-encoded (`access%5Ftoken`).
  if (!query.includes('access') && !query.includes('%')) return;
  if (new URLSearchParams(query).has('access_token')) {
    throw new InvalidRequestError(
      'Access tokens must not be sent in the query string; use the Authorization header (RFC 6750 section 2.3, MCP authorization)',
      'token_in_query',
    );
  }
}

function multipleTokens(): InvalidRequestError {
  return new InvalidRequestError('Send exactly one Authorization header (RFC 6750 section 2)', 'token_multiple');
}
