import type { PolicyDefinition } from './policy-definition.js';

/**
 * How many rules of each kind a policy has: the policy as the middleware's start-up line summarizes it, and what the
 * gateway's `policy_reloaded` line compares.
 */
export interface PolicyRuleCounts {
  /** Scopes in `requiredScopes`. */
  requiredScopes: number;
  methods: number;
  tools: number;
  prompts: number;
  resources: number;
  /** Scopes with an entry in `scopeHierarchy`. */
  scopeHierarchy: number;
  /** Tools with a limit in `rateLimits.tools`. */
  toolRateLimits: number;
}

/** Rule counts of a definition the guard accepted (so every table is an object or absent); undefined counts none. */
export function countPolicyRules(policy: PolicyDefinition | undefined): PolicyRuleCounts {
  const size = (table: object | undefined): number => (table === undefined ? 0 : Object.keys(table).length);
  return {
    requiredScopes: policy?.requiredScopes?.length ?? 0,
    methods: size(policy?.methods),
    tools: size(policy?.tools),
    prompts: size(policy?.prompts),
    resources: size(policy?.resources),
    scopeHierarchy: size(policy?.scopeHierarchy),
    toolRateLimits: size(policy?.rateLimits?.tools),
  };
}
