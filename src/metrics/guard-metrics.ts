import { Counter, Histogram, type Registry } from 'prom-client';
import type { DecisionEvent, DecisionHook } from '../core/kernel/decision.js';
import { ConfigurationError } from '../core/kernel/errors.js';
import type { JwksFetchResult, TokenVerificationResult } from '../core/token/token-verifier.js';
import { createReasonLabel, createToolLabel, methodLabel } from './metric-labels.js';

/** Options of {@link createGuardMetrics}. */
export interface GuardMetricsOptions {
  /** The prom-client registry to register the metrics in: the application's, e.g. prom-client's `register`. */
  registry: Registry;
  /**
   * Adds a `tool` label to `mcp_guard_requests_total`, whose values are these tool names (the first 100; e.g.
   * the policy's) and `other` for every other tool. Default: no `tool` label. Never set it from client input.
   */
  toolLabels?: readonly string[];
}

/** Facts of one request, for {@link GuardMetrics.recordRequest}: a `DecisionEvent` has them all but the duration. */
export interface RequestFacts {
  decision: 'allow' | 'deny';
  /** The decision's stable code (`allowed`, `token_expired`, `rate_limited`, a session refusal…). */
  reason: string;
  /** HTTP method of the request. */
  httpMethod: string;
  /** JSON-RPC method, when the body was a message. */
  method?: string;
  /** Tool, prompt or resource the message named. */
  name?: string;
  /** From arrival to the end of the answer, in seconds; observed in `mcp_guard_request_duration_seconds` when given. */
  durationSeconds?: number;
}

/** The guard's Prometheus metrics, and the hooks that feed them. */
export interface GuardMetrics {
  /** The registry the metrics are in. */
  readonly registry: Registry;
  /**
   * The guard hooks, to spread into the guard's options (`{ ...options, ...metrics.hooks, handler }`). To
   * keep a decision hook of your own, call `metrics.onDecision(event)` from it.
   */
  readonly hooks: {
    readonly onDecision: DecisionHook;
    readonly onTokenVerification: (result: TokenVerificationResult) => void;
    readonly onJwksFetch: (result: JwksFetchResult) => void;
    readonly onAuditDropped: (records: number) => void;
  };
  /** Counts a decision as one request (`mcp_guard_requests_total`, and `mcp_guard_rate_limited_total` when it says so). */
  onDecision(event: DecisionEvent): void;
  /** Counts one request, and observes its duration when known: for servers that time their requests, as the gateway does. */
  recordRequest(facts: RequestFacts): void;
  /**
   * Replaces the tool names allowed as `tool` label values, e.g. with the tools of a policy just reloaded; series
   * already written stay. Does nothing when the metrics were created without `toolLabels` (there is no `tool` label).
   *
   * @throws ConfigurationError naming `toolLabels` when `tools` is not a list of names.
   */
  setToolLabels(tools: readonly string[]): void;
}

/** Bounds of `mcp_guard_request_duration_seconds`, in seconds: a cached token's check to a slow tool call. */
export const REQUEST_DURATION_BUCKETS: readonly number[] = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

/**
 * Registers the guard's metrics in an application's prom-client registry and returns the hooks that feed them,
 * so that the middleware reports what the gateway reports:
 *
 * - `mcp_guard_requests_total{method,decision,reason}` (counter; `tool` too with `toolLabels`);
 * - `mcp_guard_request_duration_seconds{method,decision}` (histogram; fed by {@link GuardMetrics.recordRequest}
 *   with a duration, as the decision hook cannot know when the answer ends);
 * - `mcp_guard_token_verifications_total{result}` (counter: `cache_hit`, `verified`, `refused`, `unavailable`);
 * - `mcp_guard_jwks_fetches_total{result}` (counter: `success`, `failure`);
 * - `mcp_guard_rate_limited_total` (counter: decisions with reason `rate_limited`);
 * - `mcp_guard_audit_dropped_total` (counter: audit records dropped because the audit destination could not keep up
 *   and the buffer was full, or refused a write; see docs/audit.md).
 *
 * Labels are bounded (see `methodLabel`): MCP's methods or `other`, the decision, its reason code; never a subject,
 * a client id or a token. Per request, the work is a counter increment on a label child looked up in a map made
 * as combinations first occur (prom-client's `labels()` hashes its arguments on every call).
 *
 * @example
 * import { register } from 'prom-client';
 * import { createGuardMetrics } from 'mcp-oauth-guard/metrics';
 * const metrics = createGuardMetrics({ registry: register });
 * app.use(mcpOAuthGuard({ ...loadOptionsFromEnv(), ...metrics.hooks, handler }));
 * @throws ConfigurationError naming `registry` when it is not a prom-client registry or already has these metrics
 *   (create them once per registry and share them), or `toolLabels` when it is not a list of names.
 */
export function createGuardMetrics(options: GuardMetricsOptions): GuardMetrics {
  const registry = options?.registry;
  if (registry === null || typeof registry !== 'object' || typeof registry.registerMetric !== 'function' || typeof registry.getSingleMetric !== 'function') {
    throw new ConfigurationError('registry', "must be a prom-client Registry, e.g. prom-client's register");
  }
  const toolLabels = options.toolLabels;
  const checkToolLabels = (tools: unknown): void => {
    if (!Array.isArray(tools) || !tools.every((t) => typeof t === 'string')) throw new ConfigurationError('toolLabels', 'must be a list of tool names');
  };
  if (toolLabels !== undefined) checkToolLabels(toolLabels);
  for (const name of METRIC_NAMES) {
    if (registry.getSingleMetric(name) !== undefined) {
      throw new ConfigurationError('registry', `already has ${name}: create the guard's metrics once per registry and share them between guards`);
    }
  }
  const registers = [registry];

  const requests = new Counter({
    name: 'mcp_guard_requests_total',
    help: 'Requests the guard decided on, by JSON-RPC method (MCP methods; others as "other"), decision and reason code.',
    labelNames: toolLabels === undefined ? ['method', 'decision', 'reason'] : ['method', 'decision', 'reason', 'tool'],
    registers,
  });
  const durations = new Histogram({
    name: 'mcp_guard_request_duration_seconds',
    help: 'Time from the arrival of a request to the end of its answer (of the stream, for event streams), in seconds.',
    labelNames: ['method', 'decision'],
    buckets: [...REQUEST_DURATION_BUCKETS],
    registers,
  });
  const verifications = new Counter({
    name: 'mcp_guard_token_verifications_total',
    help: 'Access token checks by result: cache_hit (a verified identity reused), verified, refused (invalid, 401), unavailable (could not be checked, 503).',
    labelNames: ['result'],
    registers,
  });
  const jwksFetches = new Counter({
    name: 'mcp_guard_jwks_fetches_total',
    help: "Requests for the authorization server's signing keys (JWKS), by result: success or failure.",
    labelNames: ['result'],
    registers,
  });
  const rateLimited = new Counter({
    name: 'mcp_guard_rate_limited_total',
    help: 'Requests refused for exceeding a rate limit (decision reason rate_limited).',
    registers,
  });

  const auditDropped = new Counter({
    name: 'mcp_guard_audit_dropped_total',
    help: 'Audit records dropped: the audit destination did not keep up and the buffer was full, or a write failed.',
    registers,
  });

  // Every child of these two is known in advance.
  const verificationChildren = Object.fromEntries(VERIFICATION_RESULTS.map((r) => [r, verifications.labels(r)])) as Record<TokenVerificationResult, Counter.Internal>;
  const jwksChildren = { success: jwksFetches.labels('success'), failure: jwksFetches.labels('failure') } satisfies Record<JwksFetchResult, Counter.Internal>;
  // Zero-valued series exist from the start, so that rate() and alerts work before the first event.
  for (const child of [...Object.values(verificationChildren), ...Object.values(jwksChildren)]) child.inc(0);
  rateLimited.inc(0);
  auditDropped.inc(0);

  const reasonLabel = createReasonLabel();
  let toolLabel = toolLabels === undefined ? undefined : createToolLabel(toolLabels.filter((t) => t !== '*'));
  /** method → reason → (tool →) child; every key comes from a bounded set. */
  const requestChildren = new Map<string, Map<string, Counter.Internal | Map<string, Counter.Internal>>>();
  const durationChildren = new Map<string, Histogram.Internal<string>>();

  function requestChild(method: string, decision: string, reason: string, tool: string | undefined): Counter.Internal {
    let byReason = requestChildren.get(method);
    if (byReason === undefined) requestChildren.set(method, (byReason = new Map()));
    const entry = byReason.get(reason);
    if (tool === undefined) {
      if (entry !== undefined) return entry as Counter.Internal;
      const child = requests.labels(method, decision, reason);
      byReason.set(reason, child);
      return child;
    }
    let byTool = entry as Map<string, Counter.Internal> | undefined;
    if (byTool === undefined) byReason.set(reason, (byTool = new Map()));
    let child = byTool.get(tool);
    if (child === undefined) byTool.set(tool, (child = requests.labels(method, decision, reason, tool)));
    return child;
  }

  function durationChild(method: string, decision: 'allow' | 'deny'): Histogram.Internal<string> {
    // Two decisions: the key is the method with the decision's first letter, made only on a miss.
    const key = decision === 'allow' ? method : `-${method}`;
    let child = durationChildren.get(key);
    if (child === undefined) durationChildren.set(key, (child = durations.labels(method, decision)));
    return child;
  }

  function recordRequest(facts: RequestFacts): void {
    const method = methodLabel(facts.method, facts.httpMethod);
    // A reason always implies its decision (only `allowed` allows), so the pair needs one key.
    requestChild(method, facts.decision, reasonLabel(facts.reason), toolLabel?.(facts.method, facts.name)).inc();
    if (facts.reason === 'rate_limited') rateLimited.inc();
    if (facts.durationSeconds !== undefined) durationChild(method, facts.decision).observe(facts.durationSeconds);
  }

  const onDecision = (event: DecisionEvent): void => recordRequest(event);
  const hooks = {
    onDecision,
    onTokenVerification: (result: TokenVerificationResult) => verificationChildren[result]?.inc(),
    onJwksFetch: (result: JwksFetchResult) => jwksChildren[result]?.inc(),
    onAuditDropped: (records: number) => auditDropped.inc(records),
  };
  const setToolLabels = (tools: readonly string[]): void => {
    if (toolLabel === undefined) return;
    checkToolLabels(tools);
    toolLabel = createToolLabel(tools.filter((t) => t !== '*'));
  };
  return { registry, hooks, onDecision, recordRequest, setToolLabels };
}

const VERIFICATION_RESULTS: readonly TokenVerificationResult[] = ['cache_hit', 'verified', 'refused', 'unavailable'];

/** The names {@link createGuardMetrics} registers. */
const METRIC_NAMES = [
  'mcp_guard_requests_total',
  'mcp_guard_request_duration_seconds',
  'mcp_guard_token_verifications_total',
  'mcp_guard_jwks_fetches_total',
  'mcp_guard_rate_limited_total',
  'mcp_guard_audit_dropped_total',
];
