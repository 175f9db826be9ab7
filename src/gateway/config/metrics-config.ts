import { ConfigurationError } from '../../core/kernel/errors.js';
import { parseIntegerSetting, parseSwitchSetting, readSetting } from '../../core/kernel/settings.js';
import type { GatewaySetting } from './gateway-setting.js';

/** Default `MCP_AUTH_METRICS_HOST`: loopback, so that metrics, which need no token, are never public by accident. */
export const DEFAULT_METRICS_HOST = '127.0.0.1';

/** Where and how the gateway serves its metrics. */
export interface MetricsConfig {
  /** Interface of the metrics listener. */
  host: string;
  /** Its TCP port; 0 picks a free one. */
  port: number;
  /** Whether `mcp_guard_requests_total` has a `tool` label (the policy's tool names, others `other`). */
  toolLabels: boolean;
}

/** The metrics settings, listed by `--help` with the gateway's others. */
export const METRICS_SETTINGS = Object.freeze([
  { env: 'MCP_AUTH_METRICS_PORT', group: 'metrics', flag: '--metrics-port', value: '<number>', description: 'Serve Prometheus metrics at /metrics on this port, a listener of its own (0 picks a free one). No token is asked for: keep it reachable by your scraper only.', defaultValue: 'off' },
  { env: 'MCP_AUTH_METRICS_HOST', group: 'metrics', flag: '--metrics-host', value: '<address>', description: 'Interface the metrics listener binds; loopback unless you say otherwise.', defaultValue: DEFAULT_METRICS_HOST },
  { env: 'MCP_AUTH_METRICS_TOOL_LABELS', group: 'metrics', flag: '--metrics-tool-labels', value: '[on|off]', description: 'Add a tool label to mcp_guard_requests_total: the tools named in the policy (at most 100), every other tool as "other".', defaultValue: 'off', bare: true },
] satisfies GatewaySetting[]);

/**
 * Reads the metrics settings: metrics are on when `MCP_AUTH_METRICS_PORT` is set.
 *
 * @param gatewayPort - The gateway's own port, which the metrics listener may not share.
 * @returns undefined when metrics are off.
 * @throws ConfigurationError naming the setting: a port out of range or the gateway's, a host or tool-label
 *   setting without a port (it would do nothing), a tool-label value other than on or off.
 */
export function loadMetricsConfig(settings: Readonly<Record<string, string | undefined>>, gatewayPort: number): MetricsConfig | undefined {
  const port = parseIntegerSetting(readSetting(settings, 'MCP_AUTH_METRICS_PORT'), 'MCP_AUTH_METRICS_PORT', 0, 65_535);
  const host = readSetting(settings, 'MCP_AUTH_METRICS_HOST');
  const toolLabels = readSetting(settings, 'MCP_AUTH_METRICS_TOOL_LABELS');
  if (port === undefined) {
    for (const [name, value] of [['MCP_AUTH_METRICS_HOST', host], ['MCP_AUTH_METRICS_TOOL_LABELS', toolLabels]] as const) {
      if (value !== undefined) throw new ConfigurationError(name, 'has no effect while metrics are off: set MCP_AUTH_METRICS_PORT (--metrics-port) too, or unset it');
    }
    return undefined;
  }
  if (port !== 0 && port === gatewayPort) {
    throw new ConfigurationError('MCP_AUTH_METRICS_PORT', `is ${port}, the gateway's own PORT: metrics need a port of their own, so that the MCP endpoint's clients cannot reach them`);
  }
  return { host: host ?? DEFAULT_METRICS_HOST, port, toolLabels: parseSwitchSetting(toolLabels, 'MCP_AUTH_METRICS_TOOL_LABELS') ?? false };
}

