/**
 * `npm run auth-server`: a local OAuth 2.1 authorization server for developing against mcp-oauth-guard, which
 * stays up until Ctrl-C. It is the demo's oidc-provider server (RFC 8414 discovery, dynamic registration,
 * authorization code + PKCE, RFC 8707 resource indicators, DPoP, introspection), started with the resources,
 * scopes and users given on the command line, and it prints what to paste to run the gateway or the example
 * against it and to get a token for curl (`npm run token`).
 *
 * Development only: loopback, in memory, keys regenerated at every start, a well-known service client secret.
 */
import { startAuthorizationServer, DEMO_PASSWORD, DEMO_USERNAME, SERVICE_CLIENT_ID, type DemoUser, type PreRegisteredClient } from './authorization-server.js';
import { formatRefusal } from './refusal-log.js';
import { canonicalizeResourceUri, ConfigurationError, isLoopbackHost, isScopeToken } from 'mcp-oauth-guard/core';
import { parseOrExit, readFlags } from './command-line.js';
import { parseClaimFlag } from './token-claims.js';
import { DEV_AUTH_SERVER_PORT, DEV_SERVICE_CLIENT_SECRET } from './dev-settings.js';

const USAGE = `Usage: npm run auth-server -- [--port 9400] [--host 127.0.0.1] --resource <url or '*'> [--resource <url>…]
                           --scopes a,b [--user name:password]… [--client id:secret:redirect-uri[,…]]… [--dpop]
                           [--claim name=value]…

Starts a local authorization server for development and keeps it running (Ctrl-C stops it).

  --resource <url>      an MCP endpoint tokens may be issued for (their aud), e.g. http://127.0.0.1:8080/mcp;
                        repeat it, or separate several with commas. '*' accepts any loopback URL
                        (http or https on 127.0.0.1, localhost or [::1], any port and path), so a new
                        local MCP server needs no restart; any other URL is refused (invalid_target)
  --scopes <list>       scopes tokens for those resources may carry, at least one, e.g. calc:use,calc:admin
  --user <name:pass>    a user who can sign in on the login page; repeat it. Default ${DEMO_USERNAME}:${DEMO_PASSWORD}
  --client <id:secret:redirect-uri[,redirect-uri…]>
                        a confidential web client registered from the start (authorization code and refresh
                        token grants, client_secret_basic, exactly these redirect URIs), as an operator registers
                        one, e.g. the gateway's sign-in client for connected accounts:
                        --client gw-login:some-secret:http://127.0.0.1:8080/connect/callback; repeat it
  --claim <name=value>  a claim every access token carries, to try policy conditions on it: the value as JSON
                        when it parses (--claim 'groups=["finance"]'), else as text (--claim tenant=acme);
                        repeat it. The claims the server sets (iss, aud, exp, iat, nbf, jti, sub, client_id,
                        scope, cnf) are refused
  --dpop                require DPoP (RFC 9449) of the clients that register: every token they get is bound to
                        their key (without it, a client that sends a proof still gets a bound token)
  --port <number>       default ${DEV_AUTH_SERVER_PORT} (0 picks a free one)
  --host <address>      default 127.0.0.1; a loopback address only (127.0.0.1, ::1, localhost): the service
                        client's secret is printed and can exchange tokens, so no other machine may reach it
  --help                this text

Every refusal is logged on stderr with the error_description the client gets: a request asking for no scope
(an MCP server whose metadata lists no scopes_supported), a resource it does not know. A refresh made while the
grant's newest access token has more than half its lifetime left is refused (invalid_grant), so that a client
that refreshes to step up (the SDK 1.x client on a 403 insufficient_scope) signs in again for the scope instead.`;

/** What the command line asked for. */
interface DevAuthServerArgs {
  port: number;
  host: string;
  resources: string[];
  /** `--resource '*'`: any loopback URL is a resource. */
  anyLoopback: boolean;
  scopes: string[];
  users: DemoUser[];
  clients: PreRegisteredClient[];
  dpop: boolean;
  /** `--claim`: claims every access token carries. */
  claims: Record<string, unknown>;
}

/** Reads the flags; every problem is reported at once, each naming its flag. */
function parseArgs(argv: readonly string[]): DevAuthServerArgs | 'help' {
  const flags = readFlags(argv, ['--port', '--host', '--resource', '--scopes', '--user', '--client', '--dpop', '--claim'], ['--dpop']);
  if (flags === 'help') return 'help';
  const { values, problems } = flags;
  const args: DevAuthServerArgs = { port: DEV_AUTH_SERVER_PORT, host: values.get('--host')?.at(-1) ?? '127.0.0.1', resources: [], anyLoopback: false, scopes: [], users: [], clients: [], dpop: values.has('--dpop'), claims: {} };
  // The service client's secret is well known and may exchange tokens: this server must not be reachable from elsewhere.
  if (!isLoopbackHost(args.host)) problems.push(`--host must be a loopback address (127.0.0.1, ::1 or localhost), got "${args.host}"`);
  const port = values.get('--port')?.at(-1);
  if (port !== undefined) {
    const number = Number(port);
    if (!Number.isInteger(number) || number < 0 || number > 65_535) problems.push(`--port must be a TCP port (0-65535), got "${port}"`);
    else args.port = number;
  }
  const listed = (flag: string): string[] => (values.get(flag) ?? []).flatMap((value) => value.split(',').map((item) => item.trim()).filter(Boolean));
  for (const resource of listed('--resource')) {
    if (resource === ANY_LOOPBACK) {
      args.anyLoopback = true;
      continue;
    }
    try {
      args.resources.push(canonicalizeResourceUri(resource, '--resource'));
    } catch (error) {
      problems.push(error instanceof ConfigurationError ? error.message : `--resource: "${resource}" is not a URL`);
    }
  }
  for (const scope of listed('--scopes')) {
    if (isScopeToken(scope)) args.scopes.push(scope);
    else problems.push(`--scopes: "${scope}" is not a scope token (RFC 6749 section 3.3: no spaces, quotes or backslashes)`);
  }
  for (const user of values.get('--user') ?? []) {
    const colon = user.indexOf(':');
    if (colon <= 0 || colon === user.length - 1) problems.push(`--user must be name:password, got "${user.replace(/:.*/, ':…')}"`);
    else args.users.push({ username: user.slice(0, colon), password: user.slice(colon + 1) });
  }
  for (const client of values.get('--client') ?? []) {
    const parsed = parseClient(client);
    if (typeof parsed === 'string') problems.push(parsed);
    else if (args.clients.some((known) => known.clientId === parsed.clientId) || parsed.clientId === SERVICE_CLIENT_ID) problems.push(`--client: the client id "${parsed.clientId}" is given twice`);
    else args.clients.push(parsed);
  }
  for (const claim of values.get('--claim') ?? []) {
    const parsed = parseClaimFlag(claim);
    if (typeof parsed === 'string') problems.push(parsed);
    else if (Object.hasOwn(args.claims, parsed[0])) problems.push(`--claim: "${parsed[0]}" is given twice`);
    else args.claims[parsed[0]] = parsed[1];
  }
  if (args.resources.length === 0 && !args.anyLoopback) problems.push('--resource is required: the URL of the MCP endpoint tokens are for, e.g. --resource http://127.0.0.1:8080/mcp');
  // A resource server's tokens carry at least one scope here: the authorization server refuses to describe a
  // resource without any, and a policy with nothing to require is better served by no authorization server at all.
  if (args.scopes.length === 0 && !problems.some((p) => p.startsWith('--scopes'))) problems.push('--scopes is required: the scopes your policy asks for, e.g. --scopes calc:use,calc:admin');
  if (problems.length > 0) throw new ConfigurationError('auth-server', `${problems.join('; ')}\n\n${USAGE}`);
  if (args.users.length === 0) args.users.push({ username: DEMO_USERNAME, password: DEMO_PASSWORD });
  return args;
}

/**
 * One `--client id:secret:redirect-uri[,redirect-uri…]`: a confidential client, or the problem with it (which never
 * repeats the secret).
 */
function parseClient(value: string): PreRegisteredClient | string {
  const [clientId = '', clientSecret = '', ...rest] = value.split(':');
  const redirects = rest.join(':').split(',').map((uri) => uri.trim()).filter(Boolean);
  if (!/^[\w.~-]+$/.test(clientId) || clientSecret === '' || redirects.length === 0) {
    return `--client must be id:secret:redirect-uri[,redirect-uri…] (an id of letters, digits and ._~-, a secret without ":", at least one redirect URI), got "${clientId}:…"`;
  }
  for (const uri of redirects) {
    let url: URL | undefined;
    try {
      url = new URL(uri);
    } catch {
      url = undefined;
    }
    if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:') || url.hash !== '') return `--client ${clientId}: "${uri}" is not an http(s) redirect URI without a fragment`;
  }
  return { clientId, clientSecret, redirectUris: redirects };
}

/** `--resource '*'`: any loopback URL. */
const ANY_LOOPBACK = '*';

/** Shown in the printed commands when only `--resource '*'` was given: one loopback URL it accepts. */
const EXAMPLE_LOOPBACK_RESOURCE = 'http://127.0.0.1:8080/mcp';

/** How to get a refused resource accepted, appended to the refusal's description. */
function unknownResourceHint(anyLoopback: boolean): string {
  return anyLoopback
    ? 'a URL on another host needs its own --resource: restart npm run auth-server with --resource <that URL> as well as --resource \'*\''
    : 'restart npm run auth-server with --resource <that URL> as well (repeat --resource for several), or with --resource \'*\' to accept any loopback URL without restarting';
}

/** The port a resource URL names, its scheme's default when it names none. */
function portOf(url: URL): string {
  return url.port || (url.protocol === 'https:' ? '443' : '80');
}

/**
 * The gateway's `--host` and `--port` for a resource, so that it listens where its metadata says clients reach
 * it; `--host` only when the resource's host is not the gateway's default, 127.0.0.1.
 */
function listenFlags(resource: string): string {
  const url = new URL(resource);
  const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  return `${host === '127.0.0.1' ? '' : `--host ${host} `}--port ${portOf(url)}`;
}

async function main(): Promise<void> {
  const args = parseOrExit(() => parseArgs(process.argv.slice(2)), USAGE);
  if (args === undefined) return;
  const as = await startAuthorizationServer({
    host: args.host,
    port: args.port,
    users: args.users,
    baseScopes: [],
    extraScopes: args.scopes,
    serviceClientSecret: DEV_SERVICE_CLIENT_SECRET,
    resources: Object.fromEntries(args.resources.map((resource) => [resource, { scopes: args.scopes }])),
    ...(args.anyLoopback ? { loopbackResources: { scopes: args.scopes } } : {}),
    unknownResourceHint: unknownResourceHint(args.anyLoopback),
    refuseEarlyRefresh: true,
    onRefusal: (refusal) => console.error(`auth-server: ${formatRefusal(refusal)}`),
    requireDpop: args.dpop,
    clients: args.clients,
    extraClaims: args.claims,
  });
  const first = args.resources[0] ?? EXAMPLE_LOOPBACK_RESOURCE;
  const scope = args.scopes.join(' ');
  const lines = [
    `authorization server (development only): ${as.issuer}`,
    `  metadata:   ${as.issuer}/.well-known/oauth-authorization-server`,
    `  users:      ${args.users.map((user) => `${user.username} / ${user.password}`).join(', ')}`,
    ...args.resources.map((resource) => `  resource:   ${resource}${scope ? `  (scopes ${scope})` : ''}`),
    ...(args.anyLoopback ? [`  resource:   any loopback URL, e.g. ${EXAMPLE_LOOPBACK_RESOURCE} or http://localhost:3000/mcp  (scopes ${scope})`] : []),
    `  service client for client_credentials: ${SERVICE_CLIENT_ID} / ${DEV_SERVICE_CLIENT_SECRET}`,
    ...args.clients.map((client) => `  client:     ${client.clientId} (confidential, the secret given), redirect URIs ${client.redirectUris.join(' ')}`),
    ...Object.entries(args.claims).map(([name, value]) => `  claim:      ${name}=${JSON.stringify(value)} in every access token`),
    ...(args.dpop ? ['  DPoP:       required of registered clients (dpop_bound_access_tokens): every token they get is bound'] : []),
    '',
    'Put the gateway in front of your MCP server (in the folder holding your policy.json):',
    `  npx mcp-oauth-guard --issuer ${as.issuer} --resource ${first} ${listenFlags(first)}${args.dpop ? ' --dpop require' : ''} --policy policy.json --upstream http://127.0.0.1:3001/mcp`,
    'or run the notes example against it:',
    `  MCP_AUTH_ISSUER=${as.issuer} MCP_AUTH_RESOURCE=${first}${args.dpop ? ' MCP_AUTH_DPOP=require' : ''} PORT=${portOf(new URL(first))} npm run example`,
    ...(args.dpop ? ['and sign in with the PKCE demo client, which proves its key on every request:', `  npx tsx examples/demo/pkce-client.ts ${first} --dpop --call whoami`] : []),
    args.dpop ? 'Get an access token for curl or scripts (a Bearer token: servers with MCP_AUTH_DPOP=require refuse it, allow accepts it):' : 'Get an access token for curl or scripts:',
    `  npm run -s token -- --issuer ${as.issuer} --resource ${first}${scope ? ` --scope "${scope}"` : ''}`,
    '',
    'Ctrl-C stops it.',
  ];
  console.log(lines.join('\n'));
  const stop = (): void => void as.close().then(() => process.exit(0));
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

main().catch((error: unknown) => {
  const code = (error as NodeJS.ErrnoException).code;
  if (code === 'EADDRINUSE') {
    console.error(`auth-server: cannot start: port ${String((error as { port?: unknown }).port)} is in use; give a free one with --port`);
    process.exit(1);
  }
  console.error(`auth-server: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
});
