import { InvalidRequestError, MissingTokenError } from '../kernel/errors.js';

/**
 * `credentials = auth-scheme 1*SP token68` for the two schemes the guard knows: `Bearer` (RFC 6750 §2.1, whose
 * b64token is token68's grammar) and `DPoP` (RFC 9449 §7.1). Schemes are case-insensitive (RFC 9110 §11.1); the
 * `i` flag is harmless for the token class, which already holds both cases. Compiled once: this runs on every
 * request. Group 1 is the scheme (6 characters for Bearer, 4 for DPoP), group 2 the token.
 */
const ACCESS_TOKEN_CREDENTIALS = /^(Bearer|DPoP) +([A-Za-z0-9\-._~+/]+=*)$/i;

/** A known scheme followed by nothing but white space: credentials with no token. */
const EMPTY_CREDENTIALS = /^(?:Bearer|DPoP)[ \t]+$/i;

/** A known scheme followed by white space, to tell "bad token" from "another scheme" on the (cold) failure path. */
const KNOWN_SCHEME = /^(Bearer|DPoP)[ \t]/i;

/** How the access token was presented: `Authorization: Bearer` (RFC 6750) or `Authorization: DPoP` (RFC 9449). */
export type AuthorizationScheme = 'Bearer' | 'DPoP';

/** An access token and the scheme it came with. */
export interface AccessTokenCredentials {
  readonly scheme: AuthorizationScheme;
  /** The token, exactly as sent (no decoding). */
  readonly token: string;
}

/** What {@link readAccessToken} accepts besides Bearer. */
export interface ReadAccessTokenOptions {
  /**
   * Whether the `DPoP` scheme is known (the guard's `dpop` is not `off`). When it is not, `DPoP …` is just another
   * scheme. Default false.
   */
  dpop?: boolean;
  /** The message of the bare 401 for a request with no usable credentials. Default: asks for a Bearer token. */
  missingTokenMessage?: string;
}

/**
 * Reads the access token from the `Authorization` header, the only place MCP allows it: `Bearer` (RFC 6750
 * §2.1) and, when enabled, `DPoP` (RFC 9449 §7.1). Form-encoded body tokens (RFC 6750 §2.2) and query tokens
 * (§2.3) are never read.
 *
 * What a client without usable credentials gets is what makes it start the OAuth flow: no header, an empty one, a
 * scheme with no token (`Bearer`), or another scheme (`Basic …`) is a 401 with a bare challenge. So is a request
 * whose only token is an `access_token` query parameter: that token is never read. A query token beside an
 * `Authorization` header is a 400: the client sends a token in two places, and such a URL leaks it into logs.
 *
 * @param headers - The request headers: the `Authorization` value, or every value when the header was sent
 *   several times (Node's `req.headersDistinct`; `req.headers` silently keeps only the first).
 * @param url - The request target (`req.url`, path and query), checked for `access_token`. Optional.
 * @returns The scheme and the token.
 * @throws MissingTokenError (401, bare challenge per RFC 6750 §3.1) as said above.
 * @throws InvalidRequestError (400, `invalid_request`) with reason `token_in_query` for a query token beside the
 *   header, `token_multiple` for two `Authorization` headers (an array of several values, or values joined by a
 *   comma), `token_malformed` for a known scheme whose token is outside the token68 grammar (tabs, several
 *   tokens, trailing spaces…).
 */
export function readAccessToken(
  headers: { readonly authorization?: string | readonly string[] | undefined },
  url?: string,
  options: ReadAccessTokenOptions = {},
): AccessTokenCredentials {
  let value = headers.authorization;
  if (typeof value !== 'string') {
    if (value === undefined || value.length === 0) throw missingToken(url, options);
    if (value.length > 1) {
      if (url !== undefined) rejectQueryToken(url);
      throw multipleTokens();
    }
    value = value[0] as string;
  }
  if (value.length === 0) throw missingToken(url, options);
  if (url !== undefined) rejectQueryToken(url);

  const match = ACCESS_TOKEN_CREDENTIALS.exec(value);
  if (match !== null) {
    if ((match[1] as string).length === 6) return { scheme: 'Bearer', token: match[2] as string };
    if (options.dpop === true) return { scheme: 'DPoP', token: match[2] as string };
    throw new MissingTokenError(options.missingTokenMessage);
  }

  // Cold path from here on: tell the client precisely what was wrong, without echoing the value.
  // A comma never occurs in a single credential of either common scheme; proxies and `fetch` join
  // repeated headers with ", ", so a comma means two credentials.
  if (value.includes(',')) throw multipleTokens();
  const scheme = KNOWN_SCHEME.exec(value)?.[1];
  // Another scheme (`Basic …`, or `DPoP …` with DPoP off), or a known scheme with no token: no usable credentials.
  if (scheme === undefined || (scheme.length === 4 && options.dpop !== true) || EMPTY_CREDENTIALS.test(value)) {
    throw new MissingTokenError(options.missingTokenMessage);
  }
  const isDpop = scheme.length === 4;
  throw new InvalidRequestError(
    isDpop
      ? 'DPoP access token is malformed: expected exactly one token68 after "DPoP " (RFC 9449 section 7.1)'
      : 'Bearer token is malformed: expected exactly one b64token after "Bearer " (RFC 6750 section 2.1)',
    'token_malformed',
  );
}

/** Whether the query string carries `access_token` (RFC 6750 §2.3, which MCP forbids). */
function hasQueryToken(url: string): boolean {
  const start = url.indexOf('?');
  if (start === -1) return false;
  const query = url.slice(start + 1);
  // Only parse when the name could be there, literally or percent-encoded (`access%5Ftoken`).
  if (!query.includes('access') && !query.includes('%')) return false;
  return new URLSearchParams(query).has('access_token');
}

/**
 * The bare 401 of a request with no credentials. Its challenge stays bare (RFC 6750 §3.1), so that the client
 * starts the OAuth flow; when the only token was in the query, the message says that one is never read, so the
 * developer who put it there learns why it was ignored.
 */
function missingToken(url: string | undefined, options: ReadAccessTokenOptions): MissingTokenError {
  const error = new MissingTokenError(options.missingTokenMessage);
  if (url === undefined || !hasQueryToken(url)) return error;
  return new MissingTokenError(`An access_token in the query string is never read (RFC 6750 section 2.3, MCP authorization). ${error.message}`);
}

/** Throws when the query string carries `access_token` beside the header: a token in two places. */
function rejectQueryToken(url: string): void {
  if (hasQueryToken(url)) {
    throw new InvalidRequestError(
      'Access tokens must not be sent in the query string; use the Authorization header only (RFC 6750 section 2.3, MCP authorization)',
      'token_in_query',
    );
  }
}

function multipleTokens(): InvalidRequestError {
  return new InvalidRequestError('Send exactly one Authorization header (RFC 6750 section 2)', 'token_multiple');
}
