import { isLoopbackHost, protectedResourceMetadataUrls } from '../../../core/kernel/canonical-resource.js';
import { isPlainObject } from '../../../core/jwt/jwt-claim-checks.js';
import { METRICS_PATH } from '../../server/metrics-listener.js';

/** What {@link RunningGatewayProbe} needs to recognise the gateway these settings describe. */
export interface RunningGatewayProbeOptions {
  /** The canonical resource (RFC 8707): the running gateway's metadata must name exactly this one. */
  readonly resource: string;
  /** How long each request may take, in ms (`MCP_AUTH_HTTP_TIMEOUT_MS`). */
  readonly timeoutMs: number;
}

/** The prefix of the metrics the gateway's own listener serves; nothing else names its metrics so. */
const GATEWAY_METRIC = /^# TYPE mcp_guard_/m;

/**
 * Whether what holds a port `check` found in use is this very gateway, already running: `check` is often run
 * beside it, and its own port is no problem then. Only loopback is asked (the port's host when it is a loopback
 * address, else 127.0.0.1 or ::1 for a wildcard host); each request is bounded by `timeoutMs`, and any failure
 * means "not recognised", so the caller keeps its warning.
 */
export class RunningGatewayProbe {
  constructor(private readonly options: RunningGatewayProbeOptions) {}

  /**
   * The MCP endpoint: `GET /healthz` answers `{"status":"ok"}` and the RFC 9728 metadata document (§3.1, at the
   * resource's well-known path) names the same resource.
   */
  async servesMcpEndpoint(host: string, port: number): Promise<boolean> {
    const origin = loopbackOrigin(host, port);
    if (origin === undefined) return false;
    const [health, metadata] = await Promise.all([
      this.getJson(`${origin}/healthz`),
      this.getJson(`${origin}${protectedResourceMetadataUrls(this.options.resource).paths[0]}`),
    ]);
    return isPlainObject(health) && health.status === 'ok' && isPlainObject(metadata) && metadata.resource === this.options.resource;
  }

  /** The metrics listener: `GET /metrics` answers with the gateway's own metrics. */
  async servesMetrics(host: string, port: number): Promise<boolean> {
    const origin = loopbackOrigin(host, port);
    if (origin === undefined) return false;
    const text = await this.get(`${origin}${METRICS_PATH}`);
    return text !== undefined && GATEWAY_METRIC.test(text);
  }

  private async get(url: string): Promise<string | undefined> {
    try {
      const response = await fetch(url, { redirect: 'manual', signal: AbortSignal.timeout(this.options.timeoutMs) });
      return response.status === 200 ? await response.text() : undefined;
    } catch {
      return undefined;
    }
  }

  private async getJson(url: string): Promise<unknown> {
    const text = await this.get(url);
    if (text === undefined) return undefined;
    try {
      return JSON.parse(text) as unknown;
    } catch {
      return undefined;
    }
  }
}

/** Where to reach a listener on `host` over loopback; undefined for an address of another interface. */
function loopbackOrigin(host: string, port: number): string | undefined {
  const bare = host.startsWith('[') ? host.slice(1, -1) : host;
  if (bare === '0.0.0.0' || bare === '') return `http://127.0.0.1:${port}`;
  if (bare === '::') return `http://[::1]:${port}`;
  if (!isLoopbackHost(bare)) return undefined;
  return `http://${bare.includes(':') ? `[${bare}]` : bare}:${port}`;
}
