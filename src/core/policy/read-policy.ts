/**
 * Reads and validates a policy definition (a JSON policy, or one with rule functions) into its compiled form,
 * {@link PolicyRules}, collecting every problem first: one `ConfigurationError` names the first mistake of each
 * part, each by the exact path at fault. Evaluation is `evaluate-policy.ts`.
 */
import { collectConfigurationProblems } from '../kernel/configuration-problems.js';
import { ConfigurationError } from '../kernel/errors.js';
import { parseRateLimit, type RateLimit } from '../limits/rate-limit.js';
import { isScopeToken } from '../wire/scope-token.js';
import { compileUriLookup, compileUriTemplate, isUriTemplate, type UriLookup } from '../wire/uri-template.js';
import type { PolicyDefinition } from './policy-definition.js';
import { compileCondition, ConditionSyntaxError, type CompiledCondition } from './policy-condition.js';
import { describeValue as describe, EMPTY, OFFLINE_ACCESS, type CompiledRule, type PolicyRules, type RuleFunction, type RuleTable } from './policy-rules.js';
import { compileScopeHierarchy } from './scope-hierarchy.js';

const POLICY_KEYS: readonly string[] = [
  'scopesSupported',
  'requiredScopes',
  'methods',
  'tools',
  'prompts',
  'resources',
  'scopeHierarchy',
  'rateLimits',
];

/** Throws the `ConfigurationError` for one problem at `path`. */
type Fail = (path: string, message: string) => never;

/**
 * Reads `definition` (see `compilePolicy` for the rules it checks). Names live in `Map`s, so `constructor`,
 * `__proto__` or `toString` are ordinary names; unknown top-level keys are refused.
 *
 * @param settingName Root of the paths in error messages (`policy`, `MCP_AUTH_POLICY`).
 * @param source Where the definition came from (e.g. a file path), appended to every message.
 * @param ruleRoot Prefix of the rule paths decisions report (`servers.notes` gives `servers.notes.tools.add`).
 *   Default none (`tools.add`).
 * @throws ConfigurationError with every problem in its `problems`.
 */
export function readPolicy(definition: PolicyDefinition, settingName: string, source: string | undefined, ruleRoot?: string): PolicyRules {
  const where = source === undefined ? '' : ` (in ${source})`;
  const fail: Fail = (path, message) => {
    throw new ConfigurationError(path, message + where);
  };
  if (typeof definition !== 'object' || definition === null || Array.isArray(definition)) {
    fail(settingName, `expected a policy object, got ${describe(definition)}`);
  }
  const root = definition as unknown as Record<string, unknown>;
  const at = (key: string): string => joinPath(settingName, key);
  const named = (key: string): RulePaths => ({ path: at(key), rule: ruleRoot === undefined ? key : `${ruleRoot}.${key}` });
  // Each part is read on its own, so that one error names the first mistake of every part, not only the first.
  const parts = collectConfigurationProblems((problems) => {
    for (const key of Object.keys(root)) {
      if (!POLICY_KEYS.includes(key)) {
        problems.add(
          settingName,
          `unknown key ${JSON.stringify(key)}; expected only ${POLICY_KEYS.join(', ')}. ` +
            `Unknown keys are refused so that a misspelt rule cannot silently weaken the policy${where}`,
        );
      }
    }
    const base = problems.check(() => readScopeList(root.requiredScopes, at('requiredScopes'), fail)) ?? EMPTY;
    const methods = problems.check(() => compileNamedRules(root.methods, named('methods'), fail));
    const tools = problems.check(() => compileNamedRules(root.tools, named('tools'), fail));
    const prompts = problems.check(() => compileNamedRules(root.prompts, named('prompts'), fail));
    const resources = problems.check(() => compileResourceRules(root.resources, named('resources'), fail));
    const expand = problems.check(() => compileScopeHierarchy(readHierarchy(root.scopeHierarchy, at('scopeHierarchy'), fail)));
    const toolRateLimits = problems.check(() => readRateLimits(root.rateLimits, at('rateLimits'), fail));
    const explicitSupported = problems.check(() => readScopeList(root.scopesSupported, at('scopesSupported'), fail));
    problems.throwIfAny();
    return { base, methods: methods!, tools: tools!, prompts: prompts!, resources: resources!, expand: expand!, toolRateLimits: toolRateLimits!, explicitSupported };
  });
  const { explicitSupported, ...rules } = parts;
  return { ...rules, definition, scopesSupported: supportedScopes(rules, explicitSupported) };
}

/** `scopesSupported` as given, or every scope named by a static rule (`requiredScopes` first); never `offline_access`. */
function supportedScopes(rules: Pick<PolicyRules, 'base' | 'methods' | 'tools' | 'prompts' | 'resources'>, explicit: readonly string[] | undefined): readonly string[] {
  const supported = new Set<string>(explicit ?? rules.base);
  if (explicit === undefined) {
    for (const table of [rules.methods, rules.tools, rules.prompts, rules.resources]) {
      for (const rule of table.all) if (rule.scopes !== undefined) for (const s of rule.scopes) supported.add(s);
    }
  }
  supported.delete(OFFLINE_ACCESS);
  return Object.freeze([...supported]);
}

/** Where a part of the policy is: its full path for errors, and its path as decisions name rules. */
interface RulePaths {
  readonly path: string;
  readonly rule: string;
}

function compileNamedRules(value: unknown, part: RulePaths, fail: Fail): RuleTable {
  const named = new Map<string, CompiledRule>();
  const all: CompiledRule[] = [];
  // Every rule's mistake is named, not only the first: a policy is fixed in one go.
  collectConfigurationProblems((problems) => {
    for (const [name, rule] of readTable(value, part.path, fail)) {
      const compiled = problems.check(() => compileRule(rule, joinPath(part.path, name), ruleName(part.rule, name), fail));
      if (compiled === undefined) continue;
      named.set(name, compiled);
      all.push(compiled);
    }
  });
  const wildcard = named.get('*');
  named.delete('*');
  return {
    all,
    lookup(key) {
      if (typeof key !== 'string') return wildcard;
      return named.get(key) ?? wildcard;
    },
  };
}

function compileResourceRules(value: unknown, part: RulePaths, fail: Fail): RuleTable {
  const entries: [string, CompiledRule][] = [];
  collectConfigurationProblems((problems) => {
    for (const [key, rule] of readTable(value, part.path, fail)) problems.check(() => compileResourceRule(key, rule, part, fail, entries));
  });
  const lookup: UriLookup<CompiledRule> = compileUriLookup(entries);
  return {
    all: entries.map(([, rule]) => rule),
    lookup(key) {
      return typeof key === 'string' ? lookup.find(key) : lookup.wildcard;
    },
  };
}

/** Compiles one resource rule into `entries` (its URI or template checked first). */
function compileResourceRule(key: string, rule: unknown, part: RulePaths, fail: Fail, entries: [string, CompiledRule][]): void {
  const rulePath = joinPath(part.path, key);
  if (isUriTemplate(key)) {
    try {
      compileUriTemplate(key);
    } catch (error) {
      fail(rulePath, `${(error as Error).message}. Fix the template or use an exact URI`);
    }
  }
  const compiled = compileRule(rule, rulePath, ruleName(part.rule, key), fail);
  entries.push([key, compiled.condition !== undefined && isUriTemplate(key) ? { ...compiled, templateKey: key } : compiled]);
}

const RULE_EXPECTED = 'an array of scope strings, an object {"scopes": [...], "when": "<CEL expression>"} (or a function returning scopes)';
const CONDITIONAL_RULE_KEYS: readonly string[] = ['scopes', 'when'];

function compileRule(rule: unknown, path: string, name: string, fail: Fail): CompiledRule {
  if (typeof rule === 'function') return { path, rule: name, evaluate: rule as RuleFunction };
  if (typeof rule === 'object' && rule !== null && !Array.isArray(rule)) return compileConditionalRule(rule as Record<string, unknown>, path, name, fail);
  const scopes = readScopeList(rule, path, fail, RULE_EXPECTED);
  return { path, rule: name, scopes: scopes ?? fail(path, `expected ${RULE_EXPECTED}, got undefined`) };
}

/** `{ "scopes": [...], "when": "<CEL>" }`: the condition compiled now, so that a policy that loads has none that cannot run. */
function compileConditionalRule(rule: Record<string, unknown>, path: string, name: string, fail: Fail): CompiledRule {
  for (const key of Object.keys(rule)) {
    if (!CONDITIONAL_RULE_KEYS.includes(key)) fail(path, `unknown key ${JSON.stringify(key)} in a rule; expected only scopes and when`);
  }
  const scopes = readScopeList(rule.scopes, joinPath(path, 'scopes'), fail) ?? EMPTY;
  if (rule.when === undefined) return { path, rule: name, scopes };
  const whenPath = joinPath(path, 'when');
  if (typeof rule.when !== 'string') return fail(whenPath, `expected a CEL expression as a string, got ${describe(rule.when)}`);
  let condition: CompiledCondition;
  try {
    condition = compileCondition(rule.when);
  } catch (error) {
    if (!(error instanceof ConditionSyntaxError)) throw error;
    // The place first, as a compiler says it: `line 1, column 9: the condition uses 'claim', …`.
    return fail(whenPath, error.at === undefined ? `the condition ${error.problem}` : `${error.at}: the condition ${error.problem}`);
  }
  return { path, rule: name, scopes, condition };
}

/** A rule's path as decisions report it: `tools.add`, `tools.*`, `resources["notes://{id}"]`. */
function ruleName(part: string, key: string): string {
  return key === '*' ? `${part}.*` : joinPath(part, key);
}

/** Reads a table of names (plain object) as entries; `undefined` is an empty table. */
function readTable(value: unknown, path: string, fail: Fail): [string, unknown][] {
  if (value === undefined) return [];
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return fail(path, `expected an object mapping names to rules, got ${describe(value)}`);
  }
  const proto = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) {
    // Most likely `{ __proto__: [...] }` in an object literal, which sets the prototype instead of adding
    // a rule named "__proto__": that rule would be silently missing.
    return fail(
      path,
      'expected a plain object; if you meant a rule named "__proto__", write it as a computed key ' +
        `(["__proto__"]: [...]) or load the policy from JSON`,
    );
  }
  return Object.entries(value);
}

function readScopeList(
  value: unknown,
  path: string,
  fail: Fail,
  expected = 'an array of scope strings',
): readonly string[] | undefined {
  if (value === undefined) return undefined;
  if (!Array.isArray(value)) return fail(path, `expected ${expected}, got ${describe(value)}`);
  const scopes = new Set<string>();
  value.forEach((scope: unknown, i: number) => {
    if (!isScopeToken(scope)) {
      fail(
        `${path}[${i}]`,
        `${typeof scope === 'string' ? JSON.stringify(scope) : describe(scope)} is not a valid scope: a scope is a ` +
          'non-empty string of printable ASCII without spaces, \'"\' or \'\\\' (RFC 6749 §3.3)',
      );
    }
    scopes.add(scope as string);
  });
  return scopes.size === 0 ? EMPTY : Object.freeze([...scopes]);
}

function readHierarchy(value: unknown, path: string, fail: Fail): Record<string, readonly string[]> {
  const hierarchy: Record<string, readonly string[]> = Object.create(null);
  for (const [scope, implied] of readTable(value, path, fail)) {
    const scopePath = joinPath(path, scope);
    if (!isScopeToken(scope)) fail(scopePath, `${JSON.stringify(scope)} is not a valid scope (RFC 6749 §3.3)`);
    // defineProperty keeps `__proto__` an ordinary key even on this prototype-less record.
    Object.defineProperty(hierarchy, scope, {
      value: readScopeList(implied, scopePath, fail) ?? fail(scopePath, 'expected an array of scope strings, got undefined'),
      enumerable: true,
    });
  }
  return hierarchy;
}

/**
 * `rateLimits`: `{ "tools": { "<tool name>": "10/min" } }`, the one key it has for now. `"*"` is the limit of each
 * tool without one of its own (each tool counted apart); names matching no tool are reported by the policy coverage.
 */
function readRateLimits(value: unknown, path: string, fail: Fail): ReadonlyMap<string, RateLimit> {
  const limits = new Map<string, RateLimit>();
  if (value === undefined) return limits;
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return fail(path, `expected an object such as {"tools": {"notes_add": "10/min"}}, got ${describe(value)}`);
  }
  for (const key of Object.keys(value)) {
    if (key !== 'tools') fail(path, `unknown key ${JSON.stringify(key)}; expected only tools (a limit for every request is MCP_AUTH_RATE_LIMIT)`);
  }
  const toolsPath = joinPath(path, 'tools');
  for (const [name, text] of readTable((value as { tools?: unknown }).tools, toolsPath, fail)) {
    const namePath = joinPath(toolsPath, name);
    try {
      limits.set(name, parseRateLimit(text, namePath));
    } catch (error) {
      fail(namePath, (error as Error).message.slice(namePath.length + 2));
    }
  }
  return limits;
}

function joinPath(parent: string, key: string): string {
  return /^[A-Za-z_$][\w$]*$/.test(key) ? `${parent}.${key}` : `${parent}[${JSON.stringify(key)}]`;
}
