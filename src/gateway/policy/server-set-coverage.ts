import { exposeName } from '../../core/mcp/exposed-names.js';
import { checkPolicyCoverage, policyProtection, type CoveredKind } from '../../core/policy/policy-coverage.js';
import { warnAboutCoverage } from '../../core/policy/policy-coverage-log.js';
import type { PolicyDefinition } from '../../core/policy/policy-definition.js';
import { compileToolSelection } from '../../core/policy/tool-selection.js';
import type { ServerConfig } from '../config/server-config.js';
import type { UpstreamCredentials } from '../upstream-auth/upstream-credentials.js';
import type { UpstreamCatalog } from '../upstream/upstream-catalog.js';
import type { ChildLogEvent } from '../upstream/stdio/stdio-child.js';
import { reportPolicyCoverage, type PolicyCoverageReport, type PolicyCoverageReportOptions } from './policy-coverage-report.js';

/** What {@link reportServerSetCoverage} needs beyond one server's report. */
export interface ServerSetCoverageOptions extends Omit<PolicyCoverageReportOptions, 'config' | 'policy' | 'credentials' | 'server'> {
  readonly servers: readonly ServerConfig[];
  readonly settings: Readonly<Record<string, string | undefined>>;
  /** The gateway-wide policy in force, by exposed names (`notes__add`). */
  readonly gatewayPolicy: PolicyDefinition | undefined;
  /** Each server's own policy in force (after reloads), by its own names. */
  readonly serverPolicy: (server: ServerConfig) => PolicyDefinition | undefined;
  /** Each server's credentials, as its upstream sends them. */
  readonly credentials: (server: string) => UpstreamCredentials | undefined;
  /** Told of each server listed: the server set learns which resources it holds. */
  readonly onListed?: (server: string, catalog: UpstreamCatalog) => void;
  /** Told of each server whose listing has settled, listed or not (after `onListed`): what waited for it goes on. */
  readonly onSettled?: (server: string) => void;
  /** Which servers to list. Default: all (a retry after some could not be listed asks only those). */
  readonly only?: (server: string) => boolean;
  /** What servers not listed this time listed before: the gateway-wide policy is compared with every server's. */
  readonly known?: ReadonlyMap<string, UpstreamCatalog>;
}

/**
 * The policy coverage check of a gateway with several servers: each server is listed as the gateway itself, in
 * parallel, and its own policy compared with what it offers (one summary line per server, naming it); then the
 * gateway-wide policy is compared with everything the endpoint exposes (`<server>__<name>`). Servers that cannot
 * be listed are reported as skipped, as a single upstream is; the report is `skipped` while any server is.
 */
export async function reportServerSetCoverage(options: ServerSetCoverageOptions): Promise<PolicyCoverageReport> {
  const { servers: _servers, gatewayPolicy: _gatewayPolicy, serverPolicy: _serverPolicy, credentials: _credentials, onListed: _onListed, onSettled: _onSettled, only, known, ...shared } = options;
  const gatewayProtects = options.gatewayPolicy ? policyProtection(options.gatewayPolicy) : undefined;
  const reports = await Promise.all(
    options.servers.filter((server) => only?.(server.name) ?? true).map(async (server) => {
      const credentials = options.credentials(server.name);
      const report = await reportPolicyCoverage({
        ...shared,
        ...(shared.childLog ? { childLog: (event: ChildLogEvent) => shared.childLog!({ ...event, server: server.name }) } : {}),
        // The summary names the server's own policy file, as a single upstream's names MCP_AUTH_POLICY.
        config: { ...(server.proxy ? { proxy: server.proxy } : {}), ...(server.stdio ? { stdio: server.stdio } : {}), settings: server.policyFile ? { MCP_AUTH_POLICY: server.policyFile } : server.policy ? { MCP_AUTH_POLICY: `servers.${server.name}.policy` } : {} },
        selects: compileToolSelection(server.tools, `servers.${server.name}.tools`),
        ...(server.tools ? { selection: { definition: server.tools, path: `servers.${server.name}.tools` } } : {}),
        // What the gateway-wide policy requires of every request holds for this server's items too.
        ...(options.gatewayPolicy?.requiredScopes?.length ? { otherRequiredScopes: options.gatewayPolicy.requiredScopes } : {}),
        policy: options.serverPolicy(server),
        // A rule of the gateway-wide policy (the exposed name's, or its `*`) protects this server's items as well.
        ...(gatewayProtects ? { protectedElsewhere: (kind: CoveredKind, name: string) => gatewayProtects(kind, kind === 'resources' ? name : exposeName(server.name, name)) } : {}),
        server: server.name,
        ...(credentials ? { credentials } : {}),
      });
      if ('catalog' in report) options.onListed?.(server.name, report.catalog);
      // Each server's as soon as it settles (reportPolicyCoverage never throws), not once the slowest has.
      options.onSettled?.(server.name);
      return [server, report] as const;
    }),
  );
  const exposed: UpstreamCatalog = { tools: [], prompts: [], resources: [], resourceTemplates: [], truncated: [] };
  const listed = new Map(reports.map(([server, report]) => [server.name, report] as const));
  for (const server of options.servers) {
    const report = listed.get(server.name) ?? (known?.has(server.name) ? { catalog: known.get(server.name)! } : undefined);
    if (report === undefined || !('catalog' in report)) continue;
    const selects = compileToolSelection(server.tools, `servers.${server.name}.tools`);
    (exposed.tools as string[]).push(...(report.catalog.tools ?? []).filter(selects).map((name) => exposeName(server.name, name)));
    (exposed.prompts as string[]).push(...(report.catalog.prompts ?? []).map((name) => exposeName(server.name, name)));
    (exposed.resources as string[]).push(...(report.catalog.resources ?? []));
    (exposed.resourceTemplates as string[]).push(...(report.catalog.resourceTemplates ?? []));
    exposed.truncated.push(...report.catalog.truncated.map((method) => `${server.name}: ${method}`));
  }
  const skipped = reports.filter(([, report]) => 'skipped' in report);
  // The gateway-wide policy names what the endpoint exposes: its rules are checked once every server was listed,
  // since a rule for a server not listed would look unmatched.
  const coverage = checkPolicyCoverage(options.gatewayPolicy, exposed);
  if (skipped.length === 0 && hasNamedRules(options.gatewayPolicy)) warnAboutCoverage(coverage, { policy: options.gatewayPolicy, warn: options.warn });
  if (skipped.length > 0) return { skipped: `${skipped.map(([server]) => server.name).join(', ')} could not be listed` };
  return { coverage, catalog: exposed };
}

/** Whether a gateway-wide policy names tools, prompts or resources (else it applies to everything alike). */
function hasNamedRules(policy: PolicyDefinition | undefined): boolean {
  return Boolean(policy && (policy.tools || policy.prompts || policy.resources));
}
