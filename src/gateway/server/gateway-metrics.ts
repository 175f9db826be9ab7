import { collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import { createGuardMetrics, type GuardMetrics } from '../../metrics/guard-metrics.js';
import { methodLabel } from '../../metrics/metric-labels.js';
import type { GuardedRequest } from '../../http/http-handler.js';
import type { RequestLogEntry } from './request-log.js';
import type { UpstreamExchange } from '../upstream/upstream.js';

/** Options of {@link createGatewayMetrics}. */
export interface GatewayMetricsOptions {
  /** Tool names allowed as `tool` label values (the policy's), or undefined for no `tool` label. */
  toolLabels?: readonly string[];
  /** Upstream sessions held right now, read at each scrape for `mcp_guard_sessions`. */
  sessions: () => number | undefined;
}

/** The gateway's metrics: the guard's, the upstream's and the process's, in a registry of their own. */
export interface GatewayMetrics {
  readonly registry: Registry;
  /** The guard's metrics; its token and JWKS hooks go into the guard's options. */
  readonly guard: GuardMetrics;
  /** Pass as the request log's `onEntry`: counts each decided request and observes its duration. */
  onEntry(entry: Readonly<RequestLogEntry>): void;
  /** Pass as the upstream proxy's `onExchangeEnd`: observes `mcp_guard_upstream_request_duration_seconds`. */
  onExchangeEnd(req: GuardedRequest, exchange: UpstreamExchange): void;
}

/** Bounds of `mcp_guard_upstream_request_duration_seconds`, in seconds. */
const UPSTREAM_DURATION_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300];

/**
 * Builds the gateway's metrics in a new registry (the gateway's own listener serves it; an embedding application's
 * default registry is left alone): {@link createGuardMetrics}'s, plus
 * - `mcp_guard_upstream_request_duration_seconds{method,outcome}` (histogram: from sending the request upstream to
 *   the end of its answer; `outcome` is `complete`, `client_closed` or the gateway's failure reason); standalone
 *   GET streams are left out, as their length is the client's choice, not the upstream's latency;
 * - `mcp_guard_sessions` (gauge: upstream sessions held, read at scrape time, so it costs nothing per request);
 * - prom-client's default process metrics (`process_*`, `nodejs_*`).
 *
 * Requests are counted when their answer ends, from the request log's entry: there the guard's decision and
 * the gateway's own refusals of a session it does not know meet, so a request the guard allowed and the gateway
 * refused counts once, as the refusal. Requests nobody decides on (metadata, health) are not counted.
 */
export function createGatewayMetrics(options: GatewayMetricsOptions): GatewayMetrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const guard = createGuardMetrics({ registry, ...(options.toolLabels ? { toolLabels: options.toolLabels } : {}) });
  const upstream = new Histogram({
    name: 'mcp_guard_upstream_request_duration_seconds',
    help: 'Time from sending a request to the upstream MCP server to the end of its answer, in seconds, by JSON-RPC method and outcome (complete, client_closed, or why it failed).',
    labelNames: ['method', 'outcome'],
    buckets: UPSTREAM_DURATION_BUCKETS,
    registers: [registry],
  });
  const sessions = options.sessions;
  new Gauge({
    name: 'mcp_guard_sessions',
    help: 'Upstream MCP sessions the gateway holds, each bound to its caller.',
    registers: [registry],
    collect() {
      this.set(sessions() ?? 0);
    },
  });
  /** method → outcome → child; both from bounded sets. */
  const upstreamChildren = new Map<string, Map<string, Histogram.Internal<string>>>();

  return {
    registry,
    guard,
    onEntry(entry) {
      if (entry.decision === undefined || entry.reason === undefined) return;
      guard.recordRequest({
        decision: entry.decision,
        reason: entry.reason,
        httpMethod: entry.httpMethod,
        method: entry.method,
        name: entry.name,
        durationSeconds: entry.durationMs / 1000,
      });
    },
    onExchangeEnd(req, exchange) {
      if (exchange.httpMethod === 'GET') return;
      const sent = (req.body as { method?: unknown } | undefined)?.method;
      const method = methodLabel(typeof sent === 'string' ? sent : undefined, exchange.httpMethod);
      let byOutcome = upstreamChildren.get(method);
      if (byOutcome === undefined) upstreamChildren.set(method, (byOutcome = new Map()));
      let child = byOutcome.get(exchange.outcome);
      if (child === undefined) byOutcome.set(exchange.outcome, (child = upstream.labels(method, exchange.outcome)));
      child.observe(exchange.durationMs / 1000);
    },
  };
}
