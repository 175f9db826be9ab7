/**
 * The URLs the gateway's OAuth clients are known by: the redirect URI of its own sign-in, the redirect URI of each
 * upstream's authorization server, and each upstream's Client ID Metadata Document
 * (draft-ietf-oauth-client-id-metadata-document), which the gateway's pages serve.
 */

/**
 * Name used for the single upstream (server `""`) wherever the gateway must name it: its redirect URI, its client
 * metadata document's URL, the pages' forms and log lines.
 */
export const SINGLE_UPSTREAM_NAME = 'upstream';

/**
 * How `server` is named outside the gateway: its configuration name, or {@link SINGLE_UPSTREAM_NAME} for the
 * single upstream (`""`), which has none of its own.
 *
 * @example serverPublicName(''); // 'upstream'
 */
export function serverPublicName(server: string): string {
  return server === '' ? SINGLE_UPSTREAM_NAME : server;
}

/** The path segment naming `server` in the gateway's per-server URLs. */
const serverSegment = (server: string): string => encodeURIComponent(serverPublicName(server));

/**
 * The redirect URI of the gateway's own sign-in (`MCP_AUTH_LOGIN_CLIENT_ID` at the login issuer):
 * `<gateway origin>/connect/callback`, compared exactly by the issuer. Upstreams have their own, see
 * {@link upstreamCallbackUrl}.
 *
 * @param gatewayOrigin - the gateway's public origin, e.g. `https://gateway.example.com` (a path is ignored).
 * @example connectCallbackUrl('https://gateway.example.com'); // 'https://gateway.example.com/connect/callback'
 */
export function connectCallbackUrl(gatewayOrigin: string | URL): string {
  return `${new URL(gatewayOrigin).origin}/connect/callback`;
}

/**
 * The redirect URI of the gateway's client at `server`'s authorization server:
 * `<gateway origin>/connect/callback/<server>` (`upstream` for the single upstream, `""`). One per server, never
 * shared, is the mix-up defence of RFC 9700 §4.4.2: the path a code comes back to says which server issued it, so a
 * code from one server is never taken to another's token endpoint, even by a server that does not send `iss`.
 *
 * @example upstreamCallbackUrl('https://gw.example.com', 'notes'); // 'https://gw.example.com/connect/callback/notes'
 */
export function upstreamCallbackUrl(gatewayOrigin: string | URL, server: string): string {
  return `${new URL(gatewayOrigin).origin}/connect/callback/${serverSegment(server)}`;
}

/**
 * Where the gateway serves its client metadata document for `server`, which is also the client id:
 * `<gateway origin>/connect/client-metadata/<server>.json` (`upstream.json` for the single upstream, `""`).
 *
 * @example clientMetadataDocumentUrl('https://gw.example.com', 'notes'); // 'https://gw.example.com/connect/client-metadata/notes.json'
 */
export function clientMetadataDocumentUrl(gatewayOrigin: string | URL, server: string): string {
  return `${new URL(gatewayOrigin).origin}/connect/client-metadata/${serverSegment(server)}.json`;
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
 * is, its one redirect URI (this server's, {@link upstreamCallbackUrl}), the grants it uses.
 *
 * @param clientName - shown by the authorization server on its consent page. Default `mcp-oauth-guard`.
 */
export function clientMetadataDocument(gatewayOrigin: string | URL, server: string, clientName = 'mcp-oauth-guard'): ClientMetadataDocument {
  return {
    client_id: clientMetadataDocumentUrl(gatewayOrigin, server),
    client_name: clientName,
    redirect_uris: [upstreamCallbackUrl(gatewayOrigin, server)],
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
    token_endpoint_auth_method: 'none',
  };
}
