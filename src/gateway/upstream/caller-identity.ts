import type { AuthInfo } from '../../core/kernel/auth-info.js';
import { encodeHeaderValue } from '../../core/wire/header-value-encoding.js';
import { isScopeToken } from '../../core/wire/scope-token.js';

/**
 * Who a request comes from, as the gateway tells its upstream: in identity headers (`X-MCP-Subject`, …) to an
 * HTTP upstream, in `MCP_CALLER_*` variables to a stdio one. Each value is {@link encodeHeaderValue}'s form of
 * the verified claim: plain visible ASCII as it is, anything else `=?base64?…?=`, so two callers never read
 * the same and nothing is stripped. A field is absent when the token does not carry it.
 */
export interface CallerIdentity {
  /** The token's `sub`. */
  readonly subject?: string;
  /** The OAuth client the token was issued to; absent when the token names none. */
  readonly clientId?: string;
  /** The granted scopes, space-separated: exactly the list the policy decided on (scope tokens only). */
  readonly scopes: string;
  /** The token's `iss`: with several issuers, a subject is unique only within its issuer. */
  readonly issuer?: string;
}

/**
 * The caller's identity from the verified token, encoded for a header or a variable (see {@link CallerIdentity}).
 * Scopes are scope tokens already (the guard keeps no other); they are filtered again with the same test so a
 * hand-built `AuthInfo` cannot make the upstream read a scope the policy did not.
 */
export function callerIdentity(auth: AuthInfo): CallerIdentity {
  const { sub, iss } = auth.extra;
  return {
    ...(typeof sub === 'string' ? { subject: encodeHeaderValue(sub) } : {}),
    ...(auth.clientId ? { clientId: encodeHeaderValue(auth.clientId) } : {}),
    scopes: encodeHeaderValue(auth.scopes.filter(isScopeToken).join(' ')),
    ...(typeof iss === 'string' ? { issuer: encodeHeaderValue(iss) } : {}),
  };
}
