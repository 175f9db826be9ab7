import { ConfigurationError } from '../../../core/kernel/errors.js';
import { CREDENTIAL_HEADERS } from '../../../http/credential-headers.js';
import { HOP_BY_HOP_HEADERS } from '../../../http/hop-by-hop-headers.js';
import { FORWARDED_REQUEST_HEADERS } from './forwarded-request-headers.js';

/** Header names used when identity headers are turned on without naming them. */
export const DEFAULT_IDENTITY_HEADERS: Readonly<Required<IdentityHeaderNames>> = {
  subject: 'X-MCP-Subject',
  clientId: 'X-MCP-Client-Id',
  scopes: 'X-MCP-Scopes',
  issuer: 'X-MCP-Issuer',
};

/**
 * Names of request headers that carry the caller's verified identity to the upstream server. Each is
 * set from the verified token, never from the client: a client-sent header of the same name is dropped
 * like every header outside the allow-list. All are off (unset) by default.
 *
 * Values are exact: plain visible ASCII (0x21–0x7E, inner spaces allowed) as it is, any other value as
 * `=?base64?<base64 of its UTF-8>?=` (MCP 2026-07-28's encoding for mirrored headers; a plain value of that
 * shape is encoded too), so distinct identities never read the same. Decode with `decodeMirroredHeaderValue`
 * (`mcp-oauth-guard/core`).
 */
export interface IdentityHeaderNames {
  /** Header for the token's subject (`sub`), e.g. `X-MCP-Subject`. */
  subject?: string;
  /** Header for the OAuth client id, e.g. `X-MCP-Client-Id`. */
  clientId?: string;
  /**
   * Header for the granted scopes, space-separated, e.g. `X-MCP-Scopes`: the scopes the policy decided on, which
   * are the token's valid scope tokens (RFC 6749 §3.3); an entry with a space, a non-ASCII character, `"` or `\`
   * is no scope and is left out of both.
   */
  scopes?: string;
  /**
   * Header for the token's issuer (`iss`), e.g. `X-MCP-Issuer`. With several trusted issuers a subject is unique
   * only within its issuer: an upstream that keys users must use issuer and subject together.
   */
  issuer?: string;
}

// Names an identity header may not take: the client's credentials (never forwarded) and the framing of the request.
const RESERVED_IDENTITY_NAMES = new Set([...CREDENTIAL_HEADERS, ...HOP_BY_HOP_HEADERS, 'host', 'content-length', 'expect', 'forwarded']);

const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/** Whether `name` is a valid header field name (an RFC 9110 §5.1 token). */
export function isHeaderName(name: string): boolean {
  return HEADER_NAME.test(name);
}

/**
 * Validates identity header names and returns them lower-cased. A name the client may send itself
 * (`Mcp-*`, the forwarded headers, `Authorization`, `Cookie`, …) is refused: the upstream could not tell the
 * gateway's value from the client's.
 *
 * @param setting - Reported in errors, e.g. `MCP_AUTH_IDENTITY_HEADERS`.
 * @throws ConfigurationError naming `setting`.
 * @example
 * checkIdentityHeaders({ subject: 'X-MCP-Subject' }, 'identityHeaders'); // { subject: 'x-mcp-subject' }
 */
export function checkIdentityHeaders(names: IdentityHeaderNames | undefined, setting: string): IdentityHeaderNames {
  if (names === undefined) return {};
  const out: IdentityHeaderNames = {};
  for (const key of ['subject', 'clientId', 'scopes', 'issuer'] as const) {
    const name = names[key];
    if (name === undefined) continue;
    const lower = typeof name === 'string' ? name.toLowerCase() : '';
    if (!isHeaderName(lower)) throw new ConfigurationError(setting, `${key}: "${String(name)}" is not a valid header name`);
    if (FORWARDED_REQUEST_HEADERS.has(lower) || lower.startsWith('mcp-') || RESERVED_IDENTITY_NAMES.has(lower)) {
      throw new ConfigurationError(setting, `${key}: "${name}" is reserved; choose a name such as X-MCP-Subject`);
    }
    out[key] = lower;
  }
  return out;
}
