/**
 * A policy in its compiled form: plain data that `read-policy.ts` builds from a definition and
 * `evaluate-policy.ts` decides requests with. Nothing here reads or validates, nothing here decides.
 */
import type { AuthInfo } from '../kernel/auth-info.js';
import type { RateLimit } from '../limits/rate-limit.js';
import type { JsonRpcMessage } from '../wire/jsonrpc.js';
import type { PolicyDefinition } from './policy-definition.js';
import type { CompiledCondition } from './policy-condition.js';

/** The shared empty scope list (frozen, so it may be handed out and reused as a static rule's scopes). */
export const EMPTY: readonly string[] = Object.freeze([]);
/** Never a resource requirement, never advertised (MCP 2026-07-28 `basic/authorization`). */
export const OFFLINE_ACCESS = 'offline_access';

/** A rule given as a function of the caller and the request. */
export type RuleFunction = (auth: AuthInfo, message: JsonRpcMessage) => readonly string[];

/**
 * A rule ready to apply: static scopes (frozen, deduplicated) with an optional condition, or a function. `path` is
 * its full path for errors (`policy.tools.refund`), `rule` its path within the policies in force, as decisions
 * report it (`tools.refund`, `tools.*`, `servers.notes.tools.add`). `templateKey` is the URI template of a
 * resource rule keyed by one (what `mcp.params` of its condition is captured with).
 */
export type CompiledRule =
  | { readonly path: string; readonly rule: string; readonly scopes: readonly string[]; readonly condition?: CompiledCondition; readonly templateKey?: string; readonly evaluate?: undefined }
  | { readonly path: string; readonly rule: string; readonly scopes?: undefined; readonly condition?: undefined; readonly templateKey?: undefined; readonly evaluate: RuleFunction };

/** The rules of one part of the policy (`methods`, `tools`, `prompts` or `resources`). */
export interface RuleTable {
  /** The rule for a name or URI: its entry, else `*`, else none. Non-strings get `*`. */
  lookup(key: unknown): CompiledRule | undefined;
  /** Every rule, in declaration order. */
  readonly all: readonly CompiledRule[];
}

/** A policy read and validated: every part in the form evaluation uses. */
export interface PolicyRules {
  /** The definition it was read from, as given. */
  readonly definition: PolicyDefinition;
  /** `requiredScopes`: what every request needs (frozen). */
  readonly base: readonly string[];
  readonly methods: RuleTable;
  readonly tools: RuleTable;
  readonly prompts: RuleTable;
  readonly resources: RuleTable;
  /** The scope hierarchy: granted scopes and every scope they imply. */
  readonly expand: (granted: readonly string[]) => ReadonlySet<string>;
  /** `rateLimits.tools`, by tool name (`*` for the others). */
  readonly toolRateLimits: ReadonlyMap<string, RateLimit>;
  /** `scopesSupported`, or every scope a static rule names; never `offline_access` (frozen). */
  readonly scopesSupported: readonly string[];
}

/** How a list method's answer is filtered: its items, their key, and the call that uses an item. */
export interface ListSpec {
  readonly kind: 'tool' | 'prompt' | 'resource';
  readonly resultKey: string;
  readonly itemKey: string;
  readonly useMethod: string;
  readonly paramName: string;
}

export const LIST_SPECS: ReadonlyMap<string, ListSpec> = new Map<string, ListSpec>([
  ['tools/list', { kind: 'tool', resultKey: 'tools', itemKey: 'name', useMethod: 'tools/call', paramName: 'name' }],
  ['prompts/list', { kind: 'prompt', resultKey: 'prompts', itemKey: 'name', useMethod: 'prompts/get', paramName: 'name' }],
  ['resources/list', { kind: 'resource', resultKey: 'resources', itemKey: 'uri', useMethod: 'resources/read', paramName: 'uri' }],
  [
    'resources/templates/list',
    { kind: 'resource', resultKey: 'resourceTemplates', itemKey: 'uriTemplate', useMethod: 'resources/read', paramName: 'uri' },
  ],
]);

/** The four list methods whose results `CompiledPolicy.filterListResult` filters. */
export function isListMethod(method: string): boolean {
  return LIST_SPECS.has(method);
}

/** The result key of each list method's answer (`tools` for `tools/list`, …), in a fixed order. */
export const LIST_RESULT_KEYS: ReadonlyArray<readonly [resultKey: string, method: string]> = [...LIST_SPECS].map(([method, spec]) => [spec.resultKey, method] as const);

/** A value as error messages name it: `a string ("…")`, `an array`, `null`, `a number`, … */
export function describeValue(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'string') return `a string (${JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}...` : value)})`;
  if (typeof value === 'object') return 'an object';
  return typeof value === 'undefined' ? 'undefined' : `a ${typeof value}`;
}
