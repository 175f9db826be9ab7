/**
 * Example: a notes MCP server behind mcp-oauth-guard, written as a plain dispatch table (no SDK).
 *
 * Tools and the scope each needs (hierarchy: notes:admin ⊃ notes:write ⊃ notes:read):
 * - `whoami`: a valid token only; returns the subject, the client and the granted scopes;
 * - `notes_list`: notes:read;  `notes_add` `{ text: string }`: notes:write;  `notes_clear`: notes:admin.
 * Notes are kept per user, keyed by the token's `sub`.
 *
 * Run: `MCP_AUTH_ISSUER=https://your-issuer npm run example` (or `npm run demo` for everything on one machine).
 * Env: HOST (default 127.0.0.1), PORT (default 3000), MCP_AUTH_ISSUER (required),
 * MCP_AUTH_RESOURCE (default http://HOST:PORT/mcp) and the other MCP_AUTH_* variables.
 */
import { pathToFileURL } from 'node:url';
import {
  dispatchTable,
  mcpOAuthGuard,
  type AuthInfo,
  type GuardOptions,
  type PolicyDefinition,
} from 'mcp-oauth-guard';
import { listenWithGuard, runExampleFromEnv, type GuardedServer } from './serve-guarded.js';

/** The notes server's policy; also used by the SDK example so both behave the same. */
export const notesPolicy: PolicyDefinition = {
  scopesSupported: ['notes:read', 'notes:write', 'notes:admin'],
  tools: {
    whoami: [],
    notes_list: ['notes:read'],
    notes_add: ['notes:write'],
    notes_clear: ['notes:admin'],
    // Tools not named above are refused unless the caller is an admin.
    '*': ['notes:admin'],
  },
  scopeHierarchy: { 'notes:admin': ['notes:write'], 'notes:write': ['notes:read'] },
};

/** What the 401 challenge asks a new client for: read access. */
export const notesChallengeScopes = ['notes:read'];

/** Protocol revisions this example speaks with `initialize`, newest first. */
const SUPPORTED_VERSIONS = ['2025-11-25', '2025-06-18', '2025-03-26'];
/** The stateless revision, discovered with `server/discover` instead of `initialize`. */
const STATELESS_VERSION = '2026-07-28';
const SERVER_INFO = { name: 'notes-example', version: '1.0.0' };

/** The tool list (JSON Schema inputs). The guard filters it by the caller's scopes. */
export const notesTools = [
  { name: 'whoami', description: 'Who the access token speaks for: subject, client, scopes.', inputSchema: { type: 'object', properties: {} } },
  { name: 'notes_list', description: 'List your notes.', inputSchema: { type: 'object', properties: {} } },
  {
    name: 'notes_add',
    description: 'Add a note.',
    inputSchema: { type: 'object', properties: { text: { type: 'string', minLength: 1, maxLength: 2000 } }, required: ['text'] },
  },
  { name: 'notes_clear', description: 'Delete all your notes.', inputSchema: { type: 'object', properties: {} } },
];

/** Per-user notes, keyed by `sub`. Bounded so an example cannot grow without limit. */
export class NotesStore {
  private readonly byUser = new Map<string, string[]>();
  constructor(private readonly maxPerUser = 1000) {}
  list(user: string): readonly string[] {
    return this.byUser.get(user) ?? [];
  }
  add(user: string, text: string): number {
    const notes = this.byUser.get(user) ?? [];
    if (notes.length >= this.maxPerUser) notes.shift();
    notes.push(text);
    this.byUser.set(user, notes);
    return notes.length;
  }
  clear(user: string): number {
    const n = this.list(user).length;
    this.byUser.delete(user);
    return n;
  }
}

const text = (t: string, isError = false) => ({ content: [{ type: 'text', text: t }], ...(isError ? { isError: true } : {}) });

/**
 * Who notes are stored under: the issuer and `sub`, else the issuer and the client (client-credentials tokens have
 * no user). The issuer matters as soon as several are trusted: each names its users on its own, so two of them
 * can both issue tokens for an `alice` who are different people.
 */
export function noteOwner(auth: AuthInfo): string {
  return ownerKey(auth.extra.iss, auth.extra.sub ?? `client:${auth.clientId}`);
}

/** The store key of an issuer's user (JSON keeps the two parts apart whatever characters they hold). */
export function ownerKey(issuer: string | undefined, subject: string): string {
  return JSON.stringify([issuer ?? null, subject]);
}

/** Builds the notes MCP handler (a dispatch table in the style of a hand-written MCP server). */
export function createNotesHandler(store = new NotesStore()) {
  const tools: Record<string, (args: Record<string, unknown>, auth: AuthInfo) => Record<string, unknown>> = {
    whoami: (_args, auth) =>
      text(JSON.stringify({ subject: auth.extra.sub ?? null, client: auth.clientId, scopes: auth.scopes })),
    notes_list: (_args, auth) => {
      const notes = store.list(noteOwner(auth));
      return text(notes.length ? notes.map((n, i) => `${i + 1}. ${n}`).join('\n') : '(no notes yet)');
    },
    notes_add: (args, auth) => {
      // Argument problems are tool results with isError, not protocol errors.
      if (typeof args.text !== 'string' || args.text.trim() === '') return text('notes_add needs {"text": "<non-empty string>"}', true);
      if (args.text.length > 2000) return text('note too long (2000 characters at most)', true);
      const n = store.add(noteOwner(auth), args.text);
      return text(`added note #${n}`);
    },
    notes_clear: (_args, auth) => text(`deleted ${store.clear(noteOwner(auth))} notes`),
  };
  const toolMap = new Map(Object.entries(tools));
  return dispatchTable({
    initialize: (params) => {
      const asked = typeof params.protocolVersion === 'string' ? params.protocolVersion : '';
      return {
        protocolVersion: SUPPORTED_VERSIONS.includes(asked) ? asked : SUPPORTED_VERSIONS[0],
        capabilities: { tools: { listChanged: false } },
        serverInfo: SERVER_INFO,
        instructions: 'Personal notes. Reading needs notes:read, adding notes:write, clearing notes:admin.',
      };
    },
    // 2026-07-28: stateless clients discover versions and capabilities instead of initializing.
    'server/discover': () => ({
      supportedVersions: [STATELESS_VERSION, ...SUPPORTED_VERSIONS],
      capabilities: { tools: { listChanged: false } },
      ttlMs: 3_600_000,
      cacheScope: 'public',
      _meta: { 'io.modelcontextprotocol/serverInfo': SERVER_INFO },
    }),
    ping: () => ({}),
    'notifications/initialized': () => undefined,
    'tools/list': () => ({ tools: notesTools }),
    'tools/call': (params, { auth }) => {
      const name = params.name;
      const tool = typeof name === 'string' ? toolMap.get(name) : undefined;
      if (!tool) return text(`unknown tool: ${String(name)}`, true);
      const args = typeof params.arguments === 'object' && params.arguments !== null ? (params.arguments as Record<string, unknown>) : {};
      return tool(args, auth);
    },
  });
}

/** Options of {@link startNotesServer}. */
export interface NotesServerOptions extends Partial<GuardOptions> {
  /** Default 127.0.0.1. */
  host?: string;
  /** Default 0 (any free port). */
  port?: number;
}

/** A running notes server. */
export interface RunningNotesServer extends GuardedServer {
  store: NotesStore;
}

/**
 * Starts the notes server on loopback. The resource defaults to `http://HOST:PORT/mcp` with the port
 * actually bound, so port 0 works in tests.
 */
export async function startNotesServer(options: NotesServerOptions): Promise<RunningNotesServer> {
  const { host = '127.0.0.1', port = 0, ...guardOptions } = options;
  const store = new NotesStore();
  const running = await listenWithGuard(host, port, (defaultResource) =>
    mcpOAuthGuard({
      policy: notesPolicy,
      challengeScopes: notesChallengeScopes,
      resourceName: 'Notes (mcp-oauth-guard example)',
      ...guardOptions,
      resource: guardOptions.resource ?? defaultResource,
      handler: createNotesHandler(store),
    }),
  );
  return { ...running, store };
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  void runExampleFromEnv('notes MCP server', (options) => startNotesServer({ policy: notesPolicy, ...options }), { policy: notesPolicy, catalog: { tools: notesTools.map((tool) => tool.name) } });
}
