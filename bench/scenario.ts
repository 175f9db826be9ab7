/**
 * What the benchmark serves and sends, shared by the server and load processes: one fixed `tools/list`
 * answer, the policy the guarded server enforces and the request every scenario sends.
 */
import type { PolicyDefinition } from '../src/index.js';
import type { HopTarget, StdioTarget } from './hop-scenario.js';

/**
 * The servers' processes: `bare` (Express alone), `guarded` (mcpOAuthGuard), `floor` (bare plus a bare
 * `node:crypto` ES256 signature check: what any new-token verification must at least cost) and `peer` (bare
 * behind the official SDK's `requireBearerAuth` with a jose verifier).
 */
export type ServerMode = 'bare' | 'guarded' | 'floor' | 'peer';

/**
 * Load scenarios: `bare` (no guard), `cached` (guarded, one token reused by every request), `fresh`
 * (guarded, a never-seen token on every request: signature check, cache miss, insert and eviction), and the
 * new-token anchors `floor` and `peer` (their servers, a never-seen token on every request too).
 */
export type Scenario = 'bare' | 'cached' | 'fresh' | 'floor' | 'peer';

/** The scenarios of the Express part, in the order each round runs them: `fresh` between its two anchors. */
export const EXPRESS_SCENARIOS = ['bare', 'cached', 'floor', 'fresh', 'peer'] as const satisfies readonly Scenario[];

/** Whether `scenario` sends a never-used token on every request (from the minted pool). */
export function usesNewTokens(scenario: Scenario | HopTarget | StdioTarget): boolean {
  return scenario === 'fresh' || scenario === 'floor' || scenario === 'peer';
}

/** The fixed tool list (4 tools, JSON Schema inputs), as a real small MCP server would answer it. */
export const TOOLS = [
  { name: 'search', description: 'Search the notes.', inputSchema: { type: 'object', properties: { query: { type: 'string' } }, required: ['query'] } },
  { name: 'read_note', description: 'Read one note.', inputSchema: { type: 'object', properties: { id: { type: 'string' } }, required: ['id'] } },
  {
    name: 'add_note',
    description: 'Add a note.',
    inputSchema: { type: 'object', properties: { text: { type: 'string', minLength: 1, maxLength: 2000 } }, required: ['text'] },
  },
  { name: 'clear_notes', description: 'Delete every note.', inputSchema: { type: 'object', properties: {} } },
];

/**
 * A policy with a base scope, per-tool scopes and a hierarchy: filtering runs over every item, and the
 * benchmark token ({@link TOKEN_SCOPE}) may see all four tools, so the answer is not shrunk.
 */
export const POLICY: PolicyDefinition = {
  requiredScopes: ['mcp'],
  tools: {
    search: ['notes:read'],
    read_note: ['notes:read'],
    add_note: ['notes:write'],
    clear_notes: ['notes:admin'],
    '*': ['notes:admin'],
  },
  scopeHierarchy: { 'notes:admin': ['notes:write'], 'notes:write': ['notes:read'] },
};

/** Scopes granted to every benchmark token. */
export const TOKEN_SCOPE = 'mcp notes:admin';

/** The JSON-RPC request every scenario POSTs. */
export const REQUEST_BODY = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} });

/** Headers every scenario sends (the bare server gets the Authorization header too, and ignores it). */
export const REQUEST_HEADERS: Readonly<Record<string, string>> = {
  'content-type': 'application/json',
  accept: 'application/json, text/event-stream',
  'mcp-protocol-version': '2025-11-25',
};

/** Messages the parent sends a server process. */
export type ServerCommand = { type: 'memory' } | { type: 'cpu' } | { type: 'stop' };

/** Messages a server process sends its parent. */
export type ServerReport =
  | { type: 'ready'; url: string }
  | { type: 'memory'; usage: NodeJS.MemoryUsage }
  | { type: 'cpu'; usage: NodeJS.CpuUsage }
  | { type: 'error'; message: string };

/** One load run, as the parent asks for it. */
export interface RunRequest {
  url: string;
  /** An Express scenario, or a target of the gateway-hop benchmark (which sends its reused token) or of its stdio part. */
  scenario: Scenario | HopTarget | StdioTarget;
  durationSeconds: number;
  connections: number;
  /** The body to POST. Default {@link REQUEST_BODY}. */
  body?: string;
  /** Headers sent besides {@link REQUEST_HEADERS} (e.g. a 2026-07-28 request's `MCP-Protocol-Version`). */
  headers?: Record<string, string>;
  /** Send the reused token minted for this resource (see the `token` command) instead of the first one. */
  tokenResource?: string;
  /**
   * One session per connection: each connection sends, on every request, a session the `sessions` command
   * opened at `url` (its own, no two connections share one) and that session's own token.
   */
  sessions?: boolean;
}

/** What the parent keeps of one autocannon run. */
export interface RunSummary {
  scenario: Scenario | HopTarget | StdioTarget;
  /** Mean of autocannon's per-second samples. */
  requestsPerSecond: number;
  /** Latency percentiles, in milliseconds. */
  p50Ms: number;
  p99Ms: number;
  totalRequests: number;
  /** Mean of autocannon's per-second samples of bytes received. */
  bytesPerSecond: number;
  non2xx: number;
  /** Answers by HTTP status (`"200"`, `"429"`, …). */
  statusCodes: Record<string, number>;
  errors: number;
  timeouts: number;
  /**
   * Server CPU time (user + system, every thread) per completed request, in microseconds; set by the
   * parent. Less sensitive than req/s to other load on the machine.
   */
  serverCpuUsPerRequest?: number;
  /** New-token scenarios only: tokens used, and whether the pool ran out (then tokens were reused, which flatters). */
  tokensUsed?: number;
  tokensExhausted?: boolean;
}

/** Messages the parent sends the load process. */
export type LoadCommand =
  | { type: 'mint'; id: number; resource: string; count: number }
  /** `claims`: more claims in the token (group and tenant claims for policy conditions). */
  | { type: 'token'; id: number; resource: string; claims?: Record<string, unknown> }
  | { type: 'run'; id: number; run: RunRequest }
  | { type: 'probe'; id: number; url: string; body?: string; headers?: Record<string, string>; tokenResource?: string; session?: boolean }
  /** Opens `count` MCP sessions at `url` (initialize, then initialized), each with its own token for `tokenResource`. */
  | { type: 'sessions'; id: number; url: string; count: number; tokenResource: string }
  /** Ends the sessions opened at `url` (DELETE). */
  | { type: 'closeSessions'; id: number; url: string }
  /**
   * A new client's first request: opens a session at `url` with the reused token for `tokenResource` (initialize,
   * then initialized), times `body` sent in it, and ends the session (DELETE).
   */
  | { type: 'firstRequest'; id: number; url: string; tokenResource: string; body: string }
  | { type: 'stop' };

/** Messages the load process sends its parent. */
export type LoadReport =
  | { type: 'issuer'; issuer: string }
  | { type: 'minted'; id: number; count: number; ms: number }
  /** The reused token of the resource is minted: the user it names (its `iss` and `sub`), for a connection stored for them. */
  | { type: 'token'; id: number; issuer: string; subject: string }
  | { type: 'result'; id: number; summary: RunSummary }
  /** The answer to `probe`, and how long it took from sending the request to its last byte (ms). */
  | { type: 'probed'; id: number; status: number; body: string; ms: number }
  | { type: 'sessions'; id: number; count: number }
  /** The answer to `firstRequest`, and how long it took from sending the request to its last byte (ms). */
  | { type: 'firstAnswered'; id: number; ms: number; status: number; body: string }
  | { type: 'error'; id?: number; message: string };
