/**
 * The verified identity behind a request, shaped like the MCP TypeScript SDK's `AuthInfo`
 * (`{ token, clientId, scopes, expiresAt, resource, extra }`) so it can be handed to SDK
 * servers unchanged (`req.auth` in SDK 1.x, `extra.authInfo` in tool handlers).
 */
export interface AuthInfo {
  /** The raw access token. Never log it; it is here only because the SDK's shape has it. */
  token: string;
  /** The OAuth client the token was issued to (`client_id`, else `azp`, else `""`). */
  clientId: string;
  /** Scopes granted to the token, as sent (`scope` split on spaces, or `scp`). Not expanded by the hierarchy. */
  scopes: string[];
  /** Expiry, in seconds since the Unix epoch (`exp`). */
  expiresAt?: number;
  /** The resource the token was accepted for: this server's canonical URI (RFC 8707). */
  resource?: URL;
  /**
   * Everything else worth knowing: `sub` (subject), `iss`, `aud`, `jti`, and the full `claims`
   * (JWT payload or introspection response). `extra.iss` and `extra.sub` together are the stable user key: with
   * several trusted issuers, `sub` alone is unique only within its issuer.
   */
  extra: AuthInfoExtra;
}

/** Extra fields of {@link AuthInfo}. */
export interface AuthInfoExtra {
  /** The subject (`sub`) the token speaks for, when present. */
  sub?: string;
  /** The issuer (`iss`). */
  iss?: string;
  /** All claims, as verified (JWT) or as returned by introspection (RFC 7662 §2.2). */
  claims: Readonly<Record<string, unknown>>;
  /** How the token was verified. */
  tokenType: 'jwt' | 'introspection';
  [key: string]: unknown;
}
