import { closestName } from '../kernel/closest-name.js';
import type { NamedScopeRules, PolicyDefinition, ScopeRule } from './policy-definition.js';
import { compileUriLookup } from '../wire/uri-template.js';

/**
 * What a server offers, by name: the `name` of each tool and prompt, the `uri` of each resource and the
 * `uriTemplate` of each resource template, as its list methods answer them. A kind left undefined is not
 * checked (unknown); an empty list is checked (the server offers none, so every rule for it matches nothing).
 */
export interface ServerCatalog {
  tools?: readonly string[];
  prompts?: readonly string[];
  resources?: readonly string[];
  resourceTemplates?: readonly string[];
}

/** The kinds of named rule a policy holds; `tool rate limit` is a name under `rateLimits.tools`. */
export type CoverageKind = 'tool' | 'prompt' | 'resource' | 'tool rate limit';

/** A policy rule whose name matches nothing the server offers: most likely a typo. */
export interface UnmatchedRule {
  kind: CoverageKind;
  /** The rule's key as written in the policy, e.g. `ad`. */
  name: string;
  /** The closest name the server does offer, e.g. `add`, when one is close enough to be the one meant. */
  suggestion?: string;
}

/** How the items of one kind are covered. */
export interface KindCoverage {
  /** Items with a rule (their own or `*`) that requires at least one scope, or is a function. */
  protected: string[];
  /**
   * Items with no rule of their own and no `*` rule: any token with the base scopes (and the method's, when
   * `methods` sets one for `tools/call`, `prompts/get` or `resources/read`) may use them.
   */
  open: string[];
  /** Items whose rule is an empty list: open on purpose. */
  explicitlyOpen: string[];
}

/** What {@link checkPolicyCoverage} found. */
export interface PolicyCoverage {
  /** Present for each kind the catalog lists; resources count URIs and templates together. */
  tools?: KindCoverage;
  prompts?: KindCoverage;
  resources?: KindCoverage;
  /** Rules (other than `*`) that match nothing listed, in policy order: tools, prompts, resources, then tool rate limits. */
  unmatchedRules: UnmatchedRule[];
}

/**
 * Compares a policy with what the server offers, so a silently wide-open policy is caught at start-up: items
 * with no rule (open beyond the base scopes), and rule names that match nothing (likely typos, such as
 * `{"tools":{"ad":["calc:use"]}}`, which leaves `add` open, or a `rateLimits.tools` name that limits nothing),
 * each with the closest offered name.
 *
 * Names are matched as the guard matches them: tools and prompts byte for byte; resources by exact URI (in
 * its resolved form) or by URI template, a template from `resources/templates/list` also by its own string.
 * Call it with the same definition the guard was given; a rule that the guard would refuse (a malformed
 * template) makes it throw, as `compilePolicy` does.
 *
 * @param policy - The policy definition; undefined is the empty policy (everything open).
 * @param catalog - What the server lists, e.g. the names from its `tools/list`.
 */
export function checkPolicyCoverage(policy: PolicyDefinition | undefined, catalog: ServerCatalog): PolicyCoverage {
  const coverage: PolicyCoverage = { unmatchedRules: [] };
  if (catalog.tools) coverage.tools = coverNames('tool', policy?.tools, catalog.tools, coverage.unmatchedRules);
  if (catalog.prompts) coverage.prompts = coverNames('prompt', policy?.prompts, catalog.prompts, coverage.unmatchedRules);
  if (catalog.resources || catalog.resourceTemplates) {
    coverage.resources = coverResources(policy?.resources, catalog.resources ?? [], catalog.resourceTemplates ?? [], coverage.unmatchedRules);
  }
  // A limit under a misspelt name limits nothing, as a misspelt tool rule protects nothing: the same report.
  if (catalog.tools) reportUnmatchedNames('tool rate limit', ruleEntries(policy?.rateLimits?.tools), new Set(catalog.tools), coverage.unmatchedRules);
  return coverage;
}

function coverNames(kind: CoverageKind, rules: NamedScopeRules | undefined, names: readonly string[], unmatched: UnmatchedRule[]): KindCoverage {
  const table = ruleEntries(rules);
  const byName = new Map(table);
  const wildcard = byName.get('*');
  const result: KindCoverage = { protected: [], open: [], explicitlyOpen: [] };
  for (const name of names) classify(result, name, byName.has(name) ? byName.get(name) : wildcard);
  reportUnmatchedNames(kind, table, new Set(names), unmatched);
  return result;
}

/** Adds each key of `table` (but `*`) that names nothing offered, with the closest offered name. */
function reportUnmatchedNames(kind: CoverageKind, table: readonly (readonly [string, unknown])[], offered: ReadonlySet<string>, unmatched: UnmatchedRule[]): void {
  for (const [name] of table) {
    if (name !== '*' && !offered.has(name)) unmatched.push(withSuggestion({ kind, name }, closestName(name, offered)));
  }
}

function coverResources(rules: NamedScopeRules | undefined, uris: readonly string[], templates: readonly string[], unmatched: UnmatchedRule[]): KindCoverage {
  const table = ruleEntries(rules);
  // The guard's own lookup, with each key as its value: which rule a listed URI or template selects.
  const lookup = compileUriLookup(table.map(([key]) => [key, key] as const));
  const used = new Set<string>();
  const result: KindCoverage = { protected: [], open: [], explicitlyOpen: [] };
  const rulesByKey = new Map(table);
  for (const uri of [...uris, ...templates]) {
    const key = lookup.find(uri);
    if (key !== undefined) used.add(key);
    classify(result, uri, key === undefined ? undefined : rulesByKey.get(key));
  }
  const offered = [...uris, ...templates];
  for (const [key] of table) {
    if (key !== '*' && !used.has(key)) unmatched.push(withSuggestion({ kind: 'resource', name: key }, closestName(key, offered)));
  }
  return result;
}

/** `{}` or `{"scopes": []}`: an object rule without a condition or scopes, as open as `[]`. */
function isOpenConditionalRule(rule: ScopeRule): boolean {
  if (typeof rule !== 'object' || Array.isArray(rule)) return false;
  const { scopes, when } = rule as { scopes?: readonly string[]; when?: string };
  return when === undefined && (scopes === undefined || scopes.length === 0);
}

function classify(result: KindCoverage, name: string, rule: ScopeRule | undefined): void {
  if (rule === undefined) result.open.push(name);
  else if (protects(rule)) result.protected.push(name);
  else result.explicitlyOpen.push(name);
}

/** Whether a rule protects what it decides: not an empty list, nor an object without scopes or condition. */
function protects(rule: ScopeRule): boolean {
  return !((Array.isArray(rule) && rule.length === 0) || isOpenConditionalRule(rule));
}

/** A table's entries; anything but a plain object has none (the guard itself refuses such a policy). */
function ruleEntries<Rule>(rules: Readonly<Record<string, Rule>> | undefined): [string, Rule][] {
  if (typeof rules !== 'object' || rules === null || Array.isArray(rules)) return [];
  return Object.entries(rules);
}

function withSuggestion(rule: UnmatchedRule, suggestion: string | undefined): UnmatchedRule {
  return suggestion === undefined ? rule : { ...rule, suggestion };
}

/** The singular of each list kind, for "1 of 2 tools has no rule". */
const SINGULAR = { tools: 'tool', prompts: 'prompt', resources: 'resource' } as const;

/**
 * The one sentence saying which items of a kind no rule covers, for the gateway's start-up warning and `check`
 * alike, with the plural agreeing: `1 of 2 tools has no rule (neither its own nor "*"), so any valid token may use
 * it`. `hasBaseScopes`: whether the policy sets `requiredScopes`, which such items still need.
 *
 * @example
 * describeOpenItems('tools', coverage.tools!, Boolean(policy.requiredScopes?.length));
 */
export function describeOpenItems(kind: keyof typeof SINGULAR, covered: KindCoverage, hasBaseScopes: boolean): string {
  const open = covered.open.length;
  const total = open + covered.protected.length + covered.explicitlyOpen.length;
  const one = open === 1;
  const who = hasBaseScopes ? 'a token with only the base scopes (requiredScopes)' : 'any valid token';
  return `${open} of ${total} ${total === 1 ? SINGULAR[kind] : kind} ${one ? 'has' : 'have'} no rule (neither ${one ? 'its' : 'their'} own nor "*"), so ${who} may use ${one ? 'it' : 'them'}`;
}

/**
 * The one sentence for a rule that matches nothing listed, with the closest name when there is one:
 * `the tool rule "ad" matches nothing the upstream lists; did you mean "add"?`. `quote` writes a name for the
 * output at hand (JSON-escaped and clipped for a terminal, clipped for a log line); `lister` names who listed the
 * items (default `the upstream`, the gateway's; the middleware's is `the server`).
 */
export function describeUnmatchedRule(rule: UnmatchedRule, quote: (name: string) => string, lister = 'the upstream'): string {
  return `the ${rule.kind} rule ${quote(rule.name)} matches nothing ${lister} lists${rule.suggestion ? `; did you mean ${quote(rule.suggestion)}?` : ''}`;
}

/** The kinds of items coverage counts. */
export type CoveredKind = 'tools' | 'prompts' | 'resources';

/**
 * `coverage` with the items another policy in force protects counted as protected: with several servers, a request
 * passes the gateway-wide policy and its server's own, so a tool open under its server's policy but covered by a
 * gateway-wide rule (its exposed name, or the gateway's `*`) is not open.
 *
 * @param protects - Whether the other policy protects an item, by the name this coverage uses.
 * @example
 * const counted = withProtectedElsewhere(checkPolicyCoverage(serverPolicy, catalog), (kind, name) => gatewayProtects(kind, `notes__${name}`));
 */
export function withProtectedElsewhere(coverage: PolicyCoverage, protects: (kind: CoveredKind, name: string) => boolean): PolicyCoverage {
  const moved = (kind: CoveredKind): KindCoverage | undefined => {
    const own = coverage[kind];
    if (own === undefined) return undefined;
    const elsewhere = (name: string): boolean => protects(kind, name);
    return {
      protected: [...own.protected, ...own.open.filter(elsewhere), ...own.explicitlyOpen.filter(elsewhere)],
      open: own.open.filter((name) => !elsewhere(name)),
      explicitlyOpen: own.explicitlyOpen.filter((name) => !elsewhere(name)),
    };
  };
  const tools = moved('tools');
  const prompts = moved('prompts');
  const resources = moved('resources');
  return { ...coverage, ...(tools ? { tools } : {}), ...(prompts ? { prompts } : {}), ...(resources ? { resources } : {}) };
}

/**
 * Whether `policy` protects an item (its own rule or `*` requires a scope, has a condition, or is a function), as
 * {@link checkPolicyCoverage} counts it: its rule tables are compiled once, for every item asked about.
 *
 * @example
 * const protects = policyProtection({ tools: { '*': { when: "'staff' in claims.groups" } } });
 * protects('tools', 'notes__add'); // true
 */
export function policyProtection(policy: PolicyDefinition | undefined): (kind: CoveredKind, name: string) => boolean {
  const named = { tools: new Map(ruleEntries(policy?.tools)), prompts: new Map(ruleEntries(policy?.prompts)) };
  const resources = new Map(ruleEntries(policy?.resources));
  const lookup = compileUriLookup([...resources.keys()].map((key) => [key, key] as const));
  return (kind, name) => {
    let rule: ScopeRule | undefined;
    if (kind === 'resources') {
      const key = lookup.find(name);
      rule = key === undefined ? undefined : resources.get(key);
    } else {
      const table = named[kind];
      rule = table.has(name) ? table.get(name) : table.get('*');
    }
    return rule !== undefined && protects(rule);
  };
}
