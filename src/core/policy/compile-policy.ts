/**
 * The scope policy, compiled once at start-up: which scopes each JSON-RPC message needs, whether a token
 * has them (honouring the scope hierarchy), and which list items a caller may see. Reading and validating the
 * definition is `read-policy.ts`; deciding requests under it is `evaluate-policy.ts`.
 */
import type { AuthInfo } from '../kernel/auth-info.js';
import type { InsufficientScopeError } from '../kernel/errors.js';
import type { RateLimit, ToolRateLimit } from '../limits/rate-limit.js';
import type { JsonRpcMessage } from '../wire/jsonrpc.js';
import { PolicyEvaluator, type AuthorizationDecision } from './evaluate-policy.js';
import { createInsufficientScopeError } from './insufficient-scope.js';
import type { PolicyDefinition } from './policy-definition.js';
import { isListMethod } from './policy-rules.js';
import { readPolicy } from './read-policy.js';

export type { AuthorizationDecision } from './evaluate-policy.js';
export { createInsufficientScopeError } from './insufficient-scope.js';
export { isListMethod, LIST_RESULT_KEYS } from './policy-rules.js';

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
  /**
   * The rate limit of calls to the tool `name` and the rule it comes from, when finding it takes more
   * than {@link toolRateLimits} (a limit for every tool of one server of a policy set, see `compilePolicySet`); the
   * rate-limit step then asks this instead of looking `name`, then `*`, up in `toolRateLimits`. Absent on a policy
   * from {@link compilePolicy}.
   */
  readonly toolRateLimit?: (name: string) => ToolRateLimit | undefined;
  /**
   * Whether an allowed `message` names a tool or prompt the endpoint does not expose, and which kind: for a policy
   * set, a name of no server, or a tool its server's selection leaves out (see `compilePolicySet`). The guard then
   * answers it as unknown (JSON-RPC -32602, reason `target_unknown`). Absent on a policy from {@link compilePolicy}:
   * one upstream knows its own names.
   */
  readonly unknownTarget?: (message: JsonRpcMessage) => 'tool' | 'prompt' | undefined;
  /** The definition this was compiled from, as given (for coverage reports of the policy in force). */
  readonly definition: PolicyDefinition;
}

/** Marks the objects {@link compilePolicy} and `compilePolicySet` build, so that options taking a policy tell them from a definition. */
const COMPILED_POLICY: unique symbol = Symbol('mcp-oauth-guard compiled policy');

/** `policy`, marked as compiled (see {@link isCompiledPolicy}). */
export function brandCompiledPolicy(policy: CompiledPolicy): CompiledPolicy {
  return Object.assign(policy, { [COMPILED_POLICY]: true });
}

/**
 * Whether `value` is a policy compiled by {@link compilePolicy} or `compilePolicySet` (or a copy of one made by
 * spreading it), rather than a {@link PolicyDefinition}.
 */
export function isCompiledPolicy(value: unknown): value is CompiledPolicy {
  return typeof value === 'object' && value !== null && (value as { [COMPILED_POLICY]?: unknown })[COMPILED_POLICY] === true;
}

/** The definition of a policy given either way (as options taking a policy accept it): `policy.definition` for a compiled one. */
export function policyDefinitionOf(policy: PolicyDefinition | CompiledPolicy): PolicyDefinition;
export function policyDefinitionOf(policy: PolicyDefinition | CompiledPolicy | undefined): PolicyDefinition | undefined;
export function policyDefinitionOf(policy: PolicyDefinition | CompiledPolicy | undefined): PolicyDefinition | undefined {
  return isCompiledPolicy(policy) ? policy.definition : policy;
}

/** Options of {@link compilePolicy}. */
export interface CompilePolicyOptions {
  /**
   * Called when a rule function throws or returns an invalid value, or a rule's condition cannot be evaluated (the
   * message is then denied). Use it to log the bug; errors thrown by this hook are ignored. Default: none.
   */
  onRuleError?: (error: unknown, rulePath: string) => void;
  /** Where the definition came from (e.g. a file path), appended to configuration error messages. */
  source?: string;
}

/**
 * Compiles and validates a policy at start-up. A bad policy throws one {@link ConfigurationError} naming the
 * first problem of each part (unknown keys, `requiredScopes`, `methods`, `tools`, …, and of each rule in them; all in its `problems`),
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
  const rules = readPolicy(definition, settingName, options.source);
  const evaluator = new PolicyEvaluator(rules, options.onRuleError);
  return brandCompiledPolicy({
    definition,
    scopesSupported: rules.scopesSupported,
    requiredScopes: rules.base,
    listFilterKey: (method, auth, message, protocolVersion) => evaluator.listFilterKey(method, auth, message, protocolVersion),
    expandScopes: rules.expand,
    toolRateLimits: rules.toolRateLimits,
    requiredScopesFor: (message, auth) => evaluator.requiredScopesFor(message, auth),
    authorize: (message, auth) => evaluator.authorize(message, auth),
    filterListResult: (method, result, auth, message, protocolVersion) => evaluator.filterListResult(method, result, auth, message, protocolVersion),
    insufficientScopeError: (decision, auth, message) => createInsufficientScopeError(decision, auth, message),
    isListMethod,
  });
}
