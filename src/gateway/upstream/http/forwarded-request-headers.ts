/**
 * Request headers forwarded to the upstream, by lower-case name; `mcp-param-*` too. Everything else is
 * dropped: the credentials (`CREDENTIAL_HEADERS`; MCP forbids token passthrough), hop-by-hop headers, and
 * `Accept-Encoding` (so the upstream answers uncompressed and list results can be filtered).
 */
export const FORWARDED_REQUEST_HEADERS: ReadonlySet<string> = new Set([
  'accept',
  'accept-language',
  'content-type',
  'user-agent',
  'mcp-session-id',
  'mcp-protocol-version',
  'last-event-id',
  'mcp-method',
  'mcp-name',
]);
