/**
 * Entry point `mcp-oauth-guard/metrics`: the guard's Prometheus metrics on an application's prom-client
 * registry. A separate entry, so that the main entry never loads prom-client. Re-exports only.
 *
 * @module mcp-oauth-guard/metrics
 */
export { createGuardMetrics, REQUEST_DURATION_BUCKETS, type GuardMetrics, type GuardMetricsOptions, type RequestFacts } from './guard-metrics.js';
export { MAX_TOOL_LABELS, OTHER_LABEL } from './metric-labels.js';
