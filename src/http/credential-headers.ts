/**
 * Request headers that carry the client's credentials, by lowercase name. The guard reads them and then no one
 * else may: a handler or upstream that sees the access token could replay it (token passthrough, forbidden by MCP
 * 2025-06-18 onward, `basic/authorization` "Access Token Privilege Restriction"), the `DPoP` proof goes with a
 * DPoP-bound token (RFC 9449), `Proxy-Authorization` is for the hop before the guard, and cookies are ambient
 * credentials an MCP endpoint has no use for. Every adapter drops exactly these before a handler runs (the fetch
 * handler, the SDK adapters) and the gateway never forwards them upstream nor lets an identity header take their
 * name.
 */
export const CREDENTIAL_HEADERS: ReadonlySet<string> = new Set(['authorization', 'dpop', 'proxy-authorization', 'cookie']);

/** Whether the header `name` (any case) is one of {@link CREDENTIAL_HEADERS}. */
export function isCredentialHeader(name: string): boolean {
  return CREDENTIAL_HEADERS.has(name.toLowerCase());
}
