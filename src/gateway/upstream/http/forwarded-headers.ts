import type { IncomingHttpHeaders, OutgoingHttpHeaders } from 'node:http';
import type { AuthInfo } from '../../../core/kernel/auth-info.js';
import { connectionHeaderNames, HOP_BY_HOP_HEADERS } from '../../../http/hop-by-hop-headers.js';
import { callerIdentity } from '../caller-identity.js';
import { FORWARDED_REQUEST_HEADERS } from './forwarded-request-headers.js';
import type { IdentityHeaderNames } from './identity-headers.js';

/**
 * Response headers never passed to the client: hop-by-hop (RFC 9110 §7.6.1), `Set-Cookie` (the gateway
 * drops cookies on the way in, so they could never come back; sessions use `Mcp-Session-Id`), CORS (the
 * guard owns it) and `WWW-Authenticate` (the upstream's challenges would send the client to the wrong
 * authorization server).
 */
const DROPPED_RESPONSE_HEADERS = new Set([...HOP_BY_HOP_HEADERS, 'proxy-authenticate', 'proxy-authorization', 'set-cookie', 'www-authenticate']);

/**
 * The headers sent upstream: the allow-listed ones ({@link FORWARDED_REQUEST_HEADERS}), `sessionId` as
 * `Mcp-Session-Id`, and the identity headers. `Mcp-Method`, `Mcp-Name` and `Mcp-Param-*` mirror a body: they go on
 * only with the body the guard checked them against (`bodyChecked`, a POST), never on a GET or DELETE, where
 * nothing was there to check them.
 */
export function forwardedHeaders(incoming: IncomingHttpHeaders, identity: IdentityHeaderNames, auth: AuthInfo, sessionId: string | undefined, bodyChecked: boolean): OutgoingHttpHeaders {
  // Built without deleting from it: a delete turns the object into a slow dictionary for the pool to read.
  const out: OutgoingHttpHeaders = sessionId === undefined ? {} : { 'mcp-session-id': sessionId };
  for (const name in incoming) {
    if (name === 'mcp-session-id') continue;
    if (!bodyChecked && (name === 'mcp-method' || name === 'mcp-name' || name.startsWith('mcp-param-'))) continue;
    if (FORWARDED_REQUEST_HEADERS.has(name) || name.startsWith('mcp-param-')) {
      const value = incoming[name];
      if (value !== undefined) out[name] = value;
    }
  }
  if (identity.subject || identity.clientId || identity.scopes || identity.issuer) {
    const caller = callerIdentity(auth);
    if (identity.subject && caller.subject !== undefined) out[identity.subject] = caller.subject;
    if (identity.clientId && caller.clientId !== undefined) out[identity.clientId] = caller.clientId;
    if (identity.scopes) out[identity.scopes] = caller.scopes;
    if (identity.issuer && caller.issuer !== undefined) out[identity.issuer] = caller.issuer;
  }
  return out;
}

/**
 * The upstream's response headers as passed to the client: all but {@link DROPPED_RESPONSE_HEADERS},
 * `Access-Control-*`, and the headers `Connection` names (hop-by-hop as well, RFC 9110 §7.6.1).
 */
export function responseHeaders(incoming: IncomingHttpHeaders): OutgoingHttpHeaders {
  const out: OutgoingHttpHeaders = {};
  // `keep-alive`, the usual value, names only a header dropped anyway: no list to build per answer.
  const connection = incoming.connection;
  const named = connection === undefined || connection === 'keep-alive' ? undefined : connectionHeaderNames(connection);
  for (const name in incoming) {
    if (DROPPED_RESPONSE_HEADERS.has(name) || name.startsWith('access-control-') || (named !== undefined && named.includes(name))) continue;
    const value = incoming[name];
    if (value !== undefined) out[name] = value;
  }
  return out;
}
