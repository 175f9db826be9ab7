import type { NamedScopeRules, PolicyDefinition } from '../../../core/policy/policy-definition.js';
import type { CheckResult } from './check-result.js';

/** Most rules named for one scope; the line says how many more there were. */
const MAX_RULES_SHOWN = 5;

/** One issuer's published scopes, as its metadata's `scopes_supported` lists them (RFC 8414 §2). */
export interface IssuerScopes {
  readonly issuer: string;
  /** `scopes_supported`; undefined when the server does not publish it (then nothing can be compared). */
  readonly scopesSupported: readonly string[] | undefined;
}

/**
 * Warns for each scope the policy requires that an issuer's `scopes_supported` does not list: the server would
 * not grant it (oidc-provider drops an unknown scope from the grant), so the rule could never be met, most often
 * because one of the two is misspelt. Only for issuers that publish `scopes_supported`, which is optional.
 * `"*"` rules are left out: requiring a scope nobody is given there is the way to refuse unlisted tools.
 */
export function checkScopesSupported(policy: PolicyDefinition | undefined, file: string | null, issuers: readonly IssuerScopes[]): CheckResult[] {
  if (policy === undefined) return [];
  const required = requiredScopes(policy);
  const where = file ? `the policy file (${file})` : 'the policy';
  const results: CheckResult[] = [];
  for (const { issuer, scopesSupported } of issuers) {
    if (scopesSupported === undefined) continue;
    const listed = new Set(scopesSupported);
    for (const [scope, rules] of required) {
      if (listed.has(scope)) continue;
      const shown = rules.slice(0, MAX_RULES_SHOWN).join(', ') + (rules.length > MAX_RULES_SHOWN ? ` and ${rules.length - MAX_RULES_SHOWN} more` : '');
      results.push({
        check: 'policy',
        subject: issuer,
        status: 'warn',
        message: `the policy requires the scope ${JSON.stringify(scope)} (${shown}), which the authorization server's scopes_supported does not list, so no token may carry it`,
        fix: `correct the scope in ${where} if it is misspelt, or add ${JSON.stringify(scope)} to the scopes the authorization server offers`,
      });
    }
  }
  return results;
}

/** Every scope a static rule requires, with the rules that require it (`tools."name"`), `"*"` rules aside. */
function requiredScopes(policy: PolicyDefinition): Map<string, string[]> {
  const found = new Map<string, string[]>();
  const add = (scopes: readonly string[], rule: string): void => {
    for (const scope of scopes) found.set(scope, [...(found.get(scope) ?? []), rule]);
  };
  if (Array.isArray(policy.requiredScopes)) add(policy.requiredScopes, 'requiredScopes');
  for (const kind of ['methods', 'tools', 'prompts', 'resources'] as const) {
    const table: NamedScopeRules | undefined = policy[kind];
    if (typeof table !== 'object' || table === null) continue;
    for (const [name, rule] of Object.entries(table)) {
      // A rule with a condition requires its `scopes` as a list rule does.
      const scopes = Array.isArray(rule) ? rule : typeof rule === 'object' && rule !== null ? (rule as { scopes?: unknown }).scopes : undefined;
      if (name === '*' || !Array.isArray(scopes)) continue;
      add(scopes as readonly string[], `${kind}.${JSON.stringify(name)}`);
    }
  }
  return found;
}
