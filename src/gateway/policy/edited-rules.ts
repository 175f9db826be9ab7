import type { PolicyDefinition } from '../../core/policy/policy-definition.js';

/** Most rule names an {@link editedRules} answer lists. */
export const MAX_EDITED_RULES = 100;

const SECTIONS = ['methods', 'tools', 'prompts', 'resources'] as const;

/**
 * The rules a new policy added, removed or changed against the one before, by their place in the policy
 * (`tools.payments__refund`, `requiredScopes`): what a reload's log line names, since a changed condition or scope
 * list leaves every rule count as it was. At most {@link MAX_EDITED_RULES}, in the policy's order.
 *
 * @example
 * editedRules({ tools: { a: ['x'] } }, { tools: { a: { scopes: ['x'], when: 'claims.admin' }, b: [] } }); // ['tools.a', 'tools.b']
 */
export function editedRules(before: PolicyDefinition, after: PolicyDefinition): string[] {
  const edited: string[] = [];
  const note = (name: string): void => {
    if (edited.length < MAX_EDITED_RULES) edited.push(name);
  };
  for (const key of ['requiredScopes', 'scopeHierarchy'] as const) if (!same(before[key], after[key])) note(key);
  for (const section of SECTIONS) {
    const old = (before[section] ?? {}) as Record<string, unknown>;
    const now = (after[section] ?? {}) as Record<string, unknown>;
    for (const name of new Set([...Object.keys(old), ...Object.keys(now)])) if (!same(old[name], now[name])) note(`${section}.${name}`);
  }
  return edited;
}

/** Whether two parts of a policy are written alike (functions, which a file cannot hold, by identity). */
function same(a: unknown, b: unknown): boolean {
  if (typeof a === 'function' || typeof b === 'function') return a === b;
  return JSON.stringify(a) === JSON.stringify(b);
}
