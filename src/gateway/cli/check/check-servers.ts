/**
 * `check` with a configuration file's servers: each server's upstream checked as the single upstream is, all at the
 * same time, one line each named by the server; then each server's own policy against what that server lists.
 */
import type { PolicyDefinition } from '../../../core/policy/policy-definition.js';
import { explainFailure } from '../../../core/kernel/explain-failure.js';
import type { GatewayConfig } from '../../config/gateway-config.js';
import type { ServerConfig } from '../../config/server-config.js';
import { checkPolicy } from './check-policy.js';
import { unmatchedToolPatterns } from '../../../core/policy/tool-selection.js';
import type { CheckResult } from './check-result.js';
import { checkUpstream, type UpstreamCheck } from './check-upstream.js';

/**
 * The configuration file's line: the file, its servers with their transports, and which settings it gave. Names only.
 */
export function checkConfigFile(config: GatewayConfig): CheckResult[] {
  if (config.configFile === undefined) return [];
  const servers = (config.servers ?? []).map((server) => `${server.name} (${server.transport})`);
  const fromFile = Object.entries(config.settingSources ?? {}).filter(([, source]) => source === 'file').map(([name]) => name);
  return [
    {
      check: 'config',
      subject: config.configFile,
      status: 'ok',
      message: `read: ${servers.length} server${servers.length === 1 ? '' : 's'}${servers.length > 0 ? ` (${servers.join(', ')})` : ''}`,
      ...(fromFile.length > 0 ? { details: [`settings from the file (variables and flags win): ${fromFile.join(', ')}`] } : {}),
    },
  ];
}

/**
 * Checks every server at once (each as `checkUpstream` checks the single upstream, with its own credentials), then
 * each server's policy. Lines come in the file's order, each upstream line named `<server>: <upstream>`.
 */
export async function checkServers(config: GatewayConfig & { servers: readonly ServerConfig[] }, issuers: readonly string[], timeoutMs: number): Promise<CheckResult[]> {
  const checked = await Promise.all(config.servers.map((server) => checkServer(config, server, issuers, timeoutMs)));
  const results: CheckResult[] = checked.map((each) => each.result);
  for (const [i, server] of config.servers.entries()) {
    // A `tools` pattern that matches nothing most likely has a typo: an exclude with one leaves its tool exposed.
    const tools = checked[i]!.catalog?.tools;
    if (server.tools && tools) {
      for (const { path, pattern, closest } of unmatchedToolPatterns(server.tools, tools, `servers.${server.name}.tools`)) {
        results.push({ check: 'policy', status: 'warn', subject: server.name, message: `${path} ("${pattern}") matches no tool the server lists`, fix: closest ? `did you mean ${closest}?` : `correct or remove the pattern` });
      }
    }
    if (server.policy === undefined) continue;
    const coverage = checked[i]!.coverage;
    const lines = checkPolicy({ policy: server.policy, file: server.policySource ?? null, hasUpstream: true, where: server.policyFile ? `the policy file (${server.policyFile})` : `servers.${server.name}.policy`, ...(coverage ? { coverage } : {}) });
    results.push(...lines.map((line) => ({ ...line, subject: line.subject === undefined ? server.name : `${server.name}: ${line.subject}` })));
  }
  return results;
}

/** One server's upstream line, named by the server; it settles with a line, never a rejection. */
async function checkServer(config: GatewayConfig, server: ServerConfig, issuers: readonly string[], timeoutMs: number): Promise<UpstreamCheck> {
  const { proxy: _proxy, stdio: _stdio, upstreamAuth: _auth, ...gateway } = config;
  const one: GatewayConfig = { ...gateway, ...(server.proxy ? { proxy: server.proxy } : {}), ...(server.stdio ? { stdio: server.stdio } : {}), ...(server.upstreamAuth ? { upstreamAuth: server.upstreamAuth } : {}) };
  const policy: PolicyDefinition | undefined = server.policy;
  const checked = await checkUpstream(one, policy, issuers, timeoutMs).catch((error: unknown): UpstreamCheck => ({
    result: { check: 'upstream', status: 'fail', message: `the upstream could not be checked: ${explainFailure(error, 300)}`, fix: `check servers.${server.name} in the configuration file` },
  }));
  const subject = checked.result.subject === undefined ? server.name : `${server.name}: ${checked.result.subject}`;
  return { ...checked, result: { ...checked.result, subject } };
}
