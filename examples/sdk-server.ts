/**
 * Example: the notes MCP server written with the official TypeScript SDK (`McpServer.registerTool`),
 * served through the SDK's own Streamable HTTP transport behind mcp-oauth-guard.
 *
 * Same tools, scopes and behaviour as `examples/notes-server.ts` (it shares that file's policy and store):
 * - `whoami`: a valid token only; returns the subject, the client and the granted scopes;
 * - `notes_list`: notes:read;  `notes_add` `{ text: string }`: notes:write;  `notes_clear`: notes:admin.
 * Hierarchy notes:admin ⊃ notes:write ⊃ notes:read; notes are kept per user, keyed by the token's `sub`.
 * The guard checks the scopes before the SDK sees a call and filters `tools/list`; the tools read the
 * caller from `extra.authInfo`.
 *
 * Run: `MCP_AUTH_ISSUER=https://your-issuer npx tsx examples/sdk-server.ts`.
 * Env: HOST (default 127.0.0.1), PORT (default 3000), MCP_AUTH_ISSUER (required), MCP_SDK_STATEFUL=1 for
 * sessions, MCP_AUTH_RESOURCE (default http://HOST:PORT/mcp) and the other MCP_AUTH_* variables.
 */
import { pathToFileURL } from 'node:url';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { AuthInfo as SdkAuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import { z } from 'zod';
import { mcpOAuthGuard, type AuthInfo, type GuardOptions } from 'mcp-oauth-guard';
import { sdkStreamableHttpHandler, type SdkStreamableHttpHandler, type SdkTransportOptions } from 'mcp-oauth-guard/sdk';
import { NotesStore, noteOwner, notesChallengeScopes, notesPolicy } from './notes-server.js';
import { listenWithGuard, runExampleFromEnv, type GuardedServer } from './serve-guarded.js';

const text = (t: string, isError = false) => ({ content: [{ type: 'text' as const, text: t }], ...(isError ? { isError: true } : {}) });

/**
 * The guard's AuthInfo as the SDK hands it to tools (`extra.authInfo`). The guard always sets it; a
 * missing one means the server was mounted without the guard, which must not serve anyone.
 */
function caller(authInfo: SdkAuthInfo | undefined): AuthInfo {
  if (!authInfo) throw new Error('no verified caller: this server must run behind mcpOAuthGuard');
  return authInfo as unknown as AuthInfo;
}

/** Builds one notes `McpServer` over a shared store (one server per transport, as the SDK requires). */
export function createSdkNotesServer(store: NotesStore): McpServer {
  const server = new McpServer(
    { name: 'notes-sdk-example', version: '1.0.0' },
    { instructions: 'Personal notes. Reading needs notes:read, adding notes:write, clearing notes:admin.' },
  );
  server.registerTool(
    'whoami',
    { description: 'Who the access token speaks for: subject, client, scopes.' },
    (extra) => {
      const auth = caller(extra.authInfo);
      return text(JSON.stringify({ subject: auth.extra.sub ?? null, client: auth.clientId, scopes: auth.scopes }));
    },
  );
  server.registerTool('notes_list', { description: 'List your notes.' }, (extra) => {
    const notes = store.list(noteOwner(caller(extra.authInfo)));
    return text(notes.length ? notes.map((n, i) => `${i + 1}. ${n}`).join('\n') : '(no notes yet)');
  });
  server.registerTool(
    'notes_add',
    // A schema violation becomes a tool result with isError (the SDK's McpServer does that), not a protocol error.
    { description: 'Add a note.', inputSchema: { text: z.string().trim().min(1).max(2000) } },
    ({ text: note }, extra) => text(`added note #${store.add(noteOwner(caller(extra.authInfo)), note)}`),
  );
  server.registerTool('notes_clear', { description: 'Delete all your notes.' }, (extra) =>
    text(`deleted ${store.clear(noteOwner(caller(extra.authInfo)))} notes`),
  );
  return server;
}

/** Options of {@link startSdkNotesServer}. */
export interface SdkNotesServerOptions extends Partial<GuardOptions> {
  /** Default 127.0.0.1. */
  host?: string;
  /** Default 0 (any free port). */
  port?: number;
  /** Sessions (`Mcp-Session-Id`) bound to the caller; default false (stateless). */
  stateful?: boolean;
  /** Passed to the SDK transport, e.g. `{ enableJsonResponse: true }`. */
  transportOptions?: SdkTransportOptions;
}

/** A running SDK notes server. */
export interface RunningSdkNotesServer extends GuardedServer {
  handler: SdkStreamableHttpHandler;
  store: NotesStore;
}

/**
 * Starts the SDK notes server on loopback. The resource defaults to `http://HOST:PORT/mcp` with the port
 * actually bound, so port 0 works in tests.
 */
export async function startSdkNotesServer(options: SdkNotesServerOptions): Promise<RunningSdkNotesServer> {
  const { host = '127.0.0.1', port = 0, stateful = false, transportOptions, ...guardOptions } = options;
  const store = new NotesStore();
  const handler = sdkStreamableHttpHandler({ createServer: () => createSdkNotesServer(store), stateful, transportOptions });
  const running = await listenWithGuard(host, port, (defaultResource) =>
    mcpOAuthGuard({
      policy: notesPolicy,
      challengeScopes: notesChallengeScopes,
      resourceName: 'Notes (mcp-oauth-guard SDK example)',
      ...guardOptions,
      resource: guardOptions.resource ?? defaultResource,
      handler,
    }),
  );
  return {
    ...running,
    handler,
    store,
    close: async () => {
      await handler.close();
      await running.close();
    },
  };
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const stateful = process.env.MCP_SDK_STATEFUL === '1' || process.env.MCP_SDK_STATEFUL === 'true';
  void runExampleFromEnv(`notes MCP server (SDK, ${stateful ? 'stateful' : 'stateless'})`, (options) =>
    startSdkNotesServer({ policy: notesPolicy, ...options, stateful }),
  );
}
