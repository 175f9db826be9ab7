/**
 * Discovery, steps 2 and 3 of the demo client's flow: the MCP server's protected-resource metadata
 * (RFC 9728), then the authorization server it names (RFC 8414, then OpenID discovery) through openid-client.
 *
 * @module
 */
import * as oidc from 'openid-client';
import { canonicalResourceUrl, isLoopbackHttpUrl, protectedResourceMetadataCandidates } from './resource-url.js';
import type { EmitTranscript } from './transcript.js';

/** The part of an RFC 9728 document the client uses; `resource` is checked to be the MCP server. */
export interface ProtectedResourceMetadata {
  resource: string;
  authorization_servers?: string[];
  scopes_supported?: string[];
}

/**
 * Fetches protected-resource metadata: first from the challenge's `resource_metadata` when there was one,
 * then from the path-suffixed and root well-known URLs. Refuses metadata naming another resource.
 */
export async function fetchProtectedResourceMetadata(
  mcpUrl: URL,
  resourceMetadataUrl: string | undefined,
  emit: EmitTranscript,
): Promise<ProtectedResourceMetadata> {
  const expected = canonicalResourceUrl(mcpUrl);
  const candidates = [...(resourceMetadataUrl ? [resourceMetadataUrl] : []), ...protectedResourceMetadataCandidates(mcpUrl)];
  let metadata: { resource?: string; authorization_servers?: string[]; scopes_supported?: string[] } | undefined;
  let from: string | undefined;
  for (const candidate of candidates) {
    const response = await fetch(candidate, { headers: { accept: 'application/json' } }).catch(() => undefined);
    if (!response?.ok) {
      await response?.body?.cancel();
      continue;
    }
    metadata = (await response.json()) as typeof metadata;
    from = candidate;
    break;
  }
  if (!metadata || !from) throw new Error(`no protected resource metadata found (tried ${candidates.join(', ')})`);
  emit('resource-metadata', `protected resource metadata from ${from}`, { ...metadata });
  // RFC 9728 section 3.3: metadata naming another resource must not be used (it could steer tokens elsewhere).
  if (!metadata.resource || canonicalResourceUrl(metadata.resource) !== expected) {
    throw new Error(`protected resource metadata names resource ${metadata.resource ?? '(none)'}, expected ${expected}`);
  }
  return metadata as ProtectedResourceMetadata;
}

/** What {@link discoverAuthorizationServer} found. */
export interface DiscoveredAuthorizationServer {
  server: oidc.ServerMetadata;
  /**
   * openid-client configuration for the configured client id; with dynamic registration still to come, its
   * client id is a placeholder and it must not be used for requests.
   */
  config: oidc.Configuration;
}

/**
 * Discovers the first authorization server the metadata lists (plain http on loopback only), and refuses one
 * that does not advertise PKCE S256. With a configured `clientId`, reports which kind of client id it is.
 */
export async function discoverAuthorizationServer(
  metadata: ProtectedResourceMetadata,
  clientId: string | undefined,
  emit: EmitTranscript,
): Promise<DiscoveredAuthorizationServer> {
  const issuer = metadata.authorization_servers?.[0];
  if (!issuer) throw new Error('protected resource metadata lists no authorization_servers');
  const issuerUrl = new URL(issuer);
  if (issuerUrl.protocol !== 'https:' && !isLoopbackHttpUrl(issuerUrl)) {
    throw new Error(`authorization server ${issuer} is plain http on a non-loopback host`);
  }
  const execute = isLoopbackHttpUrl(issuerUrl) ? [oidc.allowInsecureRequests] : [];

  let config: oidc.Configuration | undefined;
  let lastError: unknown;
  for (const algorithm of ['oauth2', 'oidc'] as const) {
    try {
      // The client id is not known yet when registering dynamically; a placeholder is replaced after it.
      config = await oidc.discovery(issuerUrl, clientId ?? 'unregistered', undefined, oidc.None(), {
        execute,
        algorithm,
      });
      break;
    } catch (error) {
      lastError = error;
    }
  }
  if (!config) throw new Error(`authorization server discovery failed for ${issuer}`, { cause: lastError });
  const server = config.serverMetadata();
  emit('authorization-server', `authorization server ${server.issuer}`, {
    issuer: server.issuer,
    authorization_endpoint: server.authorization_endpoint,
    token_endpoint: server.token_endpoint,
    registration_endpoint: server.registration_endpoint,
    code_challenge_methods_supported: server.code_challenge_methods_supported,
    client_id_metadata_document_supported: server.client_id_metadata_document_supported,
  });
  if (!server.code_challenge_methods_supported?.includes('S256')) {
    // MCP: clients MUST refuse to proceed without PKCE S256 support advertised.
    throw new Error('authorization server does not advertise PKCE S256');
  }
  if (clientId) {
    const kind = /^https:\/\//.test(clientId)
      ? server.client_id_metadata_document_supported
        ? 'Client ID Metadata Document'
        : 'pre-registered (the AS does not advertise Client ID Metadata Documents)'
      : 'pre-registered';
    emit('registration', `using client id ${clientId} (${kind})`);
  }
  return { server, config };
}
