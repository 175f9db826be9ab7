/**
 * `npm run client -- <mcp-url> [--call <tool>] [--args '<json>'] [--user name:password]`: the official MCP
 * TypeScript SDK client (1.x) using a server that mcp-oauth-guard protects, signing in with OAuth.
 *
 * The SDK runs the whole flow itself: it meets the 401, reads the server's RFC 9728 metadata, discovers the
 * authorization server (RFC 8414), registers (RFC 7591), sends the user to sign in (authorization code + PKCE,
 * with `resource` = the server, RFC 8707) and exchanges the code for a token. On a 403 `insufficient_scope` it
 * sends the user to sign in again for the scopes the challenge names (step-up). This file supplies only what an
 * application must: where the registration and tokens are kept (an `OAuthClientProvider`, here in memory), and
 * how the user reaches the login page and comes back (a redirect listener on 127.0.0.1, RFC 8252 §7.3).
 *
 * Without `--user` it prints the login page's URL for you to open in a browser. With `--user name:password` a
 * scripted user fills in the login and consent pages of the local authorization server (`npm run auth-server`),
 * so it runs without a browser; that works with that server's pages only.
 *
 * @example
 * npm run client -- http://127.0.0.1:8080/mcp --user demo:demo-password --call counter_increment
 */
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { OAuthError } from '@modelcontextprotocol/sdk/server/auth/errors.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { authorizeAsHeadlessUser } from './demo/headless-user.js';
import { parseOrExit, readFlags } from './dev/command-line.js';
import { DEV_AUTH_SERVER_HINT } from './dev/dev-settings.js';
import { InMemoryOAuthClientProvider } from './in-memory-oauth-client-provider.js';

const USAGE = `Usage: npm run client -- <mcp-url> [--call <tool>] [--args '<json>'] [--user name:password]

Connects the official MCP SDK client to <mcp-url>, signing in with OAuth (authorization code + PKCE), lists the
tools the token may use and calls one.

  --call <tool>          a tool to call after listing; a 403 for missing scopes signs in again for them
  --args <json>          its arguments, a JSON object (default {})
  --user <name:pass>     sign in as this user without a browser (the local authorization server's pages only);
                         without it, open the printed URL in a browser
  --help                 this text`;

/** The redirect URI's listener: the browser (or the scripted user) comes back here with the code. */
interface RedirectListener {
  /** `http://127.0.0.1:<port>/callback`, registered as the client's redirect URI. */
  readonly url: string;
  /** The code of the next redirect, once its `state` is the one sent (CSRF protection, RFC 6749 §10.12). */
  next(expectedState: string): Promise<string>;
  close(): void;
}

/** An error the authorization server sent back on the redirect (RFC 6749 §4.1.2.1), e.g. `invalid_target`. */
class AuthorizationRefusedError extends Error {
  constructor(
    readonly error: string,
    readonly description: string | undefined,
  ) {
    super(`the authorization server refused: ${error}${description ? `: ${description}` : ''}`);
  }
}

/** Listens on 127.0.0.1 at a free port: a loopback redirect URI may use any port (RFC 8252 §7.3). */
async function listenForRedirects(): Promise<RedirectListener> {
  let arrived: ((redirect: URL) => void) | undefined;
  const server = createServer((req, res) => {
    const redirect = new URL(req.url ?? '/', 'http://127.0.0.1');
    if (redirect.pathname !== '/callback') return void res.writeHead(404).end();
    res.writeHead(200, { 'content-type': 'text/plain' }).end('Signed in. You may close this window.');
    arrived?.(redirect);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/callback`,
    next: (expectedState) =>
      new Promise((resolve, reject) => {
        arrived = (redirect) => {
          const { code, state, error, error_description: description } = Object.fromEntries(redirect.searchParams);
          if (error) reject(new AuthorizationRefusedError(error, description));
          else if (state !== expectedState || !code) reject(new Error('the redirect has the wrong state or no code'));
          else resolve(code);
        };
      }),
    close: () => server.close(),
  };
}

/**
 * The SDK's `OAuthClientProvider`: registration and tokens in memory, and the user brought to the login page by
 * `sendUser` and back to the redirect listener.
 */
class LoopbackOAuthClientProvider extends InMemoryOAuthClientProvider {
  private code: Promise<string> | undefined;
  /** The RFC 8707 `resource` of the last sign-in, named when the authorization server refuses it. */
  resource: string | undefined;

  constructor(
    private readonly redirects: RedirectListener,
    /** Brings the user to the authorization URL: a browser, or the scripted user. */
    private readonly sendUser: (authorizationUrl: URL) => Promise<void>,
  ) {
    super(redirects.url);
  }

  async redirectToAuthorization(authorizationUrl: URL): Promise<void> {
    console.log(`signing in for scope "${authorizationUrl.searchParams.get('scope') ?? ''}" at ${authorizationUrl.origin}`);
    this.resource = authorizationUrl.searchParams.get('resource') ?? undefined;
    // Listen before the user can come back: the scripted user returns before sendUser resolves.
    this.code = this.redirects.next(this.expectedState);
    this.code.catch(() => undefined); // read by authorizationCode(); a failure there is the one reported
    await this.sendUser(authorizationUrl);
  }

  /** The code the user came back with, after the SDK threw `UnauthorizedError`. */
  authorizationCode(): Promise<string> {
    if (this.code === undefined) throw new Error('the SDK did not send the user to sign in');
    return this.code;
  }
}

/** `<mcp-url>` and the flags, or `'help'`; every problem is reported at once. */
function readArgs(argv: readonly string[]): { url: URL; call?: string; args: Record<string, unknown>; user?: { username: string; password: string } } | 'help' {
  const [first, ...rest] = argv;
  const positional = first !== undefined && !first.startsWith('-');
  const flags = readFlags(positional ? rest : argv, ['--call', '--args', '--user']);
  if (flags === 'help') return 'help';
  const { values, problems } = flags;
  let url: URL | undefined;
  if (!positional) problems.push('<mcp-url> is required, e.g. http://127.0.0.1:8080/mcp');
  else if (!URL.canParse(first)) problems.push(`<mcp-url>: "${first}" is not a URL`);
  else url = new URL(first);
  let args: Record<string, unknown> = {};
  const json = values.get('--args')?.at(-1);
  if (json !== undefined) {
    try {
      args = JSON.parse(json) as Record<string, unknown>;
    } catch {
      problems.push('--args must be a JSON object, e.g. \'{"text":"hello"}\'');
    }
  }
  const user = values.get('--user')?.at(-1);
  const colon = user?.indexOf(':') ?? -1;
  if (user !== undefined && colon <= 0) problems.push('--user must be name:password');
  if (problems.length > 0) throw new Error(`${problems.join('; ')}\n\n${USAGE}`);
  return {
    url: url as URL,
    call: values.get('--call')?.at(-1),
    args,
    user: user === undefined ? undefined : { username: user.slice(0, colon), password: user.slice(colon + 1) },
  };
}

/**
 * Connects the SDK client. The first attempt meets the 401: the SDK sends the user to sign in and throws
 * UnauthorizedError. Once the user is back, finishAuth exchanges the code and the PKCE verifier for a token, and a
 * new transport connects with it.
 */
async function connectWithOAuth(url: URL, provider: LoopbackOAuthClientProvider): Promise<{ client: Client; transport: StreamableHTTPClientTransport }> {
  for (let attempt = 1; ; attempt++) {
    const transport = new StreamableHTTPClientTransport(url, { authProvider: provider });
    const client = new Client({ name: 'mcp-oauth-guard-sdk-client-example', version: '1.0.0' });
    try {
      await client.connect(transport);
      return { client, transport };
    } catch (error) {
      if (!(error instanceof UnauthorizedError) || attempt > 1) throw error;
      await transport.finishAuth(await provider.authorizationCode());
    }
  }
}

/**
 * Calls a tool. A 403 insufficient_scope (the tool needs more scope) makes the SDK send the user to sign in again
 * for the scopes the challenge names, then throw UnauthorizedError; with the new token the call is made again.
 */
async function callWithStepUp(session: { client: Client; transport: StreamableHTTPClientTransport }, provider: LoopbackOAuthClientProvider, name: string, args: Record<string, unknown>) {
  const call = () => session.client.callTool({ name, arguments: args });
  try {
    return await call();
  } catch (error) {
    if (!(error instanceof UnauthorizedError)) throw error;
    await session.transport.finishAuth(await provider.authorizationCode());
    return call();
  }
}

async function main(): Promise<void> {
  const options = parseOrExit(() => readArgs(process.argv.slice(2)), USAGE);
  if (options === undefined) return;
  const redirects = await listenForRedirects();
  const user = options.user;
  const sendUser = user
    ? async (url: URL) => void (await authorizeAsHeadlessUser(url, { ...user, redirectUri: redirects.url }))
    : async (url: URL) => console.log(`Open this URL in your browser to sign in:\n  ${url.href}`);
  const provider = new LoopbackOAuthClientProvider(redirects, sendUser);
  let session: { client: Client; transport: StreamableHTTPClientTransport } | undefined;
  try {
    session = await connectWithOAuth(options.url, provider);
    console.log(`connected to ${session.client.getServerVersion()?.name ?? options.url.href}`);
    const { tools } = await session.client.listTools();
    console.log(`tools this token may use: ${tools.map((tool) => tool.name).join(', ')}`);
    if (options.call !== undefined) {
      const result = await callWithStepUp(session, provider, options.call, options.args);
      const text = (result.content as Array<{ type: string; text?: string }>).map((part) => part.text ?? `[${part.type}]`).join('\n');
      console.log(`${options.call}${result.isError ? ' (error)' : ''}: ${text}`);
    }
  } catch (error) {
    throw explainOAuthError(error, provider.resource);
  } finally {
    await session?.client.close();
    redirects.close();
  }
}

/**
 * An OAuth error (on the redirect, or from the token endpoint through the SDK) with its error_description and the
 * resource asked for: `invalid_target` alone does not say which URL the authorization server does not know.
 */
function explainOAuthError(error: unknown, resource: string | undefined): unknown {
  const asked = resource === undefined ? '' : ` for the resource ${resource}`;
  if (error instanceof AuthorizationRefusedError) return new Error(`${error.message}, asked${asked} (${DEV_AUTH_SERVER_HINT})`);
  if (error instanceof OAuthError) return new Error(`the authorization server refused: ${error.errorCode}: ${error.message}, asked${asked} (${DEV_AUTH_SERVER_HINT})`);
  return error;
}

main().catch((error: unknown) => {
  console.error(`client: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
});
