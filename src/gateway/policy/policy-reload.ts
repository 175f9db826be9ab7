import { resolve } from 'node:path';
import type { Guard } from '../../core/guard/create-guard.js';
import { ConfigurationError } from '../../core/kernel/errors.js';
import { loadPolicyFile } from '../../core/policy/load-policy-file.js';
import type { PolicyDefinition } from '../../core/policy/policy-definition.js';
import type { CompiledPolicy } from '../../core/policy/compile-policy.js';
import { countPolicyRules as countRules, type PolicyRuleCounts } from '../../core/policy/policy-rule-counts.js';
import { describeConfigurationError } from '../config/configuration-error-line.js';
import type { PolicyCoverageReport } from './policy-coverage-report.js';
import { emitWarning, formatLogLine, writeSafely } from '../../core/kernel/log-line.js';
import { editedRules } from './edited-rules.js';

/**
 * Reloading the gateway's policy file (`MCP_AUTH_POLICY`) while it serves: on SIGHUP, on a change the watch
 * (`MCP_AUTH_POLICY_WATCH`) saw, or when an embedding program asks. The file is read and validated exactly as at
 * start-up (`loadPolicyFile`), then put in force with `guard.setPolicy`, the one holder of the policy in force.
 */

export type { PolicyRuleCounts } from '../../core/policy/policy-rule-counts.js';

/** What a reload did. */
export type PolicyReloadResult =
  | {
      reloaded: true;
      /** The policy file, as configured; absent when only servers' policy files were reloaded. */
      file?: string;
      /** The new policy's rule counts. */
      rules: PolicyRuleCounts;
      /** The counts that differ from the previous policy's. */
      changed: Partial<Record<keyof PolicyRuleCounts, { before: number; after: number }>>;
      /** The rules added, removed or changed (`tools.refund`, `requiredScopes`), at most 100: see `editedRules`. */
      edited: string[];
      /** The coverage of the new policy, as logged (or why the upstream could not be listed). */
      coverage: PolicyCoverageReport;
    }
  | {
      reloaded: false;
      /** Why not, as logged: the refused file's configuration error, or that there is nothing to reload. */
      reason: string;
    };

/** What {@link createPolicyReloader} needs. */
export interface PolicyReloaderOptions {
  guard: Pick<Guard, 'policy' | 'setPolicy'>;
  /** The policy file (`MCP_AUTH_POLICY`); undefined when none is configured. */
  file: string | undefined;
  /** Receives the `policy_reloaded` line (JSON). */
  log(line: string): void;
  /** Receives the line of a refused reload (JSON). */
  warn(line: string): void;
  /** Writes the coverage warnings and summary of a policy now in force, as at start-up. */
  reportCoverage(policy: PolicyDefinition): Promise<PolicyCoverageReport>;
  /** Told each definition put in force, before its coverage is reported. */
  onReloaded?(policy: PolicyDefinition): void;
  /**
   * With several servers: compiles what the guard holds from the gateway-wide definition, reading each server's
   * policy file again; it throws a ConfigurationError, naming the file at fault, to refuse the reload. With it, a
   * gateway without a policy file of its own reloads the servers' files.
   */
  compile?(gateway: PolicyDefinition): CompiledPolicy;
}

/**
 * Reloads the policy file; `trigger` (`SIGHUP`, `watch`, …) is written in the log lines. Never rejects. At most one
 * reload runs at a time: one asked for meanwhile waits for it, and every other one asked for meanwhile shares it.
 */
export type PolicyReloader = (trigger: string) => Promise<PolicyReloadResult>;

/** Message of the warning a refused reload writes; `detail` says why. */
export const POLICY_RELOAD_REFUSED_MESSAGE = 'policy not reloaded: the new file is refused and the policy in force is kept (see detail)';

/**
 * Builds the gateway's policy reload. A reload reads the file and validates it; an invalid file (unreadable, bad
 * JSON, an unknown key, a wrong type) changes nothing and writes one warning whose `detail` is what a start-up
 * failure would say, in one line without a stack trace. A valid one is in force for every request that arrives
 * from then on (requests in progress finish under the policy they started with), a `policy_reloaded` line names
 * the file and the rule counts that changed, and the coverage warnings and summary line are written again.
 */
export function createPolicyReloader(options: PolicyReloaderOptions): PolicyReloader {
  const { guard, file } = options;
  // Each reload lists the upstream (a stdio upstream starts a process for it): a burst of SIGHUPs or file events
  // must not start as many. The one that waits reads the file as it is once the running one is done.
  let running: Promise<PolicyReloadResult> | undefined;
  let pending: Promise<PolicyReloadResult> | undefined;
  const run = (trigger: string): Promise<PolicyReloadResult> => {
    const current = reloadOnce(trigger).finally(() => {
      if (running === current) running = undefined;
    });
    running = current;
    return current;
  };
  return (trigger) => {
    if (running === undefined) return run(trigger);
    pending ??= running.then(() => {
      pending = undefined;
      return run(trigger);
    });
    return pending;
  };

  async function reloadOnce(trigger: string): Promise<PolicyReloadResult> {
    if (file === undefined && options.compile === undefined) {
      const reason = 'no policy file is configured (MCP_AUTH_POLICY), so there is nothing to reload';
      emitWarning(options.warn, reason, { trigger });
      return { reloaded: false, reason };
    }
    const previous = guard.policy.definition;
    const before = countRules(previous);
    let definition: PolicyDefinition;
    try {
      definition = file === undefined ? {} : loadPolicyFile(file, 'MCP_AUTH_POLICY');
      if (options.compile) guard.setPolicy(options.compile(definition));
      else guard.setPolicy(definition, { source: `policy file ${resolve(file!)}` });
    } catch (error) {
      const reason = error instanceof ConfigurationError ? describeConfigurationError(error) : 'the policy file could not be loaded';
      emitWarning(options.warn, POLICY_RELOAD_REFUSED_MESSAGE, { detail: reason, policy: file ?? null, trigger });
      return { reloaded: false, reason };
    }
    const rules = countRules(definition);
    const changed: Partial<Record<keyof PolicyRuleCounts, { before: number; after: number }>> = {};
    for (const key of Object.keys(rules) as (keyof PolicyRuleCounts)[]) {
      if (rules[key] !== before[key]) changed[key] = { before: before[key], after: rules[key] };
    }
    const edited = editedRules(previous, definition);
    writeSafely(options.log, formatLogLine('policy_reloaded', { policy: file ?? null, trigger, rules, changed, edited }));
    try {
      options.onReloaded?.(definition);
    } catch {
      // What follows the policy outside the guard (metric labels) must not undo a reload in force.
    }
    return { reloaded: true, ...(file !== undefined ? { file } : {}), rules, changed, edited, coverage: await options.reportCoverage(definition) };
  }
}
