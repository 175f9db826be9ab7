/**
 * `npm run token`: prints an access token from the development authorization server (`npm run auth-server`),
 * for curl and scripts. It uses the client_credentials grant of the server's service client, which the
 * development server enables with a known secret for this purpose only, and RFC 8707 `resource`, so the token's
 * `aud` is the MCP endpoint, as the guard requires. The token speaks for that client (its `sub` is the client
 * id), not for a user: for a user's token, sign in with the demo's PKCE client.
 *
 * @example
 * TOKEN=$(npm run -s token -- --issuer http://127.0.0.1:9400 --resource http://127.0.0.1:8080/mcp --scope calc:use)
 * curl -H "Authorization: Bearer $TOKEN" …
 */
import { decodeJwt } from 'jose';
import * as client from 'openid-client';
import { SERVICE_CLIENT_ID } from './authorization-server.js';
import { parseOrExit, readFlags } from './command-line.js';
import { DEV_AUTH_SERVER_HINT, DEV_AUTH_SERVER_PORT, DEV_SERVICE_CLIENT_SECRET } from './dev-settings.js';

const USAGE = `Usage: npm run token -- --resource <url> [--issuer http://127.0.0.1:${DEV_AUTH_SERVER_PORT}] [--scope "a b"]

Prints an access token for <url> (its aud) from the development authorization server (npm run auth-server).
With npm's -s, only the token is printed: TOKEN=$(npm run -s token -- --resource …)

  --resource <url>   the MCP endpoint the token is for (required)
  --issuer <url>     the development server, default http://127.0.0.1:${DEV_AUTH_SERVER_PORT}
  --scope <scopes>   space- or comma-separated scopes to request
  --help             this text`;

function readArgs(argv: readonly string[]): { issuer: string; resource: string; scope: string } | 'help' {
  const flags = readFlags(argv, ['--issuer', '--resource', '--scope']);
  if (flags === 'help') return 'help';
  const { values, problems } = flags;
  const resource = values.get('--resource')?.at(-1);
  if (resource === undefined) problems.push('--resource is required: the MCP endpoint the token is for');
  if (problems.length > 0) throw new Error(`${problems.join('; ')}\n\n${USAGE}`);
  return {
    issuer: values.get('--issuer')?.at(-1) ?? `http://127.0.0.1:${DEV_AUTH_SERVER_PORT}`,
    resource: resource as string,
    scope: (values.get('--scope') ?? []).join(' ').split(/[\s,]+/).filter(Boolean).join(' '),
  };
}

async function main(): Promise<void> {
  const args = parseOrExit(() => readArgs(process.argv.slice(2)), USAGE);
  if (args === undefined) return;
  await printToken(args).catch((error: unknown) => {
    const detail = error instanceof client.ResponseBodyError ? `${error.error}${error.error_description ? `: ${error.error_description}` : ''}` : error instanceof Error ? error.message : String(error);
    // The issuer is named: "fetch failed" alone does not say which server was down or mistyped.
    console.error(`token: ${detail}, from the issuer ${args.issuer} (${DEV_AUTH_SERVER_HINT})`);
    process.exitCode = 1;
  });
}

async function printToken(args: { issuer: string; resource: string; scope: string }): Promise<void> {
  const issuer = new URL(args.issuer);
  const config = await client.discovery(issuer, SERVICE_CLIENT_ID, DEV_SERVICE_CLIENT_SECRET, undefined, {
    // The development server is plain http on loopback.
    execute: issuer.protocol === 'http:' ? [client.allowInsecureRequests] : [],
    timeout: 5,
  });
  const parameters: Record<string, string> = { resource: args.resource };
  if (args.scope) parameters['scope'] = args.scope;
  const tokens = await client.clientCredentialsGrant(config, parameters);
  const granted = grantedScope(tokens);
  // A misspelt scope is dropped by the server, not refused: without this line the token silently lacks it.
  if (args.scope !== '' && granted !== undefined && !sameScopes(granted, args.scope)) {
    console.error(`token: warning: asked ${args.issuer} for scope "${args.scope}" but was granted "${granted}" (is each scope spelt as the auth-server's --scopes lists it?)`);
  }
  console.log(tokens.access_token);
}

/** The scope granted: the token response's `scope`, else the JWT's `scope` claim (RFC 6749 §5.1, RFC 9068 §2.2.3). */
function grantedScope(tokens: client.TokenEndpointResponse): string | undefined {
  if (typeof tokens.scope === 'string') return tokens.scope;
  try {
    const claim = decodeJwt(tokens.access_token)['scope'];
    return typeof claim === 'string' ? claim : '';
  } catch {
    return undefined; // not a JWT: nothing to compare
  }
}

function sameScopes(a: string, b: string): boolean {
  const set = (scope: string) => [...new Set(scope.split(' ').filter(Boolean))].sort().join(' ');
  return set(a) === set(b);
}

main().catch((error: unknown) => {
  console.error(`token: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
});
