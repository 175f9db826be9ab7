/**
 * The URLs the gateway's OAuth client is known by at an upstream's authorization server: its one redirect URI and
 * its Client ID Metadata Document (draft-ietf-oauth-client-id-metadata-document), which the gateway's pages serve.
 */

/** Name used for the single upstream (server `""`) in a client metadata document's URL. */
const SINGLE_UPSTREAM_NAME = 'upstream';

/**
 * The gateway's redirect URI, the same for every upstream and for the gateway's own sign-in (the `state` tells
 * them apart): `<gateway origin>/connect/callback`, compared exactly by the authorization server.
 *
 * @param gatewayOrigin - the gateway's public origin, e.g. `https://gateway.example.com` (a path is ignored).
 * @example connectCallbackUrl('https://gateway.example.com'); // 'https://gateway.example.com/connect/callback'
 */
export function connectCallbackUrl(gatewayOrigin: string | URL): string {
  return `${new URL(gatewayOrigin).origin}/connect/callback`;
}

/**
 * Where the gateway serves its client metadata document for `server`, which is also the client id:
 * `<gateway origin>/connect/client-metadata/<server>.json` (`upstream.json` for the single upstream, `""`).
 *
 * @example clientMetadataDocumentUrl('https://gw.example.com', 'notes'); // 'https://gw.example.com/connect/client-metadata/notes.json'
 */
export function clientMetadataDocumentUrl(gatewayOrigin: string | URL, server: string): string {
  return `${new URL(gatewayOrigin).origin}/connect/client-metadata/${encodeURIComponent(server === '' ? SINGLE_UPSTREAM_NAME : server)}.json`;
}

/** A Client ID Metadata Document: RFC 7591 §2 client metadata, whose `client_id` is the document's own URL. */
export interface ClientMetadataDocument {
  client_id: string;
  client_name: string;
  redirect_uris: [string];
  grant_types: ['authorization_code', 'refresh_token'];
  response_types: ['code'];
  /** A document cannot hold a shared secret: the gateway is a public client there, bound by PKCE. */
  token_endpoint_auth_method: 'none';
}

/**
 * The document the gateway serves at {@link clientMetadataDocumentUrl} (as `application/json`): who the client
 * is, its one redirect URI, the grants it uses.
 *
 * @param clientName - shown by the authorization server on its consent page. Default `mcp-oauth-guard`.
 */
export function clientMetadataDocument(gatewayOrigin: string | URL, server: string, clientName = 'mcp-oauth-guard'): ClientMetadataDocument {
  return {
    client_id: clientMetadataDocumentUrl(gatewayOrigin, server),
    client_name: clientName,
    redirect_uris: [connectCallbackUrl(gatewayOrigin)],
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
    token_endpoint_auth_method: 'none',
  };
}
