/**
 * What `npm run client` says when signing in cannot work or fails: the authorization server's own words first,
 * then a hint only where one is plausible. "Is `npm run auth-server` running?" helps when nothing answers or the
 * resource is unknown there, and misleads on a refusal the server explained.
 *
 * @module
 */
import type { OAuthDiscoveryState } from '@modelcontextprotocol/sdk/client/auth.js';
import { OAuthError } from '@modelcontextprotocol/sdk/server/auth/errors.js';
import { AuthorizationRedirectError } from 'mcp-oauth-guard/client';
import { DEV_AUTH_SERVER_HINT } from './dev/dev-settings.js';

/** What to set when the server names no scopes: on the server, or on this command line. */
const SET_A_SCOPE =
  'give the server a policy naming its scopes (MCP_AUTH_POLICY, or the policy option) or challenge scopes ' +
  '(MCP_AUTH_CHALLENGE_SCOPES), or pass --scope "<scopes>" here';

/**
 * The notice for a sign-in that asks for no scope: the SDK found none in the server's challenge, none in its
 * protected-resource metadata (`scopes_supported` empty or absent) and none given with `--scope`. Undefined when
 * the authorization request names a scope.
 */
export function noScopeNotice(authorizationUrl: URL, discovery: OAuthDiscoveryState | undefined): string | undefined {
  if (authorizationUrl.searchParams.get('scope')) return undefined;
  const metadata = discovery?.resourceMetadata;
  const where = metadata ? `the protected-resource metadata of ${metadata.resource}` : 'the server\'s protected-resource metadata';
  return `no scope to ask for: ${where} lists no scopes_supported, its challenge names none, and no --scope was given. ` +
    `Signing in for no scope, which an authorization server may refuse. To ask for scopes, ${SET_A_SCOPE}.`;
}

/** What the failed sign-in asked for: the MCP URL given, and the authorization request last sent, if any. */
export interface SignInAttempt {
  mcpUrl: URL;
  authorizationUrl: URL | undefined;
}

/**
 * An error of the client's run, explained: an OAuth error (on the redirect, or from the token endpoint through
 * the SDK) with its `error_description` and `error_uri`, the resource asked for and a hint where one fits; a
 * connection refused, with what was not answering. Anything else is returned as is.
 */
export function explainSignInFailure(error: unknown, attempt: SignInAttempt): unknown {
  const resource = attempt.authorizationUrl?.searchParams.get('resource');
  const asked = resource ? `, asked for the resource ${resource}` : '';
  if (error instanceof AuthorizationRedirectError) return new Error(`${error.message}${asked}${refusalHint(error.error, attempt)}`);
  if (error instanceof OAuthError) {
    const uri = error.errorUri ? ` (see ${error.errorUri})` : '';
    return new Error(`the authorization server refused: ${error.errorCode}: ${error.message}${uri}${asked}${refusalHint(error.errorCode, attempt)}`);
  }
  const refused = refusedConnection(error);
  if (refused === undefined) return error;
  if (refused.port === Number(attempt.mcpUrl.port || (attempt.mcpUrl.protocol === 'https:' ? 443 : 80))) {
    return new Error(`nothing answers at ${attempt.mcpUrl.href} (${refused.address}:${refused.port} refused the connection): is the MCP server running there?`);
  }
  return new Error(`could not reach the authorization server (${refused.address}:${refused.port} refused the connection): ${DEV_AUTH_SERVER_HINT}`);
}

/**
 * A hint for an OAuth error, only where a cause outside the error's own words is plausible: an unknown resource
 * (`invalid_target`) is the development server started without it; a refusal of a sign-in that asked for no
 * scope is most likely that.
 */
function refusalHint(code: string, attempt: SignInAttempt): string {
  if (code === 'invalid_target') return ` (${DEV_AUTH_SERVER_HINT})`;
  if (attempt.authorizationUrl && !attempt.authorizationUrl.searchParams.get('scope')) return `. No scope was asked for: ${SET_A_SCOPE}`;
  return '';
}

/** The address and port of a refused connection somewhere in an error's causes (undici puts it in `cause`). */
function refusedConnection(error: unknown): { address: string; port: number } | undefined {
  for (let at = error, depth = 0; at instanceof Error && depth < 5; at = at.cause, depth++) {
    const { code, address, port } = at as Error & { code?: unknown; address?: unknown; port?: unknown };
    if (code === 'ECONNREFUSED') return { address: typeof address === 'string' ? address : 'the address', port: typeof port === 'number' ? port : Number.NaN };
    if (at instanceof AggregateError) for (const inner of at.errors) { const found = refusedConnection(inner); if (found) return found; }
  }
  return undefined;
}
