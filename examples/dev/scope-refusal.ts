/**
 * An authorization request that asks for no scope this server grants is refused up front with `invalid_scope`
 * and a description of what to ask for (RFC 6749 section 3.3 lets a server fail a request without a scope).
 * Left to oidc-provider, it would run the sign-in and then answer `access_denied` with no description, which
 * sends the developer looking at the wrong thing. The usual cause is an MCP server whose metadata lists no
 * `scopes_supported` and whose 401 challenge names none: its clients then ask for nothing.
 *
 * @module
 */
import type { AuthorizationContext, Check as CheckType, InteractionCheckClass } from 'oidc-provider';

/** Scopes that are not a resource's but still make a request grantable here: OpenID Connect sign-in. */
const GRANTABLE_WITHOUT_RESOURCE = 'openid';

/**
 * Why a request asking for `scopeParam` for these resources (URL to the scopes each offers) would be granted
 * nothing, or undefined when it asks for something this server grants.
 */
export function describeScopeRefusal(scopeParam: string | undefined, resources: ReadonlyMap<string, ReadonlySet<string>>): string | undefined {
  const requested = (scopeParam ?? '').split(' ').filter(Boolean);
  if (requested.includes(GRANTABLE_WITHOUT_RESOURCE)) return undefined;
  for (const offered of resources.values()) if (requested.some((scope) => offered.has(scope))) return undefined;
  const [resource, offered] = [...resources][0] ?? [];
  if (resource === undefined || offered === undefined) {
    return 'the request names no resource (the RFC 8707 "resource" parameter, the MCP server\'s URL) and asks for no scope this server grants: name the MCP server and ask for one of its scopes';
  }
  const choices = [...offered].join(' ');
  if (requested.length > 0) return `none of the scopes requested (${requested.join(' ')}) is one ${resource} offers here (${choices})`;
  return (
    `no scope was requested for ${resource}: ask for one or more of ${choices}. An MCP client asks for the scopes ` +
    "of the server's 401 challenge, else those its metadata lists in scopes_supported; a server with no policy and " +
    'no challenge scopes lists none, so give it a policy (or challenge scopes)'
  );
}

/**
 * A check for oidc-provider's interaction policy that throws `invalid_scope` with the description above, before
 * any sign-in. It goes first in the login prompt, which is evaluated for every authorization request, after the
 * client, its redirect URI and the resources have been checked, so the error is redirected to the client.
 */
export function scopeRefusalCheck(
  Check: InteractionCheckClass,
  InvalidScope: new (description: string) => Error,
): CheckType {
  return new Check('no_grantable_scope', 'no scope this server grants was requested', (ctx: AuthorizationContext) => {
    const resources = new Map(Object.entries(ctx.oidc.resourceServers ?? {}).map(([url, server]) => [url, server.scopes]));
    const description = describeScopeRefusal(typeof ctx.oidc.params.scope === 'string' ? ctx.oidc.params.scope : undefined, resources);
    if (description !== undefined) throw new InvalidScope(description);
    return false;
  });
}
