/**
 * `npm run client -- <mcp-url> [--call <tool>] [--args '<json>'] [--user name:password] [--scope <scopes>]`: the official MCP
 * TypeScript SDK client (1.x) using a server that mcp-oauth-guard protects, signing in with OAuth.
 *
 * The SDK runs the whole flow itself: it meets the 401, reads the server's RFC 9728 metadata, discovers the
 * authorization server (RFC 8414), registers (RFC 7591), sends the user to sign in (authorization code + PKCE,
 * with `resource` = the server, RFC 8707) and exchanges the code for a token. On a 403 `insufficient_scope` it
 * sends the user to sign in again for the scopes the challenge names (step-up). This file supplies only what an
 * application must: where the registration and tokens are kept (an `OAuthClientProvider`, here
 * `LoopbackOAuthClientProvider`, in memory), and how the user reaches the login page and comes back (a
 * `LoopbackRedirectListener` on 127.0.0.1, RFC 8252 §7.3), both from `mcp-oauth-guard/client`.
 *
 * Without `--user` it prints the login page's URL for you to open in a browser. With `--user name:password` a
 * scripted user (`signInToDevelopmentServer`) fills in the login and consent pages of the local authorization
 * server (`npm run auth-server`), so it runs without a browser; that works with that server's pages only.
 *
 * @example
 * npm run client -- http://127.0.0.1:8080/mcp --user demo:demo-password --call counter_increment
 */
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { LoopbackOAuthClientProvider, LoopbackRedirectListener, signInToDevelopmentServer } from 'mcp-oauth-guard/client';
import { parseOrExit, readFlags } from './dev/command-line.js';
import { explainSignInFailure, noScopeNotice } from './sdk-client-messages.js';

const USAGE = `Usage: npm run client -- <mcp-url> [--call <tool>] [--args '<json>'] [--user name:password] [--scope <scopes>]

Connects the official MCP SDK client to <mcp-url>, signing in with OAuth (authorization code + PKCE), lists the
tools the token may use and calls one.

  --call <tool>          a tool to call after listing; a 403 for missing scopes signs in again for them
  --args <json>          its arguments, a JSON object (default {})
  --user <name:pass>     sign in as this user without a browser (the local authorization server's pages only);
                         without it, open the printed URL in a browser
  --scope <scopes>       scopes to ask for (space-separated) when the server's challenge and metadata name none
  --help                 this text`;

/** What the command line asks for. */
interface ClientArgs {
  url: URL;
  call?: string;
  args: Record<string, unknown>;
  user?: { username: string; password: string };
  scope?: string;
}

/** `<mcp-url>` and the flags, or `'help'`; every problem is reported at once. */
function readArgs(argv: readonly string[]): ClientArgs | 'help' {
  const [first, ...rest] = argv;
  const positional = first !== undefined && !first.startsWith('-');
  const flags = readFlags(positional ? rest : argv, ['--call', '--args', '--user', '--scope']);
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
    scope: values.get('--scope')?.at(-1),
  };
}

/**
 * Connects one SDK client. The first attempt meets the 401: the SDK sends the user to sign in and throws
 * UnauthorizedError, and the client closes the transport. Once the user is back, finishAuth on that transport
 * exchanges the code and the PKCE verifier for a token, and the same client connects again over a new transport
 * (a transport cannot be started twice), which the provider's tokens authorize.
 */
async function connectWithOAuth(url: URL, provider: LoopbackOAuthClientProvider): Promise<{ client: Client; transport: StreamableHTTPClientTransport }> {
  const client = new Client({ name: 'mcp-oauth-guard-sdk-client-example', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(url, { authProvider: provider });
  try {
    await client.connect(transport);
    return { client, transport };
  } catch (error) {
    if (!(error instanceof UnauthorizedError)) throw error;
    // The failed connect closed this transport; it still holds the flow's state, so it exchanges the code. A
    // transport starts only once: the same client connects again over a new one, which the tokens now authorize.
    await transport.finishAuth(await provider.authorizationCode());
    const authorized = new StreamableHTTPClientTransport(url, { authProvider: provider });
    await client.connect(authorized);
    return { client, transport: authorized };
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

/** Brings the user to sign in: the scripted user of the local authorization server, or a printed URL. */
function userSender(listener: LoopbackRedirectListener, user: ClientArgs['user']): (url: URL) => Promise<void> {
  if (user === undefined) return async (url) => console.log(`Open this URL in your browser to sign in:\n  ${url.href}`);
  // Development only: a scripted user typing the password into the local authorization server's pages.
  return async (url) => void (await signInToDevelopmentServer(url, { ...user, redirectUri: listener.redirectUri }));
}

async function main(): Promise<void> {
  const options = parseOrExit(() => readArgs(process.argv.slice(2)), USAGE);
  if (options === undefined) return;
  const listener = await LoopbackRedirectListener.listen();
  const sendUser = userSender(listener, options.user);
  const provider: LoopbackOAuthClientProvider = new LoopbackOAuthClientProvider({
    listener,
    metadata: { client_name: 'mcp-oauth-guard SDK client example', ...(options.scope === undefined ? {} : { scope: options.scope }) },
    sendUser: async (url) => {
      console.log(`signing in for scope "${url.searchParams.get('scope') ?? ''}" at ${url.origin}`);
      const notice = noScopeNotice(url, provider.discoveryState());
      if (notice !== undefined) console.error(`client: ${notice}`);
      await sendUser(url);
    },
  });
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
    throw explainSignInFailure(error, { mcpUrl: options.url, authorizationUrl: provider.lastAuthorizationUrl });
  } finally {
    // Ends the session at the server (DELETE), so that what it holds for it (a stdio process) goes now.
    await session?.transport.terminateSession().catch(() => undefined);
    await session?.client.close();
    await listener.close();
  }
}

main().catch((error: unknown) => {
  console.error(`client: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
});
