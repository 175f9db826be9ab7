/**
 * Evaluates a compiled policy ({@link PolicyRules}, from `read-policy.ts`): the scopes a request needs, the
 * decision for a token, and which list items a caller may see. {@link PolicyEvaluator.decideRule} is the one place
 * a rule is decided for a request.
 */
import type { AuthInfo } from '../kernel/auth-info.js';
import { RESOURCE_METHODS } from '../mcp/mcp-methods.js';
import { bodyProtocolVersion, isStatelessRevision } from '../mcp/protocol-version.js';
import type { JsonRpcMessage } from '../wire/jsonrpc.js';
import { asRecord } from '../wire/as-record.js';
import { isScopeToken } from '../wire/scope-token.js';
import { isUriTemplate } from '../wire/uri-template.js';
import { knownNameOutcome, nameOutcome, rememberNameOutcome } from './name-outcomes.js';
import { callerKey, callerOutcomes, conditionRequest, type RuleContext } from './condition-request.js';
import { ReusedListItems } from './reused-list-items.js';
import { ConditionEvaluationError, ConditionFailure, type CompiledCondition, type ConditionRequest } from './policy-condition.js';
import { describeValue, EMPTY, LIST_SPECS, type CompiledRule, type ListSpec, type PolicyRules, type RuleTable } from './policy-rules.js';

export type { RuleContext } from './condition-request.js';

/**
 * The outcome of `CompiledPolicy.authorize`.
 *
 * - `requiredScopes`: every scope the message needs (base ∪ method rule ∪ tool/prompt/resource rule).
 *   MCP 2026-07-28 `basic/authorization` asks the 403 challenge to name all of them, not only the missing ones.
 * - `missingScopes`: the required scopes the token lacks after hierarchy expansion.
 * - `failedRule`: set when a rule function threw or returned something other than an array of scope
 *   strings; the message is then denied whatever the token holds (fail closed). It is the rule's path
 *   (e.g. `policy.tools.delete_note`), for logs only: do not send it to clients.
 * - `rule`: the rule that decided, by its path in the policy (`tools.refund`, `tools.*`, `servers.notes.tools.add`):
 *   the tool, prompt or resource rule when one applied, else the method's; absent when no rule applied.
 * - `condition`: the CEL source of the deciding rule's condition (`when`): on an allowed decision, the condition
 *   that held; on a denied one, set when the condition refused the request. Then
 *   `conditionError` says why it could not be evaluated, when it could not (an error, a non-boolean result, the
 *   cost limit); absent when it was false. A condition refusal is never a scope challenge: more scopes cannot help.
 * - `server`: with several servers behind one endpoint (`compilePolicySet`), the name of the one server the
 *   request is for (its tool, prompt or resource), allowed or denied; absent for a single policy, and for a
 *   request of no known server or of several (a merged list, a tool no server exposes).
 */
export type AuthorizationDecision =
  | { readonly allowed: true; readonly requiredScopes: readonly string[]; readonly rule?: string; readonly condition?: string; readonly server?: string }
  | {
      readonly allowed: false;
      readonly requiredScopes: readonly string[];
      readonly missingScopes: readonly string[];
      readonly failedRule?: string;
      readonly rule?: string;
      readonly condition?: string;
      readonly conditionError?: string;
      readonly server?: string;
    };

/** Called when a rule function throws or returns an invalid value; see `CompilePolicyOptions.onRuleError`. */
export type RuleErrorHook = (error: unknown, rulePath: string) => void;

/** A rule function failed; `scopes` are those gathered before it. */
class RuleFailure {
  constructor(
    readonly path: string,
    readonly scopes: readonly string[],
  ) {}
}

/** A rule's condition refused the request (false, or not evaluable: `error`); `scopes` are those gathered before it. */
export class ConditionDenial {
  constructor(
    readonly rule: string,
    readonly condition: string,
    readonly scopes: readonly string[],
    readonly error: string | undefined,
  ) {}
}

/** What {@link PolicyEvaluator.decideRule} answers for a rule that could not be decided (reported already). */
const UNDECIDED: unique symbol = Symbol('undecided rule');

/** The scopes gathered so far for a request, or the failure or refusal that ended the gathering. */
type Gathered = readonly string[] | RuleFailure | ConditionDenial;

const CALL_CONTEXT: RuleContext = Object.freeze({ listing: false });

/** A rule function is called with the request, or with a synthetic one made only if it is needed. */
type RuleRequest = JsonRpcMessage | (() => JsonRpcMessage);

/** The request a condition reading none of it is evaluated with, at list time. */
const NO_MESSAGE: JsonRpcMessage = Object.freeze({ jsonrpc: '2.0', id: 0, method: '' }) as JsonRpcMessage;

/**
 * Decides requests under one compiled policy. Static rules are precombined on first use and the expanded scopes
 * are cached per granted-scopes array, so the common request allocates nothing.
 */
export class PolicyEvaluator {
  // Unions of two static (frozen) scope lists, computed once per pair and reused: the request path for
  // static rules then returns a shared frozen array instead of building a new one.
  private readonly unions = new WeakMap<readonly string[], WeakMap<readonly string[], readonly string[]>>();
  // One frozen "allowed" decision per static required-scope list, server (`""` for none) and deciding rule: keyed by
  // the compiled rule (or, for a decision combined from two, by the frozen decision whose rule it carries), so that
  // no key is made per request.
  private readonly allowedDecisions = new WeakMap<readonly string[], Map<string, Map<DecidingKey, AuthorizationDecision>>>();
  // The rule that decided the request being gathered (the last one applied); read right after gathering.
  private decidedBy: CompiledRule | undefined;
  // Expanded granted scopes per granted-scopes array. Keyed by the array, not the AuthInfo: the token verifier hands
  // each request a fresh AuthInfo that shares its token's frozen `scopes`, so the cache holds across requests.
  // `length` guards against an array a custom verifier mutates.
  private readonly effectiveCache = new WeakMap<readonly string[], { length: number; set: ReadonlySet<string> }>();
  // The sorted JSON of an effective scope set, for list memo keys.
  private readonly scopeKeys = new WeakMap<ReadonlySet<string>, string>();
  /** The last filtering of each items array a handler answered with (see {@link ReusedListItems}). */
  private readonly reusedItems = new ReusedListItems();
  /**
   * What a filtered list depends on besides the caller's scopes, when a filtered list may be reused (no rule a list
   * consults is a function, so each decision is a pure function of the caller and the item): the outcomes of the
   * conditions that read the caller alone join the reuse key, or the caller itself when a condition reads the item
   * too. Undefined when a filtered list may not be reused.
   */
  private readonly listKeyConditions: ListKeyConditions | undefined;

  constructor(
    private readonly rules: PolicyRules,
    private readonly onRuleError: RuleErrorHook | undefined,
    /** The server this policy is the own policy of (the `server` of its conditions); `""` for none. */
    private readonly server = '',
  ) {
    this.listKeyConditions = listKeyConditions(rules);
  }

  /**
   * The scopes `rule` demands of one request: its static scopes, or what its function returns for `auth` and the
   * request. {@link UNDECIDED} when the function throws or returns anything but an array of scope strings
   * (reported to the rule-error hook): the request is then denied (fail closed).
   */
  decideRule(rule: CompiledRule, auth: AuthInfo, message: RuleRequest, context: RuleContext = CALL_CONTEXT): readonly string[] | typeof UNDECIDED | ConditionDenial {
    if (rule.scopes !== undefined) return rule.condition === undefined ? rule.scopes : this.decideCondition(rule, auth, message, context);
    let out: unknown;
    try {
      out = rule.evaluate(auth, typeof message === 'function' ? message() : message);
    } catch (error) {
      this.report(error, rule.path);
      return UNDECIDED;
    }
    if (!Array.isArray(out) || !out.every(isScopeToken)) {
      this.report(new TypeError(`rule returned ${describeValue(out)}, expected an array of scope strings`), rule.path);
      return UNDECIDED;
    }
    // Copied so that a rule reusing its array cannot change a decision already made.
    return out.length === 0 ? EMPTY : Array.from(out);
  }

  /**
   * A static rule with a condition: its scopes when the condition holds, else the refusal. At list time
   * (`context.listing`), a condition that needs the call itself (its arguments, or the values a template captures
   * from a URI not known yet) is taken as holding: the item stays listed and the call decides.
   */
  private decideCondition(rule: CompiledRule, auth: AuthInfo, message: RuleRequest, context: RuleContext): readonly string[] | ConditionDenial {
    const condition = rule.condition!;
    const outcome = this.conditionOutcome(rule, auth, message, context);
    if (outcome === true) return rule.scopes!;
    const error = outcome instanceof ConditionFailure ? outcome.message : undefined;
    return new ConditionDenial(rule.rule, condition.source, EMPTY, error);
  }

  /**
   * Whether `rule`'s condition holds for this request: `true` at list time for a condition that needs the call itself
   * (`listTimeNeed`: its arguments, or a template's URI and captured values, not known yet), so the item stays listed
   * and the call decides. A condition that reads neither `mcp` nor `server` runs once per token ({@link callerOutcomes}).
   */
  private conditionOutcome(rule: CompiledRule, auth: AuthInfo, message: RuleRequest, context: RuleContext): boolean | ConditionFailure {
    const condition = rule.condition!;
    if (context.listing && condition.listTimeNeed(context.template === true) === 'call') return true;
    const outcomes = condition.readsRequest ? undefined : (context.outcomes ?? callerOutcomes(auth));
    let outcome = outcomes?.get(condition);
    if (outcome !== undefined) return outcome;
    const request = conditionRequest(typeof message === 'function' ? message() : message, rule, context, this.server);
    if (context.listing && condition.readsNamesOnly) {
      const server = typeof request.server === 'function' ? request.server() : request.server;
      return nameOutcome(auth, condition, request.method, server, request.name, () => this.evaluateCondition(rule, auth, request));
    }
    outcome = this.evaluateCondition(rule, auth, request);
    outcomes?.set(condition, outcome);
    return outcome;
  }

  /** Runs `rule`'s condition; a failure is reported once per evaluation (an outcome reused is not reported again). */
  private evaluateCondition(rule: CompiledRule, auth: AuthInfo, request: ConditionRequest): boolean | ConditionFailure {
    const outcome = rule.condition!.evaluate(auth, request);
    if (outcome instanceof ConditionFailure) this.report(new ConditionEvaluationError(outcome, rule.rule), rule.path);
    return outcome;
  }

  /**
   * See `CompiledPolicy.requiredScopesFor`.
   *
   * @param target The tool or prompt name to decide on instead of the one `message` names (`params.name`, or a
   *   completion's `params.ref.name`): a server's own name for what the message calls by its exposed name. Rule
   *   functions then see `message` with that name in its place.
   */
  requiredScopesFor(message: JsonRpcMessage, auth: AuthInfo, target?: string, server?: () => string): readonly string[] {
    const required = this.gather(message, auth, target, server);
    return Array.isArray(required) ? required : (required as RuleFailure | ConditionDenial).scopes;
  }

  /**
   * See `CompiledPolicy.authorize`; `target` as for {@link PolicyEvaluator.requiredScopesFor}; `server` gives the
   * `server` of conditions when this policy serves several servers (asked only if a condition reads it);
   * `uriServer` the server of each URI a `subscriptions/listen` watches (default `server`).
   */
  authorize(message: JsonRpcMessage, auth: AuthInfo, target?: string, server?: () => string, uriServer?: (uri: unknown) => string): AuthorizationDecision {
    this.decidedBy = undefined;
    const gathered = this.gather(message, auth, target, server, uriServer);
    return this.decide(gathered, auth, this.decidedBy);
  }

  /**
   * One decision from two made on the same message (under two policies that both apply to it): allowed when both
   * are, requiring the scopes of both, missing what either misses, failed when either rule failed (the first
   * one's path). An allowed pair of static decisions gives a shared frozen decision, as {@link authorize} does.
   * `server` names the one server the message is for, carried by the decision whatever it is.
   */
  combine(first: AuthorizationDecision, second: AuthorizationDecision, server?: string): AuthorizationDecision {
    const required = this.unionWith(first.requiredScopes, second.requiredScopes);
    if (first.allowed && second.allowed) {
      const deciding = second.rule === undefined ? first : second;
      // A frozen decision is a shared one, made once for its rule: it stands for that rule (and its condition).
      const key = Object.isFrozen(deciding) ? deciding : conditionKey(deciding.rule, deciding.condition);
      return this.allowed(required, deciding.rule, deciding.condition, key, server);
    }
    const named = server === undefined ? undefined : { server };
    // A condition's refusal stands whatever else is missing: a scope step-up could not lift it.
    if (!first.allowed && first.condition !== undefined) return { ...first, requiredScopes: required, ...named };
    if (!second.allowed && second.condition !== undefined) return { ...second, requiredScopes: required, ...named };
    const rule = (first.allowed ? undefined : first.rule) ?? (second.allowed ? undefined : second.rule);
    const missing = first.allowed ? EMPTY : first.missingScopes;
    const alsoMissing = second.allowed ? EMPTY : second.missingScopes;
    const failedRule = (first.allowed ? undefined : first.failedRule) ?? (second.allowed ? undefined : second.failedRule);
    const missingScopes = missing.length === 0 ? alsoMissing : alsoMissing.length === 0 ? missing : [...new Set([...missing, ...alsoMissing])];
    return { allowed: false, requiredScopes: required, missingScopes, ...(failedRule === undefined ? {} : { failedRule }), ...(rule === undefined ? {} : { rule }), ...named };
  }

  /** See `CompiledPolicy.filterListResult`. */
  filterListResult(method: string, result: Record<string, unknown>, auth: AuthInfo, message?: JsonRpcMessage, protocolVersion?: string): Record<string, unknown> {
    return filterListEnvelope(method, result, message, protocolVersion, (spec, items) => {
      // The same items for the same key (the caller, as far as the filter depends on them): filtered as last time.
      const key = this.listFilterKey(method, auth, message, protocolVersion);
      if (key === undefined) return this.filterItems(spec, items, auth);
      const nameOf = (item: unknown): string | undefined => listItemKey(spec, item);
      return this.reusedItems.get(items, key, nameOf) ?? this.reusedItems.set(items, key, nameOf, this.filterItems(spec, items, auth));
    });
  }

  /** See `CompiledPolicy.listFilterKey`. */
  listFilterKey(method: string, auth: AuthInfo, message?: JsonRpcMessage, protocolVersion?: string): string | undefined {
    // An answer is filtered by its shape, so may hold any of the four lists: every rule they consult must be static.
    const keyed = this.listKeyConditions;
    if (!LIST_SPECS.has(method) || keyed === undefined) return undefined;
    // A condition that reads the item too decides each item for this caller alone, the same way each time: the
    // caller's own number (one per verified identity, never another's) keys their list.
    const caller = keyed.perItem ? callerKey(auth) : undefined;
    if (keyed.perItem && caller === undefined) return undefined;
    const stateless = isStatelessRevision(protocolVersion ?? bodyProtocolVersion(message));
    // JSON keeps scopes apart whatever they contain: joined with spaces, ["a b"] and ["a", "b"] would meet.
    // The same text as JSON.stringify([method, stateless, sortedScopes]), with the scopes part made once per caller.
    const set = this.effectiveScopes(auth);
    let scopes = this.scopeKeys.get(set);
    if (scopes === undefined) this.scopeKeys.set(set, (scopes = JSON.stringify([...set].sort())));
    if (caller !== undefined) return `[${JSON.stringify(method)},${stateless},${scopes},${caller}]`;
    const conditions = keyed.conditions;
    if (conditions.length === 0) return `[${JSON.stringify(method)},${stateless},${scopes}]`;
    // What the conditions decide for this caller: 1 holds, 0 does not, e could not be evaluated.
    let outcomes = '';
    const known = callerOutcomes(auth);
    for (const condition of conditions) {
      let outcome = known.get(condition);
      if (outcome === undefined) known.set(condition, (outcome = condition.evaluate(auth, this.keyRequest)));
      outcomes += outcome === true ? '1' : outcome === false ? '0' : 'e';
    }
    return `[${JSON.stringify(method)},${stateless},${scopes},"${outcomes}"]`;
  }

  /** The request the conditions of a list key are evaluated with: they read none of it. */
  private get keyRequest(): ConditionRequest {
    return { method: '', name: '', uri: '', server: this.server };
  }

  /** Whether the token holds the policy's `requiredScopes` (under its scope hierarchy): without them it may use nothing. */
  grantsBase(auth: AuthInfo): boolean {
    return hasAll(this.effectiveScopes(auth), this.rules.base);
  }

  /** The token's effective scopes: granted ∪ implied by the hierarchy, cached per granted-scopes array. */
  effectiveScopes(auth: AuthInfo): ReadonlySet<string> {
    const granted: readonly string[] = Array.isArray(auth.scopes) ? auth.scopes : EMPTY;
    const cached = this.effectiveCache.get(granted);
    if (cached !== undefined && cached.length === granted.length) return cached.set;
    const set = this.rules.expand(granted);
    this.effectiveCache.set(granted, { length: granted.length, set });
    return set;
  }

  /**
   * Every scope `message` needs: base ∪ its method's rule ∪ the rule of what it targets (`target`, when given,
   * in place of the tool or prompt name it carries; rule functions then see a copy with that name, made only if one
   * is called).
   */
  private gather(message: JsonRpcMessage, auth: AuthInfo, target?: string, server?: () => string, uriServer?: (uri: unknown) => string): Gathered {
    const { base, methods, tools, prompts, resources } = this.rules;
    const method = (message as { method?: unknown }).method;
    if (typeof method !== 'string') return base;
    const request: RuleRequest = target === undefined ? message : () => withTargetName(message, target);
    const context: RuleContext = server === undefined ? CALL_CONTEXT : { listing: false, server };
    const scopes = this.applyRule(base, methods.lookup(method), auth, request, context);
    if (!Array.isArray(scopes)) return scopes;
    const params = asRecord((message as { params?: unknown }).params);
    if (RESOURCE_METHODS.has(method)) return this.applyRule(scopes, resources.lookup(params?.uri), auth, message, context);
    switch (method) {
      case 'tools/call':
        return this.applyRule(scopes, tools.lookup(target ?? params?.name), auth, request, context);
      case 'prompts/get':
        return this.applyRule(scopes, prompts.lookup(target ?? params?.name), auth, request, context);
      case 'completion/complete':
        return this.applyCompletionRef(scopes, asRecord(params?.ref), auth, target, context);
      case 'subscriptions/listen':
        return this.applySubscriptions(scopes, asRecord(params?.notifications)?.resourceSubscriptions, auth, context, uriServer);
      default:
        return scopes;
    }
  }

  /** `scopes` ∪ what `rule` demands of the request, or the failure of a rule that could not be decided, or a condition's refusal. */
  private applyRule(scopes: readonly string[], rule: CompiledRule | undefined, auth: AuthInfo, message: RuleRequest, context: RuleContext = CALL_CONTEXT): Gathered {
    if (rule === undefined) return scopes;
    this.decidedBy = rule;
    const demanded = this.decideRule(rule, auth, message, context);
    if (demanded === UNDECIDED) return new RuleFailure(rule.path, scopes);
    if (demanded instanceof ConditionDenial) return new ConditionDenial(demanded.rule, demanded.condition, scopes, demanded.error);
    return this.unionWith(scopes, demanded);
  }

  // completion/complete reveals argument values of a prompt or resource template: same rule as using it, for the
  // same server (the request's context).
  private applyCompletionRef(scopes: readonly string[], ref: Record<string, unknown> | undefined, auth: AuthInfo, target: string | undefined, context: RuleContext): Gathered {
    if (ref?.type === 'ref/prompt') {
      const name = target ?? ref.name;
      return this.applyRule(scopes, this.rules.prompts.lookup(name), auth, () => syntheticRequest('prompts/get', 'name', name), context);
    }
    if (ref?.type === 'ref/resource') {
      // The ref names a resource template: what a read would capture is not known yet, so it is decided as the
      // template is when listed (a condition on its URI or captured values waits for the read).
      const template = typeof ref.uri === 'string' && isUriTemplate(ref.uri);
      const own: RuleContext = template ? { ...context, listing: true, template: true } : context;
      return this.applyRule(scopes, this.rules.resources.lookup(ref.uri), auth, () => syntheticRequest('resources/read', 'uri', ref.uri), own);
    }
    return scopes;
  }

  // subscriptions/listen (2026-07-28) replaces resources/subscribe: each watched URI needs its rule, decided for the
  // server that URI goes to (`uriServer`, when several are served).
  private applySubscriptions(scopes: readonly string[], uris: unknown, auth: AuthInfo, context: RuleContext, uriServer: ((uri: unknown) => string) | undefined): Gathered {
    if (!Array.isArray(uris)) return scopes;
    let result: Gathered = scopes;
    for (const uri of uris as unknown[]) {
      const own: RuleContext = uriServer === undefined ? context : { ...context, server: () => uriServer(uri) };
      result = this.applyRule(result, this.rules.resources.lookup(uri), auth, () => syntheticRequest('resources/subscribe', 'uri', uri), own);
      if (!Array.isArray(result)) return result;
    }
    return result;
  }

  private unionWith(scopes: readonly string[], extra: readonly string[]): readonly string[] {
    if (extra.length === 0) return scopes;
    if (scopes.length === 0 && Object.isFrozen(extra)) return extra;
    if (Object.isFrozen(scopes) && Object.isFrozen(extra)) {
      let inner = this.unions.get(scopes);
      if (inner === undefined) this.unions.set(scopes, (inner = new WeakMap()));
      let union = inner.get(extra);
      if (union === undefined) inner.set(extra, (union = Object.freeze([...new Set([...scopes, ...extra])])));
      return union;
    }
    return [...new Set([...scopes, ...extra])];
  }

  private report(error: unknown, path: string): void {
    if (this.onRuleError === undefined) return;
    try {
      this.onRuleError(error, path);
    } catch {
      // The hook is for diagnostics; it must not turn a denial into a crash.
    }
  }

  private findMissing(required: readonly string[], auth: AuthInfo): string[] | undefined {
    if (required.length === 0) return undefined;
    const granted = this.effectiveScopes(auth);
    let missing: string[] | undefined;
    for (const scope of required) if (!granted.has(scope)) (missing ??= []).push(scope);
    return missing;
  }

  private decide(required: Gathered, auth: AuthInfo, decidedBy: CompiledRule | undefined): AuthorizationDecision {
    const rule = decidedBy?.rule;
    if (required instanceof ConditionDenial || required instanceof RuleFailure) {
      const denied = { allowed: false as const, requiredScopes: required.scopes, missingScopes: this.findMissing(required.scopes, auth) ?? EMPTY };
      if (required instanceof RuleFailure) return { ...denied, failedRule: required.path, ...(rule === undefined ? {} : { rule }) };
      return { ...denied, rule: required.rule, condition: required.condition, ...(required.error === undefined ? {} : { conditionError: required.error }) };
    }
    const missing = this.findMissing(required, auth);
    if (missing !== undefined) return { allowed: false, requiredScopes: required, missingScopes: missing, ...(rule === undefined ? {} : { rule }) };
    return this.allowed(required, rule, decidedBy?.condition?.source, decidedBy);
  }

  /**
   * The "allowed" decision requiring `required`, decided by `rule` whose `condition` held, for `server` (when the
   * message is for one of several): shared and frozen for a static (frozen) list. `key` stands for the pair of
   * `rule` and `condition`: the compiled rule, a frozen decision carrying them, or {@link conditionKey}.
   */
  private allowed(required: readonly string[], rule: string | undefined, condition: string | undefined, key: DecidingKey, server?: string): AuthorizationDecision {
    const make = (): AuthorizationDecision => ({
      allowed: true as const,
      requiredScopes: required,
      ...(rule === undefined ? {} : { rule }),
      ...(condition === undefined ? {} : { condition }),
      ...(server === undefined ? {} : { server }),
    });
    if (!Object.isFrozen(required)) return make();
    let byServer = this.allowedDecisions.get(required);
    if (byServer === undefined) this.allowedDecisions.set(required, (byServer = new Map()));
    // Server names are never empty: `""` stands for none.
    let byRule = byServer.get(server ?? '');
    if (byRule === undefined) byServer.set(server ?? '', (byRule = new Map()));
    let decision = byRule.get(key);
    if (decision === undefined) byRule.set(key, (decision = Object.freeze(make())));
    return decision;
  }

  /**
   * What deciding the items of one list for `auth` needs, worked out once per list: see
   * {@link PolicyEvaluator.mayUseItem}.
   */
  listItems(spec: ListSpec, auth: AuthInfo): ListItems {
    const { base, methods, tools, prompts, resources } = this.rules;
    const table = spec.kind === 'tool' ? tools : spec.kind === 'prompt' ? prompts : resources;
    const methodRule = methods.lookup(spec.useMethod);
    // A static method rule is the same for every item: check it once. Lists run on every tools/list, so
    // static item rules take a path that allocates nothing.
    const staticMethod = methodRule === undefined || (methodRule.scopes !== undefined && methodRule.condition === undefined);
    const granted = this.effectiveScopes(auth);
    const none = staticMethod && !(hasAll(granted, base) && (methodRule === undefined || hasAll(granted, methodRule.scopes!)));
    const context: RuleContext = { listing: true, template: spec.itemKey === 'uriTemplate', outcomes: callerOutcomes(auth) };
    return new ListItems(spec, auth, table, methodRule, staticMethod, granted, none, staticMethod && !none && table.all.length === 0, context);
  }

  /**
   * Whether the caller of `items` could use the item whose name or URI is `key`: base ∪ the rule of the method
   * that uses it (`tools/call`, `prompts/get`, `resources/read`) ∪ the item's rule all granted. A rule function
   * sees the request that would use the item (see `CompiledPolicy.filterListResult`); one that fails denies.
   */
  mayUseItem(items: ListItems, key: string, server?: () => string): boolean {
    if (items.every) return true;
    if (items.none) return false;
    const rule = items.table.lookup(key);
    if (items.staticMethod && (rule === undefined || (rule.scopes !== undefined && rule.condition === undefined))) return rule === undefined || hasAll(items.granted, rule.scopes!);
    // A static rule whose condition depends on the caller alone (or waits for the call): one outcome for the whole
    // list, then the same check as a scopes-only rule, allocating nothing per item.
    if (items.staticMethod && server === undefined && rule !== undefined && rule.scopes !== undefined && rule.condition!.listTimeNeed(items.context.template === true) !== 'request') {
      return this.conditionOutcome(rule, items.auth, NO_MESSAGE, items.context) === true && hasAll(items.granted, rule.scopes);
    }
    const { spec, auth } = items;
    const message = (): JsonRpcMessage => syntheticRequest(spec.useMethod, spec.paramName, key);
    // A static rule whose condition reads only the item's name (and method, server): its outcome for this caller and
    // this name is remembered across lists, so a list asked again runs no condition and builds no request.
    if (items.staticMethod && rule !== undefined && rule.scopes !== undefined && rule.condition!.readsNamesOnly) {
      const condition = rule.condition!;
      const serverName = server?.() ?? this.server;
      const name = spec.paramName === 'name' ? key : '';
      let outcome = knownNameOutcome(auth, condition, spec.useMethod, serverName, name);
      if (outcome === undefined) {
        const context: RuleContext = server === undefined ? items.context : { ...items.context, server };
        outcome = this.evaluateCondition(rule, auth, conditionRequest(message(), rule, context, this.server));
        rememberNameOutcome(auth, condition, spec.useMethod, serverName, name, outcome);
      }
      return outcome === true && hasAll(items.granted, rule.scopes);
    }
    // Decided as the call using the item would be, by the same rules: only what needs the call itself waits for it.
    const context: RuleContext = server === undefined ? items.context : { ...items.context, server };
    const scopes = this.applyRule(this.rules.base, items.methodRule, auth, message, context);
    if (!Array.isArray(scopes)) return false;
    const required = this.applyRule(scopes, rule, auth, message, context);
    return Array.isArray(required) && this.findMissing(required, auth) === undefined;
  }

  /** The items of one list the caller could use (see {@link PolicyEvaluator.mayUseItem}). */
  private filterItems(spec: ListSpec, items: readonly unknown[], auth: AuthInfo): unknown[] {
    const check = this.listItems(spec, auth);
    if (check.none) return [];
    const kept: unknown[] = [];
    for (const item of items) {
      const key = listItemKey(spec, item);
      if (key !== undefined && this.mayUseItem(check, key)) kept.push(item);
    }
    return kept;
  }
}

/**
 * What an allowed decision is cached under besides its scopes and server: the compiled rule that decided it, a
 * frozen decision whose rule and condition it carries, or the text of that pair (see {@link conditionKey}).
 */
type DecidingKey = CompiledRule | AuthorizationDecision | string | undefined;

/** A rule and its condition as one key, for a decision that is neither compiled here nor shared. */
function conditionKey(rule: string | undefined, condition: string | undefined): string | undefined {
  return condition === undefined ? rule : `${rule ?? ''}\n${condition}`;
}

/**
 * See `PolicyEvaluator.listKeyConditions`: the distinct conditions of the rules lists consult (item rules, the
 * rules of the methods using items, and those of the list methods themselves), or undefined when one of those rules is a function or has a condition whose
 * list-time outcome depends on the request (it reads `mcp` or `server`, but not the call's arguments, which lists
 * never wait for).
 */
function listKeyConditions(rules: PolicyRules): ListKeyConditions | undefined {
  const consulted: CompiledRule[] = [...rules.tools.all, ...rules.prompts.all, ...rules.resources.all];
  // The list method's own rule too: a policy set applies a server's `methods["tools/list"]` to that server's items.
  for (const [method, spec] of LIST_SPECS) {
    for (const rule of [rules.methods.lookup(spec.useMethod), rules.methods.lookup(method)]) if (rule !== undefined) consulted.push(rule);
  }
  const conditions = new Set<CompiledCondition>();
  let perItem = false;
  for (const rule of consulted) {
    if (rule.evaluate !== undefined) return undefined;
    const condition = rule.condition;
    if (condition === undefined) continue;
    // Asked as for concrete items: a resource rule decides resources/list too, where a URI is known.
    const need = condition.listTimeNeed(false);
    if (need === 'call') continue;
    if (need === 'request') perItem = true;
    else conditions.add(condition);
  }
  return { conditions: [...conditions], perItem };
}

/**
 * What a filtered list's reuse key holds beyond the method and the caller's scopes: the outcomes of the conditions that
 * read the caller alone, or, when some condition also reads the item (`perItem`: a pure function of the caller and the
 * item), the caller itself.
 */
interface ListKeyConditions {
  readonly conditions: readonly CompiledCondition[];
  readonly perItem: boolean;
}

/** The rules one list's items are decided under for one caller; made by {@link PolicyEvaluator.listItems}. */
export class ListItems {
  constructor(
    readonly spec: ListSpec,
    readonly auth: AuthInfo,
    readonly table: RuleTable,
    readonly methodRule: CompiledRule | undefined,
    /** Whether the using method's rule is static (then already checked, in {@link ListItems.none}). */
    readonly staticMethod: boolean,
    readonly granted: ReadonlySet<string>,
    /** Whether no item can pass: the base scopes or the static rule of the using method are not granted. */
    readonly none: boolean,
    /** Whether every item passes: the static rules checked once allow the caller, and no item has a rule. */
    readonly every: boolean,
    /** How the list's rules are applied: at list time, sharing the outcomes of conditions that depend on the caller alone. */
    readonly context: RuleContext,
  ) {}
}

/** The name or URI by which a list item is decided (`name`, `uri`, `uriTemplate`); undefined when it has none (the item is dropped). */
export function listItemKey(spec: ListSpec, item: unknown): string | undefined {
  if (typeof item !== 'object' || item === null) return undefined;
  const key = (item as Record<string, unknown>)[spec.itemKey];
  return typeof key === 'string' ? key : undefined;
}

/**
 * A list result with its items filtered by `filterItems`, and the caching hints of a filtered list (see
 * `CompiledPolicy.filterListResult`); `result` itself for a method that is no list. The one place a filtered
 * list's answer is shaped, whichever policy decides its items.
 */
export function filterListEnvelope(
  method: string,
  result: Record<string, unknown>,
  message: JsonRpcMessage | undefined,
  protocolVersion: string | undefined,
  filterItems: (spec: ListSpec, items: readonly unknown[]) => unknown[],
): Record<string, unknown> {
  const spec = LIST_SPECS.get(method);
  if (spec === undefined) return result;
  const filtered: Record<string, unknown> = { ...result };
  const items = result[spec.resultKey];
  const complete = result.resultType === undefined || result.resultType === 'complete';
  if (Array.isArray(items)) filtered[spec.resultKey] = filterItems(spec, items);
  else if (complete) filtered[spec.resultKey] = [];
  if (complete && isStatelessRevision(protocolVersion ?? bodyProtocolVersion(message))) {
    filtered.cacheScope = 'private';
    // 2026-07-28 results carry a required resultType; a list that reaches here is complete.
    if (result.resultType === undefined) filtered.resultType = 'complete';
    const ttl = result.ttlMs;
    filtered.ttlMs = typeof ttl === 'number' && Number.isFinite(ttl) && ttl >= 0 ? ttl : 0;
  }
  return filtered;
}

/** `message` (a `tools/call`, `prompts/get` or `completion/complete` of a prompt) naming `name` instead. */
function withTargetName(message: JsonRpcMessage, name: string): JsonRpcMessage {
  const params = asRecord((message as { params?: unknown }).params) ?? {};
  if ((message as { method?: unknown }).method === 'completion/complete') {
    return { ...message, params: { ...params, ref: { ...asRecord(params.ref), name } } } as JsonRpcMessage;
  }
  return { ...message, params: { ...params, name } } as JsonRpcMessage;
}

function syntheticRequest(method: string, param: string, value: unknown): JsonRpcMessage {
  return { jsonrpc: '2.0', id: 0, method, params: { [param]: value } };
}

/** True when every scope in `required` is in `granted`. */
function hasAll(granted: ReadonlySet<string>, required: readonly string[]): boolean {
  for (let i = 0; i < required.length; i++) if (!granted.has(required[i]!)) return false;
  return true;
}
