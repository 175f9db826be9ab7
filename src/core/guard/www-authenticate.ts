import type { BearerErrorCode, ChallengeErrorCode } from '../kernel/errors.js';

/** Parameters of a Bearer challenge (RFC 6750 §3; RFC 9728 §5.1 `resource_metadata`). */
export interface BearerChallengeParams {
  /** URL of the protected-resource metadata (RFC 9728 §5.1). */
  resourceMetadata: string;
  /** Scopes to request, space-separated on the wire (RFC 6750 §3). Omitted when empty. */
  scopes?: readonly string[];
  /** RFC 6750 §3.1 error code; omitted for a request with no credentials. */
  error?: BearerErrorCode;
  /** Human-readable description (RFC 6750 §3). */
  errorDescription?: string;
}

/**
 * Escapes a value for an RFC 9110 §5.6.4 quoted-string: backslash and double quote are escaped;
 * control characters (which a quoted-string cannot hold, and which could split headers) are
 * replaced by spaces.
 */
export function quoteHeaderValue(value: string): string {
  // eslint-disable-next-line no-control-regex
  return `"${value.replace(/[\u0000-\u0008\u000a-\u001f\u007f]/g, ' ').replace(/[\\"]/g, '\\$&')}"`;
}

/**
 * Builds a `WWW-Authenticate: Bearer …` value. Order: error, error_description, scope, resource_metadata
 * (any order is valid; this one reads best).
 */
export function formatBearerChallenge(p: BearerChallengeParams): string {
  const parts: string[] = [];
  if (p.error) parts.push(`error=${quoteHeaderValue(p.error)}`);
  if (p.error && p.errorDescription) parts.push(`error_description=${quoteHeaderValue(asciiOnly(p.errorDescription))}`);
  if (p.scopes && p.scopes.length > 0) parts.push(`scope=${quoteHeaderValue(p.scopes.join(' '))}`);
  parts.push(`resource_metadata=${quoteHeaderValue(p.resourceMetadata)}`);
  return `Bearer ${parts.join(', ')}`;
}

/** Parameters of a DPoP challenge (RFC 9449 §7.1), which shares the Bearer parameters and adds `algs`. */
export interface DpopChallengeParams {
  /** URL of the protected-resource metadata (RFC 9728 §5.1). */
  resourceMetadata: string;
  /** JWS algorithms accepted for proofs, space-separated on the wire (RFC 9449 §7.1 `algs`). */
  algs: readonly string[];
  /** Scopes to request (RFC 6750 §3, which RFC 9449 §7.1 reuses). Omitted when empty. */
  scopes?: readonly string[];
  /** RFC 6750 §3.1 or RFC 9449 §7.1 (`invalid_dpop_proof`) error code; omitted for a request with no credentials. */
  error?: ChallengeErrorCode;
  /** Human-readable description. */
  errorDescription?: string;
}

/**
 * Builds a `DPoP …` challenge (RFC 9449 §7.1). Order: error, error_description, algs, scope, resource_metadata.
 *
 * @example
 * formatDpopChallenge({ resourceMetadata: 'https://mcp.example.com/.well-known/oauth-protected-resource/mcp', algs: ['ES256'] });
 * // 'DPoP algs="ES256", resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp"'
 */
export function formatDpopChallenge(p: DpopChallengeParams): string {
  const parts: string[] = [];
  if (p.error) parts.push(`error=${quoteHeaderValue(p.error)}`);
  if (p.error && p.errorDescription) parts.push(`error_description=${quoteHeaderValue(asciiOnly(p.errorDescription))}`);
  parts.push(`algs=${quoteHeaderValue(p.algs.join(' '))}`);
  if (p.scopes && p.scopes.length > 0) parts.push(`scope=${quoteHeaderValue(p.scopes.join(' '))}`);
  parts.push(`resource_metadata=${quoteHeaderValue(p.resourceMetadata)}`);
  return `DPoP ${parts.join(', ')}`;
}

/** RFC 6750 §3: error_description is %x20-21 / %x23-5B / %x5D-7E; keep it printable ASCII. */
function asciiOnly(s: string): string {
  return s.replace(/[^\x20-\x7e]/g, '?');
}
