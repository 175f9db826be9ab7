import { parseAbsoluteUrl } from './settings.js';
import { ConfigurationError } from './errors.js';

/**
 * Computes the canonical URI of an MCP server (RFC 8707 §2; MCP authorization "Canonical Server URI"):
 * lowercase scheme and host (the URL parser does this), no fragment, no query, no trailing slash
 * (a path-less resource is `https://host`, never `https://host/`), default port dropped.
 *
 * Computed once at start-up; the same string is the metadata `resource`, the base of the metadata URL
 * and the expected audience, so the three can never drift apart.
 *
 * @param input - The configured resource URL, e.g. `https://MCP.Example.com/mcp/`.
 * @param setting - The option or variable name reported on error.
 * @throws ConfigurationError when the URL is invalid, not http(s), has credentials, a query or a fragment,
 *   or is http on a host other than loopback.
 */
export function canonicalizeResourceUri(input: string, setting = 'resource'): string {
  const url = parseAbsoluteUrl(input, setting, `"${input}" is not an absolute URL; set it to the public URL of your MCP endpoint, e.g. https://mcp.example.com/mcp`);
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    throw new ConfigurationError(setting, `must be an https URL (got ${url.protocol})`);
  }
  if (url.protocol === 'http:' && !isLoopbackHost(url.hostname)) {
    throw new ConfigurationError(setting, `http is only allowed on loopback hosts (127.0.0.1, [::1], localhost); use https for ${url.host}`);
  }
  if (url.username || url.password) throw new ConfigurationError(setting, 'must not contain credentials');
  if (url.search) throw new ConfigurationError(setting, 'must not contain a query string (RFC 8707 §2)');
  if (input.includes('#')) throw new ConfigurationError(setting, 'must not contain a fragment (RFC 8707 §2)');
  let path = url.pathname;
  while (path.length > 1 && path.endsWith('/')) path = path.slice(0, -1);
  if (path === '/') path = '';
  return `${url.protocol}//${url.host}${path}`;
}

/** True for 127.0.0.0/8, ::1 and `localhost` (RFC 8252 §7.3 loopback; RFC 6761 §6.3). */
export function isLoopbackHost(hostname: string): boolean {
  const h = hostname.startsWith('[') ? hostname.slice(1, -1) : hostname;
  if (h === 'localhost' || h.endsWith('.localhost')) return true;
  if (h === '::1') return true;
  return /^127(?:\.\d{1,3}){3}$/.test(h);
}

/**
 * The well-known URIs of the protected-resource metadata for a canonical resource (RFC 9728 §3.1):
 * the path-suffixed one (`/.well-known/oauth-protected-resource/mcp` for `https://host/mcp`) and the
 * root one. For a path-less resource the two coincide.
 */
export function protectedResourceMetadataUrls(canonicalResource: string): { url: string; paths: string[] } {
  const u = new URL(canonicalResource);
  const suffix = u.pathname === '/' ? '' : u.pathname;
  const pathSuffixed = `/.well-known/oauth-protected-resource${suffix}`;
  const root = '/.well-known/oauth-protected-resource';
  return {
    url: `${u.origin}${pathSuffixed}`,
    paths: pathSuffixed === root ? [root] : [pathSuffixed, root],
  };
}
