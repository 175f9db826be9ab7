/**
 * Scope hierarchies: a broader scope implies narrower ones (`notes:admin` ⇒ `notes:write` ⇒ `notes:read`).
 * MCP 2026-07-28 `basic/authorization` ("Servers MUST account for scope hierarchies") requires honouring
 * them when deciding whether a token suffices.
 */

/**
 * A scope hierarchy as written in the policy: each key implies the listed scopes, transitively.
 * Same shape as {@link PolicyDefinition.scopeHierarchy}.
 */
export type ScopeHierarchy = Readonly<Record<string, readonly string[]>>;

/**
 * Turns the scopes a token was granted into the effective scopes: the granted ones plus everything they
 * imply. The returned set is new on every call; callers may cache it per token.
 */
export type ScopeExpander = (granted: readonly string[]) => ReadonlySet<string>;

/**
 * Compiles a scope hierarchy into a {@link ScopeExpander}. The transitive closure of every key is computed
 * here, once, so expanding a token's scopes is a Map lookup per granted scope.
 *
 * Cycles (`a ⇒ b ⇒ a`) are allowed and simply make the scopes equivalent; they never loop. Keys are read
 * with `Object.keys`, so a `__proto__` key parsed from JSON is an ordinary scope. Input shape is not
 * validated here: `compilePolicy` does that with precise error paths.
 *
 * @param hierarchy Scope ⇒ implied scopes. Default: no hierarchy (effective = granted).
 */
export function compileScopeHierarchy(hierarchy: ScopeHierarchy = {}): ScopeExpander {
  const direct = new Map<string, readonly string[]>();
  for (const key of Object.keys(hierarchy)) direct.set(key, hierarchy[key] ?? []);

  // Closure per key, excluding the key itself (the expander adds granted scopes anyway).
  const closure = new Map<string, readonly string[]>();
  for (const key of direct.keys()) {
    const seen = new Set<string>([key]);
    const pending: string[] = [...(direct.get(key) ?? [])];
    const implied: string[] = [];
    // Iterative walk with a visited set: terminates on cycles and never recurses deeply.
    while (pending.length > 0) {
      const scope = pending.pop() as string;
      if (seen.has(scope)) continue;
      seen.add(scope);
      implied.push(scope);
      const next = direct.get(scope);
      if (next !== undefined) pending.push(...next);
    }
    if (implied.length > 0) closure.set(key, Object.freeze(implied));
  }

  if (closure.size === 0) {
    return function expandScopes(granted) {
      return new Set(granted);
    };
  }
  return function expandScopes(granted) {
    const effective = new Set<string>();
    for (const scope of granted) {
      effective.add(scope);
      const implied = closure.get(scope);
      if (implied !== undefined) for (const s of implied) effective.add(s);
    }
    return effective;
  };
}
