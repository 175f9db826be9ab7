/**
 * The OAuth 2.0 Protected Resource Metadata document (RFC 9728 §2) as mcp-oauth-guard serves it.
 */
export interface ProtectedResourceMetadata {
  /** The canonical resource URI (RFC 9728 §2 `resource`). */
  resource: string;
  /** Issuer identifiers of the authorization servers (RFC 9728 §2); never empty (MCP requires one). */
  authorization_servers: string[];
  /** Scopes a client can request for basic use (RFC 9728 §2); never includes `offline_access`. */
  scopes_supported: string[];
  /** Always `["header"]`: tokens are accepted in the Authorization header only (RFC 6750 §2.1). */
  bearer_methods_supported: ['header'];
  /** Human-readable name (RFC 9728 §2). */
  resource_name?: string;
  /** URL of human-readable documentation (RFC 9728 §2). */
  resource_documentation?: string;
  /** JWS algorithms accepted for DPoP proofs (RFC 9728 §2); present unless `dpop` is `off`. */
  dpop_signing_alg_values_supported?: string[];
  /** `true` when only DPoP-bound tokens are accepted (`dpop: 'require'`, RFC 9728 §2); omitted (false) otherwise. */
  dpop_bound_access_tokens_required?: boolean;
  /** Further RFC 9728 §2 fields, if configured. */
  [extension: string]: unknown;
}

/** Builds the metadata document. Pure; the caller serializes it once. */
export function buildProtectedResourceMetadata(input: {
  resource: string;
  authorizationServers: readonly string[];
  scopesSupported: readonly string[];
  resourceName?: string;
  resourceDocumentation?: string;
  /** Algorithms accepted for DPoP proofs; omitted when DPoP is off. */
  dpopSigningAlgValues?: readonly string[];
  /** Whether only DPoP-bound tokens are accepted. */
  dpopBoundAccessTokensRequired?: boolean;
}): ProtectedResourceMetadata {
  const doc: ProtectedResourceMetadata = {
    resource: input.resource,
    authorization_servers: [...input.authorizationServers],
    scopes_supported: input.scopesSupported.filter((s) => s !== 'offline_access'),
    bearer_methods_supported: ['header'],
  };
  if (input.resourceName) doc.resource_name = input.resourceName;
  if (input.resourceDocumentation) doc.resource_documentation = input.resourceDocumentation;
  if (input.dpopSigningAlgValues) doc.dpop_signing_alg_values_supported = [...input.dpopSigningAlgValues];
  if (input.dpopBoundAccessTokensRequired) doc.dpop_bound_access_tokens_required = true;
  return doc;
}
