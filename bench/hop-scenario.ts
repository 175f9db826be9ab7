/**
 * What the gateway-hop benchmark serves and sends, shared by its processes: the upstream's two answers, the
 * gateway's policy, the two requests, and the messages the hop processes exchange with the parent.
 *
 * Two workloads: `call`, a small `tools/call` answered with a small JSON result (the per-request cost of a
 * hop), and `list`, a `tools/list` of 1,000 tools (about 150 KB) of which the gateway's policy hides every
 * second one from the benchmark token (the cost of filtering a large answer). The token may call
 * {@link CALLED_TOOL}.
 */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import type { PolicyDefinition } from '../src/index.js';

/**
 * What stands in front of the upstream (or not, for `upstream`), in the order each round runs them. The gateway's
 * variants are more gateway processes, sent the same requests, each with a token for its own resource:
 * - `gateway-sealed`: with a session secret (`MCP_AUTH_SESSION_SECRET`), each connection in a session of its own
 *   (the upstream issues them; the gateway seals their ids): what sealed sessions cost next to the plain hop,
 *   which the benchmark sends no session;
 * - `gateway-limited`: with a rate limit per caller (`MCP_AUTH_RATE_LIMIT`) counted in the process, too high to
 *   refuse anything in the run: what counting costs;
 * - `gateway-shared-limits`: the same limit kept in a redis-server the benchmark starts (`MCP_AUTH_REDIS_URL`):
 *   what a limit shared by a fleet costs, a Redis round trip per request;
 * - `gateway-audited`: with the audit trail on, writing to a file (`MCP_AUTH_AUDIT`): what a record per request costs;
 * - `gateway-baseline`: the plain gateway loaded from another compiled build (`BENCH_BASELINE`), measured only when
 *   one is given: an earlier version's figures in the same run, so that a change is judged within one run.
 */
export const HOP_TARGETS = ['upstream', 'nginx', 'node-proxy', 'gateway', 'gateway-sealed', 'gateway-limited', 'gateway-shared-limits', 'gateway-audited', 'gateway-baseline'] as const;
export type HopTarget = (typeof HOP_TARGETS)[number];

/** Whether `target` is the gateway or one of its variants (a policy applies: the list is filtered). */
export function isGatewayTarget(target: HopTarget): boolean {
  return target === 'gateway' || target.startsWith('gateway-');
}

/**
 * The stdio part: one stdio MCP server (`stdio-server.ts`) behind each of these, one session (one child
 * process) per load-generator connection, in the order each round runs them. `bridge`: the bare per-session
 * bridge, the anchor (`stdio-bridge.ts`); `supergateway` and `mcp-proxy`: the npm bridges people use today,
 * without authentication; `gateway`: mcp-oauth-guard with a stdio upstream, authentication and policy on every call.
 */
export const STDIO_TARGETS = ['bridge', 'supergateway', 'mcp-proxy', 'gateway'] as const;
export type StdioTarget = (typeof STDIO_TARGETS)[number];

/** The `initialize` each stdio-part session starts with, and the notification that completes it. */
export const INITIALIZE_BODY = JSON.stringify({
  jsonrpc: '2.0',
  id: 0,
  method: 'initialize',
  params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'mcp-oauth-guard-bench', version: '1.0.0' } },
});
export const INITIALIZED_BODY = JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' });

/**
 * `call`: a small tools/call. `list`: the 1,000-tool tools/list, the same bytes every time (the gateway may
 * reuse its filtered answer). `list-fresh`: the same list with a `nextCursor` that changes on every answer,
 * so nothing can be reused and every answer is parsed and filtered.
 */
export const HOP_WORKLOADS = ['call', 'list', 'list-fresh'] as const;
export type HopWorkload = (typeof HOP_WORKLOADS)[number];

/** Tools in the `list` answer. */
export const LIST_SIZE = 1_000;

/** The name of tool `i`: `tool_0000` … `tool_0999`. */
export function toolName(i: number): string {
  return `tool_${String(i).padStart(4, '0')}`;
}

/** `count` tools from `tool_<first>` on (default the 1,000), each about 150 bytes of JSON. */
export function listTools(first = 0, count = LIST_SIZE): Array<{ name: string; description: string; inputSchema: object }> {
  return Array.from({ length: count }, (_, n) => first + n).map((i) => ({
    name: toolName(i),
    description: `Looks up records in collection ${i}.`,
    inputSchema: { type: 'object', properties: { query: { type: 'string' } }, required: ['query'] },
  }));
}

/** The tool the `call` workload calls; visible to the benchmark token. */
export const CALLED_TOOL = toolName(0);

/** The small result the upstream answers every `tools/call` with. */
export const CALL_RESULT = { content: [{ type: 'text', text: 'Found 3 records matching "notes".' }], isError: false };

/** A scope the benchmark token does not hold: every odd-numbered tool needs it. */
export const HIDDEN_SCOPE = 'billing:admin';

/**
 * The gateway's policy: the base scope `mcp`, every tool readable with `notes:read` (implied by the token's
 * `notes:admin`), and every odd-numbered tool needing {@link HIDDEN_SCOPE}, which the token lacks: the
 * filtered list keeps 500 of the 1,000 tools.
 */
export function gatewayPolicy(): PolicyDefinition {
  const tools: Record<string, string[]> = { '*': ['notes:read'] };
  for (let i = 1; i < LIST_SIZE; i += 2) tools[toolName(i)] = [HIDDEN_SCOPE];
  return {
    requiredScopes: ['mcp'],
    tools,
    scopeHierarchy: { 'notes:admin': ['notes:write'], 'notes:write': ['notes:read'] },
  };
}

/** The JSON-RPC request each workload POSTs. */
export const HOP_BODIES: Record<HopWorkload, string> = {
  call: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: CALLED_TOOL, arguments: { query: 'notes' } } }),
  list: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} }),
  'list-fresh': JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: { cursor: 'fresh' } }),
};

/** Tools each target's `list` answer carries: all of them, except behind the gateway. */
export function expectedTools(target: HopTarget): number {
  return isGatewayTarget(target) ? LIST_SIZE / 2 : LIST_SIZE;
}

/** How the gateway writes its per-request log (`BENCH_GATEWAY_LOG`). */
export type GatewayLogMode = 'stdout' | 'off';

/** Messages the parent sends a hop process (upstream, minimal Node proxy, gateway). */
export type HopCommand = { type: 'stats' } | { type: 'stop' };

/** What a hop process measures of itself: CPU (all threads) and event-loop utilisation since start. */
export interface HopStats {
  cpu: NodeJS.CpuUsage;
  elu: { idle: number; active: number; utilization: number };
  /**
   * An upstream given `expect-bearer` tokens: requests it answered since start, and how many of them carried
   * `Authorization: Bearer <token>`, for each token in the order given (the connected-accounts part checks that a
   * gateway sent the credential it was meant to).
   */
  bearers?: { requests: number; matched: number[] };
}

/** Messages a hop process sends its parent. */
export type HopReport = { type: 'ready'; url: string } | { type: 'stats'; stats: HopStats } | { type: 'error'; message: string };

/**
 * Answers `stats` and `stop` from the parent; `stop` closes `server` and exits (so `--cpu-prof` writes its profile).
 * `more` adds the process's own figures to each `stats` answer.
 */
export function serveHopCommands(close: () => void, more?: () => Partial<HopStats>): void {
  process.on('message', (command: HopCommand) => {
    if (command.type === 'stats') {
      const elu = performance.eventLoopUtilization();
      const report: HopReport = { type: 'stats', stats: { cpu: process.cpuUsage(), elu: { idle: elu.idle, active: elu.active, utilization: elu.utilization }, ...more?.() } };
      process.send?.(report);
    } else if (command.type === 'stop') {
      close();
      process.exit(0);
    }
  });
  process.on('disconnect', () => process.exit(0));
}

/**
 * Starts a hop process's server on a loopback port, keeps client connections for the whole run, and reports
 * `ready` with its `/mcp` URL; on `stop` it closes the server and its connections, then runs `onStop`. `more`: see
 * {@link serveHopCommands}.
 */
export function listenHop(server: Server, onStop?: () => void, more?: () => Partial<HopStats>): void {
  // Autocannon and the proxies keep their connections for the whole run.
  server.keepAliveTimeout = 60_000;
  server.once('error', failHop);
  server.listen(0, '127.0.0.1', () => {
    serveHopCommands(() => {
      server.closeAllConnections();
      server.close();
      onStop?.();
    }, more);
    const report: HopReport = { type: 'ready', url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp` };
    process.send?.(report);
  });
}

/** Reports a start-up failure to the parent and exits. */
export function failHop(error: unknown): void {
  const report: HopReport = { type: 'error', message: error instanceof Error ? (error.stack ?? error.message) : String(error) };
  process.send?.(report);
  process.exit(1);
}
