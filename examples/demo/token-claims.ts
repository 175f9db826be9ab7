/**
 * The claims of an access token, read without verification: the demo client shows them in its transcript
 * and falls back to their `scope` when the token response names none. The MCP server does the verifying.
 *
 * @module
 */
import { decodeJwt } from 'jose';

/** Decodes a JWT's claims for display, or undefined for an opaque token. */
export function peekClaims(token: string): Record<string, unknown> | undefined {
  if (token.split('.').length !== 3) return undefined;
  try {
    return decodeJwt(token) as Record<string, unknown>;
  } catch {
    return undefined;
  }
}
