import type { PolicyCoverage } from '../../../core/policy/policy-coverage.js';
import type { PolicyDefinition } from '../../../core/policy/policy-definition.js';
import type { GatewayConfig } from '../../config/gateway-config.js';
import { describeUpstream, reportPolicyCoverage } from '../../policy/policy-coverage-report.js';
import { createUpstreamCredentials } from '../../upstream-auth/upstream-auth-config.js';
import type { UpstreamCatalog } from '../../upstream/upstream-catalog.js';
import type { CheckResult } from './check-result.js';

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
  if (config.upstreamAuth?.mode === 'token_exchange' || config.upstreamAuth?.mode === 'connected') {
    const how = config.upstreamAuth.mode === 'token_exchange' ? "a caller's exchanged token" : "a user's own token, granted when they connect their account";
    return { result: { ...base, status: 'skip', message: `not listed: with MCP_AUTH_UPSTREAM_AUTH=${config.upstreamAuth.mode} the gateway calls the upstream only with ${how}` } };
  }
  const report = await reportPolicyCoverage({
    config,
    policy,
    issuers,
    log: () => undefined,
    warn: () => undefined,
    limits: { requestTimeoutMs: timeoutMs },
    ...(config.upstreamAuth ? { credentials: createUpstreamCredentials(config.upstreamAuth) } : {}),
  });
  if ('skipped' in report) {
    const reason = report.skipped.replace(/^the upstream could not be listed: /, '');
    const { exit, stderr, fix } = report.failure ?? { stderr: [], fix: 'check the upstream settings' };
    const details = [...(exit ? [`the process ${exit}`] : []), ...stderr.map((line) => `stderr: ${JSON.stringify(line)}`)];
    return { result: { ...base, status: 'fail', message: `initialize or a list failed: ${reason}`, ...(details.length > 0 ? { details } : {}), fix } };
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
