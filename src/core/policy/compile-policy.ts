/**
 * The scope policy, compiled once at start-up: which scopes each JSON-RPC message needs, whether a token
 * has them (honouring the scope hierarchy), and which list items a caller may see.
 */
import type { AuthInfo } from '../kernel/auth-info.js';
import { collectConfigurationProblems } from '../kernel/configuration-problems.js';
import { ConfigurationError, InsufficientScopeError } from '../kernel/errors.js';
import type { JsonRpcMessage } from '../wire/jsonrpc.js';
import type { PolicyDefinition } from './policy-definition.js';
import { parseRateLimit, type RateLimit } from '../limits/rate-limit.js';
import { bodyProtocolVersion, isStatelessRevision } from '../mcp/protocol-version.js';
import { compileScopeHierarchy } from './scope-hierarchy.js';
import { isScopeToken } from '../wire/scope-token.js';
import { compileUriLookup, compileUriTemplate, isUriTemplate, type UriLookup } from '../wire/uri-template.js';

/**
 * The outcome of {@link CompiledPolicy.authorize}.
 *
 * - `requiredScopes`: every scope the message needs (base ∪ method rule ∪ tool/prompt/resource rule).
 *   MCP 2026-07-28 `basic/authorization` asks the 403 challenge to name all of them, not only the missing ones.
 * - `missingScopes`: the required scopes the token lacks after hierarchy expansion.
 * - `failedRule`: set when a rule function threw or returned something other than an array of scope
 *   strings; the message is then denied whatever the token holds (fail closed). It is the rule's path
 *   (e.g. `policy.tools.delete_note`), for logs only: do not send it to clients.
 */
export type AuthorizationDecision =
  | { readonly allowed: true; readonly requiredScopes: readonly string[] }
  | {
      readonly allowed: false;
      readonly requiredScopes: readonly string[];
      readonly missingScopes: readonly string[];
      readonly failedRule?: string;
    };

/** The compiled policy. Create with {@link compilePolicy}. */
export interface CompiledPolicy {
  /**
   * Scopes for the protected-resource metadata `scopes_supported` (RFC 9728 §2). Never contains
   * `offline_access` (MCP 2026-07-28 `basic/authorization`: refresh tokens are not a resource requirement).
   */
  readonly scopesSupported: readonly string[];
  /** Scopes every request needs; also the `scope` of the bare 401 challenge (MCP 2025-11-25 scope selection). */
  readonly requiredScopes: readonly string[];
  /**
   * Every scope `message` needs: base scopes ∪ the `methods` rule for its method ∪ the rule for the tool
   * (`tools/call` `params.name`), prompt (`prompts/get` `params.name`) or resource (`resources/read`,
   * `resources/subscribe`, `resources/unsubscribe` `params.uri`; `subscriptions/listen`
   * `params.notifications.resourceSubscriptions[]`; `completion/complete` `params.ref`) it targets.
   * A named entry replaces `*`; a name with no entry and no `*` adds nothing. Client responses need only
   * the base scopes. If a rule function fails, the scopes gathered before it are returned (see `authorize`).
   */
  requiredScopesFor(message: JsonRpcMessage, auth: AuthInfo): readonly string[];
  /**
   * Decides whether `auth` may send `message`, comparing the required scopes with the token's scopes
   * expanded by the hierarchy. Fails closed when a rule function throws or returns a non-array.
   * Static rules are precombined at compile time and the expanded scopes are cached per granted-scopes array (shared by every request with the same token)
   * object, so the common case allocates nothing.
   */
  authorize(message: JsonRpcMessage, auth: AuthInfo): AuthorizationDecision;
  /**
   * Filters a list result down to the items `auth` may use, for `tools/list`, `prompts/list`,
   * `resources/list` and `resources/templates/list` (see {@link isListMethod}); returns `result` unchanged
   * for any other method. An item is kept when the caller could use it: base ∪ the method rule of the call
   * that uses it (`tools/call`, `prompts/get`, `resources/read`) ∪ the item's rule are all granted. Rule
   * functions are called with a synthetic request for the item, e.g.
   * `{ jsonrpc: '2.0', id: 0, method: 'tools/call', params: { name } }` (`resources/read` with
   * `params.uri` set to the URI, or to the template string for templates). Items whose name/URI is not a
   * string are dropped (fail closed).
   *
   * Returns a new object; other fields (`nextCursor`, `_meta`, …) are kept. Filtering is discovery
   * hygiene, not the access boundary (MCP 2026-07-28 `server/tools`): calls are still authorized.
   *
   * Caching (MCP 2026-07-28 `server/utilities/caching`): when the request speaks 2026-07-28 or later, a
   * filtered list varies per caller, so the result gets `cacheScope: "private"`. `ttlMs` is kept when the
   * server gave a valid one (a finite number ≥ 0); otherwise it is set to `0`, because the revision
   * requires the field (`>= 0`) and `0` is what clients assume when it is absent. Results that are not
   * `resultType: "complete"` carry no caching hints and get none. Older revisions are left without hints.
   *
   * @param protocolVersion The request's protocol revision; defaults to
   *   `message.params._meta["io.modelcontextprotocol/protocolVersion"]`. Pass the negotiated or
   *   `MCP-Protocol-Version` value for 2025 revisions, whose requests carry no `_meta` version.
   */
  filterListResult(
    method: string,
    result: Record<string, unknown>,
    auth: AuthInfo,
    message?: JsonRpcMessage,
    protocolVersion?: string,
  ): Record<string, unknown>;
  /**
   * A key under which this caller's filtered answer to `method` may be reused for a byte-identical answer: the
   * method, the stateless flag and the caller's effective scopes. Undefined when a rule the filter consults is a
   * function (it may depend on anything in the token or the request); since an answer is filtered by its shape,
   * and may hold any of the four lists, that is any tool, prompt or resource rule, or the rule of a method that
   * uses an item (`tools/call`, `prompts/get`, `resources/read`).
   */
  listFilterKey(method: string, auth: AuthInfo, message?: JsonRpcMessage, protocolVersion?: string): string | undefined;
  /**
   * Builds the 403 `insufficient_scope` error for a denied decision (RFC 6750 §3.1, MCP 2025-11-25 step-up).
   * The same error `createInsufficientScopeError` builds for the uncompiled policy.
   */
  insufficientScopeError(decision: AuthorizationDecision, auth: AuthInfo, message?: JsonRpcMessage): InsufficientScopeError;
  /** Same as the exported {@link isListMethod}, for callers holding only the compiled policy. */
  isListMethod(method: string): boolean;
  /** The token's effective scopes: granted ∪ implied by the hierarchy (cached per granted-scopes array by `authorize`). */
  expandScopes(granted: readonly string[]): ReadonlySet<string>;
  /** Per-tool rate limits (`rateLimits.tools`), by tool name, `*` for every tool not named; empty when the policy sets none. */
  readonly toolRateLimits: ReadonlyMap<string, RateLimit>;
  /** The definition this was compiled from, as given (for coverage reports of the policy in force). */
  readonly definition: PolicyDefinition;
}

/** Options of {@link compilePolicy}. */
export interface CompilePolicyOptions {
  /**
   * Called when a rule function throws or returns an invalid value (the message is then denied). Use it to
   * log the bug; errors thrown by this hook are ignored. Default: none.
   */
  onRuleError?: (error: unknown, rulePath: string) => void;
  /** Where the definition came from (e.g. a file path), appended to configuration error messages. */
  source?: string;
}

/** The four list methods whose results {@link CompiledPolicy.filterListResult} filters. */
export function isListMethod(method: string): boolean {
  return LIST_SPECS.has(method);
}

/**
 * Compiles and validates a policy at start-up. A bad policy throws one {@link ConfigurationError} naming the
 * first problem of each part (unknown keys, `requiredScopes`, `methods`, `tools`, …; all in its `problems`),
 * each by the exact path at fault (`policy.tools.delete_note`, `policy.resources["notes://{user"]`).
 * Names live in `Map`s, so `constructor`, `__proto__` or `toString` are ordinary tool names; unknown
 * top-level keys are rejected so a typo cannot silently weaken the policy.
 *
 * `scopesSupported` defaults to every scope named by a static rule, `requiredScopes` first; `offline_access`
 * is removed either way (MCP 2026-07-28 `basic/authorization`).
 *
 * @param definition The policy (see {@link PolicyDefinition}); a JSON-parsed object is fine.
 * @param settingName Root of the paths in error messages. Default `policy`.
 */
export function compilePolicy(
  definition: PolicyDefinition,
  settingName = 'policy',
  options: CompilePolicyOptions = {},
): CompiledPolicy {
  const where = options.source === undefined ? '' : ` (in ${options.source})`;
  const fail = (path: string, message: string): never => {
    throw new ConfigurationError(path, message + where);
  };
  const onRuleError = options.onRuleError;

  if (typeof definition !== 'object' || definition === null || Array.isArray(definition)) {
    fail(settingName, `expected a policy object, got ${describe(definition)}`);
  }
  const root = definition as unknown as Record<string, unknown>;
  // Each part is read on its own, so that one error names the first mistake of every part, not only the first.
  const { base, methods, tools, prompts, resources, expand, toolRateLimits, explicitSupported } = collectConfigurationProblems((problems) => {
    for (const key of Object.keys(root)) {
      if (!POLICY_KEYS.includes(key)) {
        problems.add(
          settingName,
          `unknown key ${JSON.stringify(key)}; expected only ${POLICY_KEYS.join(', ')}. ` +
            `Unknown keys are refused so that a misspelt rule cannot silently weaken the policy${where}`,
        );
      }
    }
    const base = problems.check(() => readScopeList(root.requiredScopes, joinPath(settingName, 'requiredScopes'), fail)) ?? EMPTY;
    const methods = problems.check(() => compileNamedRules(root.methods, joinPath(settingName, 'methods'), fail));
    const tools = problems.check(() => compileNamedRules(root.tools, joinPath(settingName, 'tools'), fail));
    const prompts = problems.check(() => compileNamedRules(root.prompts, joinPath(settingName, 'prompts'), fail));
    const resources = problems.check(() => compileResourceRules(root.resources, joinPath(settingName, 'resources'), fail));
    const expand = problems.check(() => compileScopeHierarchy(readHierarchy(root.scopeHierarchy, joinPath(settingName, 'scopeHierarchy'), fail)));
    const toolRateLimits = problems.check(() => readRateLimits(root.rateLimits, joinPath(settingName, 'rateLimits'), fail));
    const explicitSupported = problems.check(() => readScopeList(root.scopesSupported, joinPath(settingName, 'scopesSupported'), fail));
    problems.throwIfAny();
    return { base, methods: methods!, tools: tools!, prompts: prompts!, resources: resources!, expand: expand!, toolRateLimits: toolRateLimits!, explicitSupported };
  });
  const supported = new Set<string>(explicitSupported ?? base);
  if (explicitSupported === undefined) {
    for (const table of [methods, tools, prompts, resources]) {
      for (const rule of table.all) if (rule.scopes !== undefined) for (const s of rule.scopes) supported.add(s);
    }
  }
  supported.delete(OFFLINE_ACCESS);
  const scopesSupported = Object.freeze([...supported]);

  // Unions of two static (frozen) scope lists, computed once per pair and reused: the request path for
  // static rules then returns a shared frozen array instead of building a new one.
  const unions = new WeakMap<readonly string[], WeakMap<readonly string[], readonly string[]>>();
  // One frozen "allowed" decision per static required-scope list.
  const allowedDecisions = new WeakMap<readonly string[], AuthorizationDecision>();
  // Expanded granted scopes per granted-scopes array. Keyed by the array, not the AuthInfo: the token verifier hands
  // each request a fresh AuthInfo that shares its token's frozen `scopes`, so the cache holds across requests.
  // `length` guards against an array a custom verifier mutates.
  const effectiveCache = new WeakMap<readonly string[], { length: number; set: ReadonlySet<string> }>();
  // The sorted JSON of an effective scope set, for list memo keys.
  const scopeKeys = new WeakMap<ReadonlySet<string>, string>();

  function unionWith(scopes: readonly string[], extra: readonly string[]): readonly string[] {
    if (extra.length === 0) return scopes;
    if (scopes.length === 0 && Object.isFrozen(extra)) return extra;
    if (Object.isFrozen(scopes) && Object.isFrozen(extra)) {
      let inner = unions.get(scopes);
      if (inner === undefined) unions.set(scopes, (inner = new WeakMap()));
      let union = inner.get(extra);
      if (union === undefined) inner.set(extra, (union = Object.freeze([...new Set([...scopes, ...extra])])));
      return union;
    }
    return [...new Set([...scopes, ...extra])];
  }

  function applyRule(
    scopes: readonly string[],
    rule: CompiledRule | undefined,
    auth: AuthInfo,
    message: JsonRpcMessage | (() => JsonRpcMessage),
  ): readonly string[] | RuleFailure {
    if (rule === undefined) return scopes;
    if (rule.scopes !== undefined) return unionWith(scopes, rule.scopes);
    let out: unknown;
    try {
      out = rule.evaluate(auth, typeof message === 'function' ? message() : message);
    } catch (error) {
      report(error, rule.path);
      return new RuleFailure(rule.path, scopes);
    }
    if (!Array.isArray(out) || !out.every(isScopeToken)) {
      report(new TypeError(`rule returned ${describe(out)}, expected an array of scope strings`), rule.path);
      return new RuleFailure(rule.path, scopes);
    }
    // Copied so that a rule reusing its array cannot change a decision already made.
    return unionWith(scopes, out.length === 0 ? EMPTY : Array.from(out));
  }

  function report(error: unknown, path: string): void {
    if (onRuleError === undefined) return;
    try {
      onRuleError(error, path);
    } catch {
      // The hook is for diagnostics; it must not turn a denial into a crash.
    }
  }

  function evaluate(message: JsonRpcMessage, auth: AuthInfo): readonly string[] | RuleFailure {
    const method = (message as { method?: unknown }).method;
    if (typeof method !== 'string') return base;
    const scopes = applyRule(base, methods.lookup(method), auth, message);
    if (scopes instanceof RuleFailure) return scopes;
    const params = asRecord((message as { params?: unknown }).params);
    switch (method) {
      case 'tools/call':
        return applyRule(scopes, tools.lookup(params?.name), auth, message);
      case 'prompts/get':
        return applyRule(scopes, prompts.lookup(params?.name), auth, message);
      case 'resources/read':
      case 'resources/subscribe':
      case 'resources/unsubscribe':
        return applyRule(scopes, resources.lookup(params?.uri), auth, message);
      case 'completion/complete':
        return applyCompletionRef(scopes, asRecord(params?.ref), auth);
      case 'subscriptions/listen':
        return applySubscriptions(scopes, asRecord(params?.notifications)?.resourceSubscriptions, auth);
      default:
        return scopes;
    }
  }

  // completion/complete reveals argument values of a prompt or resource template: same rule as using it.
  function applyCompletionRef(
    scopes: readonly string[],
    ref: Record<string, unknown> | undefined,
    auth: AuthInfo,
  ): readonly string[] | RuleFailure {
    if (ref?.type === 'ref/prompt') {
      return applyRule(scopes, prompts.lookup(ref.name), auth, () => syntheticRequest('prompts/get', 'name', ref.name));
    }
    if (ref?.type === 'ref/resource') {
      return applyRule(scopes, resources.lookup(ref.uri), auth, () => syntheticRequest('resources/read', 'uri', ref.uri));
    }
    return scopes;
  }

  // subscriptions/listen (2026-07-28) replaces resources/subscribe: each watched URI needs its rule.
  function applySubscriptions(scopes: readonly string[], uris: unknown, auth: AuthInfo): readonly string[] | RuleFailure {
    if (!Array.isArray(uris)) return scopes;
    let result: readonly string[] | RuleFailure = scopes;
    for (const uri of uris as unknown[]) {
      result = applyRule(result, resources.lookup(uri), auth, () => syntheticRequest('resources/subscribe', 'uri', uri));
      if (result instanceof RuleFailure) return result;
    }
    return result;
  }

  function effectiveScopes(auth: AuthInfo): ReadonlySet<string> {
    const granted: readonly string[] = Array.isArray(auth.scopes) ? auth.scopes : EMPTY;
    const cached = effectiveCache.get(granted);
    if (cached !== undefined && cached.length === granted.length) return cached.set;
    const set = expand(granted);
    effectiveCache.set(granted, { length: granted.length, set });
    return set;
  }

  function findMissing(required: readonly string[], auth: AuthInfo): string[] | undefined {
    if (required.length === 0) return undefined;
    const granted = effectiveScopes(auth);
    let missing: string[] | undefined;
    for (const scope of required) if (!granted.has(scope)) (missing ??= []).push(scope);
    return missing;
  }

  function decide(required: readonly string[] | RuleFailure, auth: AuthInfo): AuthorizationDecision {
    if (required instanceof RuleFailure) {
      return {
        allowed: false,
        requiredScopes: required.scopes,
        missingScopes: findMissing(required.scopes, auth) ?? EMPTY,
        failedRule: required.path,
      };
    }
    const missing = findMissing(required, auth);
    if (missing !== undefined) return { allowed: false, requiredScopes: required, missingScopes: missing };
    if (!Object.isFrozen(required)) return { allowed: true, requiredScopes: required };
    let decision = allowedDecisions.get(required);
    if (decision === undefined) {
      allowedDecisions.set(required, (decision = Object.freeze({ allowed: true as const, requiredScopes: required })));
    }
    return decision;
  }

  function filterItems(spec: ListSpec, items: readonly unknown[], auth: AuthInfo): unknown[] {
    const table = spec.kind === 'tool' ? tools : spec.kind === 'prompt' ? prompts : resources;
    const methodRule = methods.lookup(spec.useMethod);
    // A static method rule is the same for every item: check it once. Lists run on every tools/list, so
    // static item rules take a path that allocates nothing but the output array.
    const staticMethod = methodRule === undefined || methodRule.scopes !== undefined;
    const granted = effectiveScopes(auth);
    if (staticMethod && !(hasAll(granted, base) && (methodRule === undefined || hasAll(granted, methodRule.scopes!)))) return [];
    const kept: unknown[] = [];
    for (const item of items) {
      if (typeof item !== 'object' || item === null) continue;
      const key = (item as Record<string, unknown>)[spec.itemKey];
      if (typeof key !== 'string') continue;
      const rule = table.lookup(key);
      if (staticMethod && (rule === undefined || rule.scopes !== undefined)) {
        if (rule === undefined || hasAll(granted, rule.scopes!)) kept.push(item);
        continue;
      }
      // A function rule sees the request that would use this item.
      const message = (): JsonRpcMessage => syntheticRequest(spec.useMethod, spec.paramName, key);
      const scopes = applyRule(base, methodRule, auth, message);
      if (scopes instanceof RuleFailure) continue;
      const required = applyRule(scopes, rule, auth, message);
      if (required instanceof RuleFailure) continue;
      if (findMissing(required, auth) === undefined) kept.push(item);
    }
    return kept;
  }

  const hasFunction = (rules: PolicyDefinition['tools']): boolean => rules !== undefined && Object.values(rules).some((r) => typeof r === 'function');
  const staticListRules =
    !hasFunction(definition.tools) &&
    !hasFunction(definition.prompts) &&
    !hasFunction(definition.resources) &&
    [...LIST_SPECS.values()].every((spec) => methods.lookup(spec.useMethod)?.scopes !== undefined || methods.lookup(spec.useMethod) === undefined);

  return {
    definition,
    scopesSupported,
    requiredScopes: base,
    listFilterKey(method, auth, message, protocolVersion) {
      // An answer is filtered by its shape, so may hold any of the four lists: every rule they consult must be static.
      if (!LIST_SPECS.has(method) || !staticListRules) return undefined;
      const stateless = isStatelessRevision(protocolVersion ?? bodyProtocolVersion(message));
      // JSON keeps scopes apart whatever they contain: joined with spaces, ["a b"] and ["a", "b"] would meet.
      // The same text as JSON.stringify([method, stateless, sortedScopes]), with the scopes part made once per caller.
      const set = effectiveScopes(auth);
      let scopes = scopeKeys.get(set);
      if (scopes === undefined) scopeKeys.set(set, (scopes = JSON.stringify([...set].sort())));
      return `[${JSON.stringify(method)},${stateless},${scopes}]`;
    },
    expandScopes: expand,
    toolRateLimits,
    requiredScopesFor(message, auth) {
      const required = evaluate(message, auth);
      return required instanceof RuleFailure ? required.scopes : required;
    },
    authorize(message, auth) {
      return decide(evaluate(message, auth), auth);
    },
    filterListResult(method, result, auth, message, protocolVersion) {
      const spec = LIST_SPECS.get(method);
      if (spec === undefined) return result;
      const filtered: Record<string, unknown> = { ...result };
      const items = result[spec.resultKey];
      const complete = result.resultType === undefined || result.resultType === 'complete';
      if (Array.isArray(items)) filtered[spec.resultKey] = filterItems(spec, items, auth);
      else if (complete) filtered[spec.resultKey] = [];
      if (complete && isStatelessRevision(protocolVersion ?? bodyProtocolVersion(message))) {
        filtered.cacheScope = 'private';
        // 2026-07-28 results carry a required resultType; a list that reaches here is complete.
        if (result.resultType === undefined) filtered.resultType = 'complete';
        const ttl = result.ttlMs;
        filtered.ttlMs = typeof ttl === 'number' && Number.isFinite(ttl) && ttl >= 0 ? ttl : 0;
      }
      return filtered;
    },
    insufficientScopeError(decision, auth, message) {
      return createInsufficientScopeError(decision, auth, message);
    },
    isListMethod,
  };
}

/**
 * Builds the 403 `insufficient_scope` error (RFC 6750 §3.1) for a denied decision. The message names the
 * method, the tool/prompt/resource and the missing scopes, and never the token; names are shortened and
 * reduced to the characters RFC 6750 §3 allows in `error_description`. The challenge scopes are
 * required ∪ granted (done by {@link InsufficientScopeError}, for SDK 1.x clients that replace their scope
 * with the challenged one), without `offline_access` (MCP 2026-07-28) or malformed granted scopes.
 *
 * @param message The message that was denied; omit it for a check of the base scopes only.
 */
export function createInsufficientScopeError(
  decision: AuthorizationDecision,
  auth: AuthInfo,
  message?: JsonRpcMessage,
): InsufficientScopeError {
  const target = describeTarget(message);
  let text: string;
  if (!decision.allowed && decision.failedRule !== undefined) {
    text = `Access to ${target} denied: the server's policy could not evaluate it`;
  } else {
    const missing = decision.allowed ? EMPTY : decision.missingScopes;
    text = `Insufficient scope for ${target}: missing ${missing.length === 0 ? '(none)' : missing.map(sanitize).join(' ')}`;
  }
  const granted = (Array.isArray(auth.scopes) ? auth.scopes : EMPTY).filter((s) => isScopeToken(s) && s !== OFFLINE_ACCESS);
  return new InsufficientScopeError(text, decision.requiredScopes, granted);
}

// ---------------------------------------------------------------------------------------------------------

const EMPTY: readonly string[] = Object.freeze([]);
const OFFLINE_ACCESS = 'offline_access';
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

type RuleFunction = (auth: AuthInfo, message: JsonRpcMessage) => readonly string[];

/** A rule ready to apply: static scopes (frozen, deduplicated) or a function, with its path for errors. */
type CompiledRule =
  | { readonly path: string; readonly scopes: readonly string[]; readonly evaluate?: undefined }
  | { readonly path: string; readonly scopes?: undefined; readonly evaluate: RuleFunction };

interface RuleTable {
  /** The rule for a name or URI: its entry, else `*`, else none. Non-strings get `*`. */
  lookup(key: unknown): CompiledRule | undefined;
  /** Every rule, in declaration order. */
  readonly all: readonly CompiledRule[];
}

interface ListSpec {
  readonly kind: 'tool' | 'prompt' | 'resource';
  readonly resultKey: string;
  readonly itemKey: string;
  readonly useMethod: string;
  readonly paramName: string;
}

const LIST_SPECS: ReadonlyMap<string, ListSpec> = new Map<string, ListSpec>([
  ['tools/list', { kind: 'tool', resultKey: 'tools', itemKey: 'name', useMethod: 'tools/call', paramName: 'name' }],
  ['prompts/list', { kind: 'prompt', resultKey: 'prompts', itemKey: 'name', useMethod: 'prompts/get', paramName: 'name' }],
  ['resources/list', { kind: 'resource', resultKey: 'resources', itemKey: 'uri', useMethod: 'resources/read', paramName: 'uri' }],
  [
    'resources/templates/list',
    { kind: 'resource', resultKey: 'resourceTemplates', itemKey: 'uriTemplate', useMethod: 'resources/read', paramName: 'uri' },
  ],
]);

/** The result key of each list method's answer (`tools` for `tools/list`, …), in a fixed order. */
export const LIST_RESULT_KEYS: ReadonlyArray<readonly [resultKey: string, method: string]> = [...LIST_SPECS].map(([method, spec]) => [spec.resultKey, method] as const);

/** A rule function failed; `scopes` are those gathered before it. */
class RuleFailure {
  constructor(
    readonly path: string,
    readonly scopes: readonly string[],
  ) {}
}

type Fail = (path: string, message: string) => never;

function compileNamedRules(value: unknown, path: string, fail: Fail): RuleTable {
  const named = new Map<string, CompiledRule>();
  const all: CompiledRule[] = [];
  for (const [name, rule] of readTable(value, path, fail)) {
    const compiled = compileRule(rule, joinPath(path, name), fail);
    named.set(name, compiled);
    all.push(compiled);
  }
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

function compileResourceRules(value: unknown, path: string, fail: Fail): RuleTable {
  const entries: [string, CompiledRule][] = [];
  for (const [key, rule] of readTable(value, path, fail)) {
    const rulePath = joinPath(path, key);
    if (isUriTemplate(key)) {
      try {
        compileUriTemplate(key);
      } catch (error) {
        fail(rulePath, `${(error as Error).message}. Fix the template or use an exact URI`);
      }
    }
    entries.push([key, compileRule(rule, rulePath, fail)]);
  }
  const lookup: UriLookup<CompiledRule> = compileUriLookup(entries);
  return {
    all: entries.map(([, rule]) => rule),
    lookup(key) {
      return typeof key === 'string' ? lookup.find(key) : lookup.wildcard;
    },
  };
}

function compileRule(rule: unknown, path: string, fail: Fail): CompiledRule {
  if (typeof rule === 'function') return { path, evaluate: rule as RuleFunction };
  const scopes = readScopeList(rule, path, fail, 'an array of scope strings (or a function returning one)');
  return { path, scopes: scopes ?? fail(path, 'expected an array of scope strings (or a function returning one), got undefined') };
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
 * tool without one of its own (each counted apart); names matching no tool are reported by the policy coverage.
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

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'string') return `a string (${JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}...` : value)})`;
  if (typeof value === 'object') return 'an object';
  return typeof value === 'undefined' ? 'undefined' : `a ${typeof value}`;
}

function asRecord(value: unknown): Record<string, unknown> | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
}

function syntheticRequest(method: string, param: string, value: unknown): JsonRpcMessage {
  return { jsonrpc: '2.0', id: 0, method, params: { [param]: value } };
}



function describeTarget(message: JsonRpcMessage | undefined): string {
  const method = (message as { method?: unknown } | undefined)?.method;
  if (typeof method !== 'string') return 'this request';
  const params = asRecord((message as { params?: unknown } | undefined)?.params);
  switch (method) {
    case 'tools/call':
      return typeof params?.name === 'string' ? `tool '${sanitize(params.name)}' (${method})` : method;
    case 'prompts/get':
      return typeof params?.name === 'string' ? `prompt '${sanitize(params.name)}' (${method})` : method;
    case 'resources/read':
    case 'resources/subscribe':
    case 'resources/unsubscribe':
      return typeof params?.uri === 'string' ? `resource '${sanitize(params.uri)}' (${method})` : method;
    default:
      return `method '${sanitize(method)}'`;
  }
}

/** Shortens client-supplied text and keeps only RFC 6750 §3 `error_description` characters. */
function sanitize(text: string): string {
  const short = text.length > 80 ? `${text.slice(0, 77)}...` : text;
  return short.replace(/[^\x20\x21\x23-\x5B\x5D-\x7E]/g, '?');
}

/** True when every scope in `required` is in `granted`. */
function hasAll(granted: ReadonlySet<string>, required: readonly string[]): boolean {
  for (let i = 0; i < required.length; i++) if (!granted.has(required[i]!)) return false;
  return true;
}
