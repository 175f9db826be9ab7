import { describeOpenItems, describeUnmatchedRule, type KindCoverage, type PolicyCoverage } from '../../../core/policy/policy-coverage.js';
import type { PolicyDefinition } from '../../../core/policy/policy-definition.js';
import type { CheckResult } from './check-result.js';

/** Most names listed in one line; the line says how many more there were. */
const MAX_NAMES_SHOWN = 20;
/** Longest name shown, in characters: names come from the upstream. */
const MAX_NAME_LENGTH = 120;
/** Most "matches nothing" lines; the last says how many more there were. */
const MAX_UNMATCHED_LINES = 20;

/** What {@link checkPolicy} looks at. */
export interface PolicyCheckInput {
  /** The policy in force; undefined without `MCP_AUTH_POLICY`. */
  readonly policy: PolicyDefinition | undefined;
  /** `MCP_AUTH_POLICY`, or null. */
  readonly file: string | null;
  /** How the policy covers what the upstream lists, when it could be listed. */
  readonly coverage?: PolicyCoverage;
  /** Whether an upstream is configured (without one, nothing can be compared). */
  readonly hasUpstream: boolean;
  /** Where the policy is written, for the fixes; default the policy file (`file`). */
  readonly where?: string;
}

/**
 * The policy lines: where the policy comes from and how many rules it has; then, when the upstream was listed,
 * the items with no rule (open beyond the base scopes) and the rules that match nothing (likely typos, with the
 * closest name), as found by `checkPolicyCoverage`. These are warnings: requests work, but not as meant.
 */
export function checkPolicy(input: PolicyCheckInput): CheckResult[] {
  const results: CheckResult[] = [source(input)];
  const where = input.where ?? (input.file ? `the policy file (${input.file})` : 'a policy file (MCP_AUTH_POLICY)');
  const coverage = input.coverage;
  if (coverage === undefined) {
    if (input.hasUpstream) results.push({ check: 'policy', status: 'skip', message: 'open tools and rules matching nothing: not checked, as the upstream could not be listed' });
    return results;
  }
  const hasBaseScopes = Boolean(input.policy?.requiredScopes?.length);
  for (const [kind, covered] of [['tools', coverage.tools], ['prompts', coverage.prompts], ['resources', coverage.resources]] as const) {
    if (!covered || covered.open.length === 0) continue;
    results.push({
      check: 'policy',
      status: 'warn',
      message: describeOpenItems(kind, covered, hasBaseScopes),
      details: [names(covered.open)],
      fix: `add a rule for each under "${kind}" in ${where}, or a "*" rule for every one not named; an empty list [] leaves one open on purpose`,
    });
  }
  const shown = coverage.unmatchedRules.slice(0, MAX_UNMATCHED_LINES);
  for (const rule of shown) {
    results.push({
      check: 'policy',
      status: 'warn',
      message: describeUnmatchedRule(rule, quote),
      fix: rule.suggestion ? `rename ${quote(rule.name)} to ${quote(rule.suggestion)} in ${where}` : `correct or remove the rule ${quote(rule.name)} in ${where}`,
    });
  }
  if (coverage.unmatchedRules.length > shown.length) {
    results.push({ check: 'policy', status: 'warn', message: `${coverage.unmatchedRules.length - shown.length} more rules match nothing the upstream lists`, fix: `correct or remove them in ${where}` });
  }
  if (results.length === 1) results.push({ check: 'policy', status: 'ok', message: `every item the upstream lists has a rule, and every rule matches: ${summary(coverage)}` });
  return results;
}

function source(input: PolicyCheckInput): CheckResult {
  if (input.file === null || input.policy === undefined) {
    if (!input.hasUpstream) return { check: 'policy', status: 'skip', message: 'no policy file (MCP_AUTH_POLICY is unset); an application may apply a policy of its own' };
    return { check: 'policy', status: 'warn', message: 'no policy (MCP_AUTH_POLICY is unset): any valid token may use every tool, prompt and resource', fix: 'write a policy file with the scopes each tool needs, and set MCP_AUTH_POLICY to it' };
  }
  const rules = (table: unknown): number => (typeof table === 'object' && table !== null ? Object.keys(table).length : 0);
  const { tools, prompts, resources } = input.policy;
  return {
    check: 'policy',
    subject: input.file,
    status: 'ok',
    message: `read: ${rules(tools)} tool, ${rules(prompts)} prompt and ${rules(resources)} resource rules${input.policy.requiredScopes?.length ? `; base scopes ${input.policy.requiredScopes.join(' ')}` : ''}`,
  };
}

function summary(coverage: PolicyCoverage): string {
  const parts: string[] = [];
  for (const [kind, covered] of [['tools', coverage.tools], ['prompts', coverage.prompts], ['resources', coverage.resources]] as const) {
    // A kind the upstream lists nothing of has nothing to say.
    if (covered && covered.protected.length + covered.explicitlyOpen.length > 0) parts.push(`${kind} ${describe(covered)}`);
  }
  return parts.join('; ');
}

function describe(covered: KindCoverage): string {
  return `${covered.protected.length} protected${covered.explicitlyOpen.length > 0 ? `, ${covered.explicitlyOpen.length} open on purpose` : ''}`;
}

function names(list: readonly string[]): string {
  const shown = list.slice(0, MAX_NAMES_SHOWN).map(quote).join(', ');
  return list.length > MAX_NAMES_SHOWN ? `${shown} and ${list.length - MAX_NAMES_SHOWN} more` : shown;
}

/** A name for a terminal: quoted, control characters escaped, clipped. */
function quote(name: string): string {
  return JSON.stringify(name.length > MAX_NAME_LENGTH ? `${name.slice(0, MAX_NAME_LENGTH)}…` : name);
}
