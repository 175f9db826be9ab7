/**
 * URL rules of the demo client: how resource URLs are compared, which plain-http URLs it accepts, and where
 * it looks for protected-resource metadata.
 *
 * @module
 */

/**
 * The canonical form of a resource URL used for comparison (RFC 8707 section 2 and the MCP spec): lowercase
 * scheme and host (the URL parser does that), no fragment, no trailing slash.
 */
export function canonicalResourceUrl(url: string | URL): string {
  const parsed = new URL(url);
  parsed.hash = '';
  const path = parsed.pathname === '/' ? '' : parsed.pathname.replace(/\/+$/, '');
  return `${parsed.protocol}//${parsed.host}${path}${parsed.search}`;
}

/** True for `http:` URLs on a loopback host, the only plain-http URLs this client accepts. */
export function isLoopbackHttpUrl(url: string | URL): boolean {
  const parsed = new URL(url);
  return parsed.protocol === 'http:' && ['127.0.0.1', 'localhost', '[::1]'].includes(parsed.hostname);
}

/**
 * The well-known protected-resource metadata URLs to try after the challenge's `resource_metadata`, in the
 * order the MCP spec gives: path-suffixed (RFC 9728 section 3.1), then root.
 */
export function protectedResourceMetadataCandidates(mcpUrl: string | URL): string[] {
  const url = new URL(mcpUrl);
  const path = url.pathname === '/' ? '' : url.pathname.replace(/\/+$/, '');
  const candidates = [`${url.origin}/.well-known/oauth-protected-resource${path}`];
  if (path) candidates.push(`${url.origin}/.well-known/oauth-protected-resource`);
  return candidates;
}
