/**
 * Example: the notes MCP server written with the official TypeScript SDK 2.x (`@modelcontextprotocol/server`,
 * `McpServer.registerTool` with zod 4 schemas), served by the SDK's `createMcpHandler` behind mcp-oauth-guard.
 * It answers 2026-07-28 stateless requests and, through the SDK's fallback, 2025-era clients.
 *
 * Same tools, scopes and behaviour as `examples/notes-server.ts` (it shares that file's policy and store):
 * - `whoami`: a valid token only; returns the subject, the client and the granted scopes;
 * - `notes_list`: notes:read;  `notes_add` `{ text: string }`: notes:write;  `notes_clear`: notes:admin.
 * Hierarchy notes:admin ⊃ notes:write ⊃ notes:read; notes are kept per user, keyed by the token's `sub`.
 * The guard checks the scopes before the SDK sees a call and filters `tools/list`; the tools read the
 * caller from `ctx.http.authInfo`.
 *
 * Run: `MCP_AUTH_ISSUER=https://your-issuer npx tsx examples/sdk2-server.ts`.
 * Env: HOST (default 127.0.0.1), PORT (default 3000), MCP_AUTH_ISSUER (required), MCP_AUTH_RESOURCE
 * (default http://HOST:PORT/mcp) and the other MCP_AUTH_* variables.
 */
import { pathToFileURL } from 'node:url';
import { McpServer, type McpRequestContext, type ServerContext } from '@modelcontextprotocol/server';
import { z } from 'zod';
import { mcpOAuthGuard, type AuthInfo, type GuardOptions } from 'mcp-oauth-guard';
import { sdk2McpHandler, type Sdk2McpHandler, type Sdk2McpHandlerOptions } from 'mcp-oauth-guard/sdk2';
import { NotesStore, noteOwner, notesChallengeScopes, notesPolicy } from './notes-server.js';
import { listenWithGuard, runExampleFromEnv, type GuardedServer } from './serve-guarded.js';

const text = (t: string) => ({ content: [{ type: 'text' as const, text: t }] });

/**
 * The guard's AuthInfo as the SDK hands it to tools (`ctx.http.authInfo`). The guard always sets it; a
 * missing one means the server was mounted without the guard, which must not serve anyone.
 */
function caller(ctx: ServerContext): AuthInfo {
  const authInfo = ctx.http?.authInfo;
  if (!authInfo) throw new Error('no verified caller: this server must run behind mcpOAuthGuard');
  return authInfo as unknown as AuthInfo;
}

/** Builds one notes `McpServer` over a shared store (the SDK asks for a fresh one per request). */
export function createSdk2NotesServer(store: NotesStore): McpServer {
  const server = new McpServer(
    { name: 'notes-sdk2-example', version: '1.0.0' },
    { instructions: 'Personal notes. Reading needs notes:read, adding notes:write, clearing notes:admin.' },
  );
  server.registerTool('whoami', { description: 'Who the access token speaks for: subject, client, scopes.' }, (ctx) => {
    const auth = caller(ctx);
    return text(JSON.stringify({ subject: auth.extra.sub ?? null, client: auth.clientId, scopes: auth.scopes }));
  });
  server.registerTool('notes_list', { description: 'List your notes.' }, (ctx) => {
    const notes = store.list(noteOwner(caller(ctx)));
    return text(notes.length ? notes.map((n, i) => `${i + 1}. ${n}`).join('\n') : '(no notes yet)');
  });
  server.registerTool(
    'notes_add',
    // A schema violation becomes a tool result with isError (the SDK's McpServer does that), not a protocol error.
    { description: 'Add a note.', inputSchema: z.object({ text: z.string().trim().min(1).max(2000) }) },
    ({ text: note }, ctx) => text(`added note #${store.add(noteOwner(caller(ctx)), note)}`),
  );
  server.registerTool('notes_clear', { description: 'Delete all your notes.' }, (ctx) =>
    text(`deleted ${store.clear(noteOwner(caller(ctx)))} notes`),
  );
  return server;
}

/** Options of {@link startSdk2NotesServer}. */
export interface Sdk2NotesServerOptions extends Partial<GuardOptions> {
  /** Default 127.0.0.1. */
  host?: string;
  /** Default 0 (any free port). */
  port?: number;
  /** How 2026-07-28 answers are shaped (the SDK's `responseMode`): `auto` (default), `sse` or `json`. */
  responseMode?: Sdk2McpHandlerOptions['responseMode'];
  /**
   * Replaces the server factory, given the shared store and the SDK's request context (tests add tools to
   * the notes server with it). Default: {@link createSdk2NotesServer}.
   */
  createServer?: (store: NotesStore, context: McpRequestContext) => McpServer;
}

/** A running SDK 2.x notes server. */
export interface RunningSdk2NotesServer extends GuardedServer {
  handler: Sdk2McpHandler;
  store: NotesStore;
}

/**
 * Starts the SDK 2.x notes server on loopback. The resource defaults to `http://HOST:PORT/mcp` with the
 * port actually bound, so port 0 works in tests.
 */
export async function startSdk2NotesServer(options: Sdk2NotesServerOptions): Promise<RunningSdk2NotesServer> {
  const { host = '127.0.0.1', port = 0, responseMode, createServer = createSdk2NotesServer, ...guardOptions } = options;
  const store = new NotesStore();
  const handler = sdk2McpHandler({ createServer: (context) => createServer(store, context), ...(responseMode !== undefined && { responseMode }) });
  let running: GuardedServer;
  try {
    running = await listenWithGuard(host, port, (defaultResource) =>
      mcpOAuthGuard({
        policy: notesPolicy,
        challengeScopes: notesChallengeScopes,
        resourceName: 'Notes (mcp-oauth-guard SDK 2.x example)',
        ...guardOptions,
        resource: guardOptions.resource ?? defaultResource,
        handler,
      }),
    );
  } catch (error) {
    await handler.close();
    throw error;
  }
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
  void runExampleFromEnv('notes MCP server (SDK 2.x)', (options) => startSdk2NotesServer({ policy: notesPolicy, ...options }));
}
