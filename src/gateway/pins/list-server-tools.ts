import { compileToolSelection } from '../../core/policy/tool-selection.js';
import type { GatewayConfig } from '../config/gateway-config.js';
import { reportPolicyCoverage } from '../policy/policy-coverage-report.js';
import { createUpstreamCredentials } from '../upstream-auth/upstream-auth-config.js';
import { SINGLE_UPSTREAM_PIN_NAME } from './pin-document.js';

/** What one server lists, for its pins: its tools whole, or why it could not be listed. */
export interface ListedServerTools {
  /** The server's name in the pins (`upstream` for the single upstream). */
  readonly server: string;
  /** Its exposed tools (those its `tools` selection keeps), as listed; absent when it could not be listed. */
  readonly tools?: readonly Record<string, unknown>[];
  /** Whether a bound cut the list short (then tools past it are not compared). */
  readonly truncated?: boolean;
  /** Why it could not be listed. */
  readonly error?: string;
}

/**
 * Lists the tools of every upstream the settings name, as the gateway itself (with its own upstream credentials,
 * a stdio upstream in a short-lived process of its own), as `check` does, each request bounded by `timeoutMs`: what
 * `pins update`, `pins accept` and `check` compare with the pins. An upstream that takes only tokens made for each
 * caller cannot be listed this way; it is reported with why.
 *
 * @example
 * for (const listed of await listServerTools(config, 10_000)) console.log(listed.server, listed.tools?.length);
 */
export async function listServerTools(config: GatewayConfig, timeoutMs: number, only?: string): Promise<ListedServerTools[]> {
  const limits = { requestTimeoutMs: timeoutMs, keepToolDefinitions: true };
  const quiet = { policy: undefined, issuers: [], log: () => undefined, warn: () => undefined, limits };
  if (!config.servers) {
    if (only !== undefined && only !== SINGLE_UPSTREAM_PIN_NAME) return [];
    const report = await reportPolicyCoverage({ ...quiet, config, ...(config.upstreamAuth ? { credentials: createUpstreamCredentials(config.upstreamAuth) } : {}) });
    return [listedOf(SINGLE_UPSTREAM_PIN_NAME, report, () => true)];
  }
  const servers = config.servers.filter((server) => only === undefined || server.name === only);
  return Promise.all(
    servers.map(async (server) => {
      const report = await reportPolicyCoverage({
        ...quiet,
        config: { ...(server.proxy ? { proxy: server.proxy } : {}), ...(server.stdio ? { stdio: server.stdio } : {}), settings: {} },
        ...(server.upstreamAuth && !server.stdio ? { credentials: createUpstreamCredentials(server.upstreamAuth) } : {}),
      });
      return listedOf(server.name, report, compileToolSelection(server.tools, `servers.${server.name}.tools`));
    }),
  );
}

function listedOf(server: string, report: Awaited<ReturnType<typeof reportPolicyCoverage>>, selects: (tool: string) => boolean): ListedServerTools {
  if ('skipped' in report) return { server, error: report.skipped.replace(/^the upstream could not be listed: /, '') };
  const tools = (report.catalog.toolDefinitions ?? []).filter((tool) => selects(String(tool.name)));
  return { server, tools, ...(report.catalog.truncated.includes('tools/list') ? { truncated: true } : {}) };
}
