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
}): ProtectedResourceMetadata {
  const doc: ProtectedResourceMetadata = {
    resource: input.resource,
    authorization_servers: [...input.authorizationServers],
    scopes_supported: input.scopesSupported.filter((s) => s !== 'offline_access'),
    bearer_methods_supported: ['header'],
  };
  if (input.resourceName) doc.resource_name = input.resourceName;
  if (input.resourceDocumentation) doc.resource_documentation = input.resourceDocumentation;
  return doc;
}
