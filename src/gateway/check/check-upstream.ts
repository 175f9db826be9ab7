import type { PolicyCoverage } from '../../core/policy-coverage.js';
import type { PolicyDefinition } from '../../core/policy-definition.js';
import type { GatewayConfig } from '../gateway-config.js';
import { describeUpstream, reportPolicyCoverage } from '../policy-coverage-report.js';
import type { ChildLogEvent } from '../stdio-child.js';
import { createUpstreamCredentials } from '../upstream-auth-config.js';
import type { UpstreamCatalog } from '../upstream-catalog.js';
import type { CheckResult } from './check-result.js';

/** Most stderr lines of a stdio upstream shown when it fails, the last ones; each clipped. */
const MAX_STDERR_LINES = 3;
const MAX_STDERR_LINE_LENGTH = 200;

/** What {@link checkUpstream} found: the report line, and what the upstream lists when it could be listed. */
export interface UpstreamCheck {
  readonly result: CheckResult;
  readonly catalog?: UpstreamCatalog;
  readonly coverage?: PolicyCoverage;
}

/**
 * Calls the upstream as the gateway's policy check does (`reportPolicyCoverage`: `initialize`, then the tools,
 * prompts, resources and resource templates lists, with the gateway's own upstream credentials; a stdio upstream
 * in a short-lived process of its own), each request bounded by `timeoutMs`, and reports the counts, or what
 * failed with the fix. The policy's coverage of what was listed comes back for the policy lines.
 */
export async function checkUpstream(config: GatewayConfig, policy: PolicyDefinition | undefined, issuers: readonly string[], timeoutMs: number): Promise<UpstreamCheck> {
  const named = describeUpstream(config);
  const subject = 'upstream' in named ? named.upstream : 'upstreamCommand' in named ? named.upstreamCommand : undefined;
  const base = { check: 'upstream', ...(subject ? { subject } : {}) } as const;
  if (!config.proxy && !config.stdio) {
    return { result: { ...base, status: 'skip', message: 'none configured (MCP_AUTH_UPSTREAM, MCP_AUTH_UPSTREAM_COMMAND): checking the settings of an application that guards itself' } };
  }
  if (config.upstreamAuth?.mode === 'token_exchange') {
    return { result: { ...base, status: 'skip', message: 'not listed: with MCP_AUTH_UPSTREAM_AUTH=token_exchange the gateway calls the upstream only with a caller\'s exchanged token' } };
  }
  const stderr: string[] = [];
  let exit: string | undefined;
  const childLog = (event: ChildLogEvent): void => {
    if (event.event === 'upstream_stderr' && event.line !== undefined) {
      stderr.push(event.line.length > MAX_STDERR_LINE_LENGTH ? `${event.line.slice(0, MAX_STDERR_LINE_LENGTH)}…` : event.line);
      if (stderr.length > MAX_STDERR_LINES) stderr.shift();
    }
    if (event.event === 'upstream_exit') exit = event.code ? `could not be started (${event.code})` : `exited with ${event.signal ? `signal ${event.signal}` : `code ${String(event.exitCode)}`}`;
  };
  const report = await reportPolicyCoverage({
    config,
    policy,
    issuers,
    log: () => undefined,
    warn: () => undefined,
    childLog,
    limits: { requestTimeoutMs: timeoutMs },
    ...(config.upstreamAuth ? { credentials: createUpstreamCredentials(config.upstreamAuth) } : {}),
  });
  if ('skipped' in report) {
    const reason = report.skipped.replace(/^the upstream could not be listed: /, '');
    const details = [...(exit && config.stdio ? [`the process ${exit}`] : []), ...stderr.map((line) => `stderr: ${JSON.stringify(line)}`)];
    return { result: { ...base, status: 'fail', message: `initialize or a list failed: ${reason}`, ...(details.length > 0 ? { details } : {}), fix: fixFor(reason, config) } };
  }
  const { catalog, coverage } = report;
  const counts = `${count(catalog.tools, 'tool')}, ${count(catalog.prompts, 'prompt')}, ${count(catalog.resources, 'resource')}, ${count(catalog.resourceTemplates, 'resource template')}`;
  return {
    catalog,
    coverage,
    result: {
      ...base,
      status: catalog.truncated.length > 0 ? 'warn' : 'ok',
      message: `initialize and the lists answered: ${counts}`,
      ...(catalog.truncated.length > 0
        ? { details: [`cut off at a bound: ${catalog.truncated.join(', ')}`], fix: 'the upstream lists more than the check reads; rules for what was cut off may be reported as matching nothing' }
        : {}),
    },
  };
}

function count(names: readonly string[] | undefined, noun: string): string {
  const n = names?.length ?? 0;
  return `${n} ${noun}${n === 1 ? '' : 's'}`;
}

/** What to do about a failed listing, from the catalog's reason (a Node error code, a status, a JSON-RPC code). */
function fixFor(reason: string, config: GatewayConfig): string {
  if (config.stdio) {
    return 'run MCP_AUTH_UPSTREAM_COMMAND by hand: it must stay running and speak MCP (newline-delimited JSON-RPC) on stdin and stdout, logging to stderr only';
  }
  if (/ECONNREFUSED|ENOTFOUND|EHOSTUNREACH|ECONNRESET|cannot be reached/.test(reason)) return 'start the upstream MCP server, or correct the host and port in MCP_AUTH_UPSTREAM';
  if (/HTTP 401|HTTP 403/.test(reason)) {
    return config.upstreamAuth ? "check the upstream credentials (MCP_AUTH_UPSTREAM_AUTH and its settings): the upstream refused the gateway's" : 'the upstream wants credentials: set MCP_AUTH_UPSTREAM_AUTH (static or client_credentials) and its settings';
  }
  if (/HTTP 404|HTTP 405/.test(reason)) return 'set MCP_AUTH_UPSTREAM to the URL of the MCP endpoint itself (often ending in /mcp)';
  if (/no answer within/.test(reason)) return 'check that the upstream answers, or raise MCP_AUTH_HTTP_TIMEOUT_MS';
  if (/credential could not be obtained/.test(reason)) return "check the upstream credentials' settings (MCP_AUTH_UPSTREAM_CLIENT_ID, its secret, MCP_AUTH_UPSTREAM_ISSUER)";
  return 'check that MCP_AUTH_UPSTREAM is a Streamable HTTP MCP endpoint that answers initialize and the list methods';
}
