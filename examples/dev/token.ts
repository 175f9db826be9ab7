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
import * as client from 'openid-client';
import { SERVICE_CLIENT_ID } from '../../test/fixtures/authorization-server.js';
import { parseOrExit, readFlags } from './command-line.js';
import { DEV_AUTH_SERVER_PORT, DEV_SERVICE_CLIENT_SECRET } from './dev-settings.js';

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
  const issuer = new URL(args.issuer);
  const config = await client.discovery(issuer, SERVICE_CLIENT_ID, DEV_SERVICE_CLIENT_SECRET, undefined, {
    // The development server is plain http on loopback.
    execute: issuer.protocol === 'http:' ? [client.allowInsecureRequests] : [],
    timeout: 5,
  });
  const parameters: Record<string, string> = { resource: args.resource };
  if (args.scope) parameters['scope'] = args.scope;
  const tokens = await client.clientCredentialsGrant(config, parameters);
  console.log(tokens.access_token);
}

main().catch((error: unknown) => {
  const detail = error instanceof client.ResponseBodyError ? `${error.error}${error.error_description ? `: ${error.error_description}` : ''}` : error instanceof Error ? error.message : String(error);
  console.error(`token: ${detail} (is \`npm run auth-server\` running, and was it started with this --resource?)`);
  process.exit(1);
});
