import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { createGuardMetrics, type GuardMetrics } from '../../metrics/guard-metrics.js';
import { methodLabel } from '../../metrics/metric-labels.js';
import type { GuardedRequest } from '../../http/http-handler.js';
import type { RequestLogEntry } from './request-log.js';
import type { UpstreamExchange, UpstreamHooks } from '../upstream/upstream.js';

/** Options of {@link createGatewayMetrics}. */
export interface GatewayMetricsOptions {
  /** Tool names allowed as `tool` label values (the policy's), or undefined for no `tool` label. */
  toolLabels?: readonly string[];
  /** Upstream sessions held right now, read at each scrape for `mcp_guard_sessions`. */
  sessions: () => number | undefined;
  /**
   * The server names of a gateway with several servers (its configuration file's, so a bounded set): the upstream
   * metrics then carry a `server` label, and the per-server series exist. Absent with one upstream.
   */
  servers?: readonly string[];
}

/** The gateway's metrics: the guard's, the upstream's and the process's, in a registry of their own. */
export interface GatewayMetrics {
  readonly registry: Registry;
  /** The guard's metrics; its token and JWKS hooks go into the guard's options. */
  readonly guard: GuardMetrics;
  /** Pass as the request log's `onEntry`: counts each decided request and observes its duration. */
  onEntry(entry: Readonly<RequestLogEntry>): void;
  /**
   * Pass as the one upstream's `onExchangeEnd`: observes `mcp_guard_upstream_request_duration_seconds`. With
   * several servers, use {@link GatewayMetrics.exchangeEndOf} instead (this one then observes nothing).
   */
  onExchangeEnd(req: GuardedRequest, exchange: UpstreamExchange): void;
  /** With several servers: the `onExchangeEnd` of one server's upstream, observing with its `server` label. */
  exchangeEndOf(server: string): NonNullable<UpstreamHooks['onExchangeEnd']>;
  /** With several servers: counts a server left out of a merged list (`mcp_guard_upstream_list_failures_total`). */
  onListFailure(server: string, method: string, reason: string): void;
  /** With several servers: sets `mcp_guard_upstream_ready` of a server from a readiness probe. */
  onServerProbed(server: string, ok: boolean): void;
  /**
   * With pins (`MCP_AUTH_PINS`): counts a listed tool that differs from its pin, once per change logged
   * (`mcp_guard_tool_pin_mismatches_total{server,change}`; `server` is `upstream` for the single upstream).
   */
  onPinMismatch(server: string, change: 'changed' | 'added'): void;
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
 * With several servers (`servers`), the upstream histogram is
 * `mcp_guard_upstream_request_duration_seconds{server,method,outcome}` (HTTP servers: a stdio upstream does not
 * time its exchanges), and two series exist per server:
 * - `mcp_guard_upstream_list_failures_total{server,method,reason}` (counter: the server was left out of a merged
 *   list; `reason` is `upstream_timeout`, `upstream_unreachable`, `upstream_refused`, `upstream_invalid` or
 *   `upstream_session`: its session could not be opened, or it needs one and the request had none);
 * - `mcp_guard_upstream_ready{server}` (gauge: 1 when the most recent readiness probe, `/readyz`, found the server
 *   ready, else 0; absent until the first probe).
 * One upstream's series and labels are unchanged.
 *
 * Requests are counted when their answer ends, from the request log's entry: there the guard's decision and
 * the gateway's own refusals of a session it does not know meet, so a request the guard allowed and the gateway
 * refused counts once, as the refusal. Requests nobody decides on (metadata, health) are not counted.
 */
export function createGatewayMetrics(options: GatewayMetricsOptions): GatewayMetrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const guard = createGuardMetrics({ registry, ...(options.toolLabels ? { toolLabels: options.toolLabels } : {}) });
  const upstream = new UpstreamDurations(registry, options.servers);
  const perServer = options.servers ? new ServerSeries(registry) : undefined;
  const sessions = options.sessions;
  new Gauge({
    name: 'mcp_guard_sessions',
    help: 'Upstream MCP sessions the gateway holds, each bound to its caller.',
    registers: [registry],
    collect() {
      this.set(sessions() ?? 0);
    },
  });
  const single = options.servers ? undefined : upstream.of(undefined);
  // Labels from bounded sets: the configuration's server names, and two kinds of change.
  const pinMismatches = new Counter({
    name: 'mcp_guard_tool_pin_mismatches_total',
    help: 'Listed tools whose definition differs from their pin (change="changed") or that have none (change="added"), by server; each change counted once (MCP_AUTH_PINS).',
    labelNames: ['server', 'change'],
    registers: [registry],
  });
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
      single?.observe(req, exchange);
    },
    exchangeEndOf(server) {
      const durations = upstream.of(server);
      return (req, exchange) => durations.observe(req, exchange);
    },
    onListFailure(server, method, reason) {
      perServer?.listFailures.labels(server, methodLabel(method, 'POST'), reason).inc();
    },
    onServerProbed(server, ok) {
      perServer?.ready.labels(server).set(ok ? 1 : 0);
    },
    onPinMismatch(server, change) {
      pinMismatches.labels(server, change).inc();
    },
  };
}

/** `mcp_guard_upstream_request_duration_seconds`, with a `server` label only when the gateway has several. */
class UpstreamDurations {
  readonly histogram: Histogram<string>;

  constructor(
    registry: Registry,
    private readonly servers: readonly string[] | undefined,
  ) {
    // prom-client fixes label names at creation: the one upstream's series keep their labels.
    this.histogram = new Histogram({
      name: 'mcp_guard_upstream_request_duration_seconds',
      help: servers
        ? 'Time from sending a request to an upstream MCP server to the end of its answer, in seconds, by server, JSON-RPC method and outcome (complete, client_closed, or why it failed).'
        : 'Time from sending a request to the upstream MCP server to the end of its answer, in seconds, by JSON-RPC method and outcome (complete, client_closed, or why it failed).',
      labelNames: servers ? ['server', 'method', 'outcome'] : ['method', 'outcome'],
      buckets: UPSTREAM_DURATION_BUCKETS,
      registers: [registry],
    });
  }

  /** The observer of one server's exchanges (`undefined`: the one upstream). */
  of(server: string | undefined): UpstreamDurationObserver {
    return new UpstreamDurationObserver(this.histogram, this.servers && server !== undefined ? server : undefined);
  }
}

/** Observes one upstream's exchanges, its children cached by method and outcome (both from bounded sets). */
class UpstreamDurationObserver {
  /** method → outcome → child. */
  private readonly children = new Map<string, Map<string, Histogram.Internal<string>>>();

  constructor(
    private readonly histogram: Histogram<string>,
    /** The `server` label value; undefined with one upstream (no such label). */
    private readonly server: string | undefined,
  ) {}

  observe(req: GuardedRequest, exchange: UpstreamExchange): void {
    if (exchange.httpMethod === 'GET') return;
    const sent = (req.body as { method?: unknown } | undefined)?.method;
    const method = methodLabel(typeof sent === 'string' ? sent : undefined, exchange.httpMethod);
    let byOutcome = this.children.get(method);
    if (byOutcome === undefined) this.children.set(method, (byOutcome = new Map()));
    let child = byOutcome.get(exchange.outcome);
    if (child === undefined) {
      child = this.server === undefined ? this.histogram.labels(method, exchange.outcome) : this.histogram.labels(this.server, method, exchange.outcome);
      byOutcome.set(exchange.outcome, child);
    }
    child.observe(exchange.durationMs / 1000);
  }
}

/** The series a gateway with several servers has per server. */
class ServerSeries {
  readonly listFailures: Counter<string>;
  readonly ready: Gauge<string>;

  constructor(registry: Registry) {
    this.listFailures = new Counter({
      name: 'mcp_guard_upstream_list_failures_total',
      help: 'Merged lists (tools/list, prompts/list, resources/list, resources/templates/list) a server was left out of, by server, JSON-RPC method and reason.',
      labelNames: ['server', 'method', 'reason'],
      registers: [registry],
    });
    this.ready = new Gauge({
      name: 'mcp_guard_upstream_ready',
      help: 'Whether the most recent readiness probe (/readyz) found a server ready (1) or not (0), by server.',
      labelNames: ['server'],
      registers: [registry],
    });
  }
}
