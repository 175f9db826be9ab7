import type { ServerResponse } from 'node:http';

/** Headers a browser-based MCP client sends (MCP Streamable HTTP, all revisions). */
const MCP_REQUEST_HEADERS =
  'Authorization, Content-Type, Accept, MCP-Protocol-Version, Mcp-Session-Id, Mcp-Method, Mcp-Name, Last-Event-ID';
/** Response headers such a client must be able to read. */
const MCP_EXPOSED_HEADERS = 'WWW-Authenticate, Mcp-Session-Id, MCP-Protocol-Version';

/**
 * CORS for the public metadata document (RFC 9728 is fetched by browser clients too): open to any
 * origin, no credentials, preflight allowing `MCP-Protocol-Version`.
 */
export function setMetadataCors(res: ServerResponse, preflight: boolean): void {
  res.setHeader('Access-Control-Allow-Origin', '*');
  if (preflight) {
    res.setHeader('Access-Control-Allow-Methods', 'GET, HEAD, OPTIONS');
    res.setHeader('Access-Control-Allow-Headers', 'MCP-Protocol-Version, Content-Type, Accept');
    res.setHeader('Access-Control-Max-Age', '86400');
  }
}

/**
 * CORS for the MCP endpoint, for an origin that already passed the origin check: echo it (never `*`,
 * since Authorization is sent), allow the MCP headers, `DPoP` when the guard takes DPoP proofs (RFC 9449 §4.1: a
 * browser client sends its proof in that header), and any `Mcp-Param-*` the browser asks for.
 */
export function setEndpointCors(res: ServerResponse, origin: string, preflight: boolean, requestedHeaders?: string, allowDpop = false): void {
  res.setHeader('Access-Control-Allow-Origin', origin);
  res.setHeader('Vary', 'Origin');
  res.setHeader('Access-Control-Expose-Headers', MCP_EXPOSED_HEADERS);
  if (preflight) {
    res.setHeader('Access-Control-Allow-Methods', 'POST, GET, DELETE, OPTIONS');
    const extra = (requestedHeaders ?? '')
      .split(',')
      .map((h) => h.trim())
      .filter((h) => /^mcp-param-[A-Za-z0-9-]+$/i.test(h));
    const allowed = allowDpop ? `${MCP_REQUEST_HEADERS}, DPoP` : MCP_REQUEST_HEADERS;
    res.setHeader('Access-Control-Allow-Headers', extra.length ? `${allowed}, ${extra.join(', ')}` : allowed);
    res.setHeader('Access-Control-Max-Age', '600');
  }
}
