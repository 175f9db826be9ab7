import type { AuthInfo } from '../kernel/auth-info.js';
import type { JsonRpcMessage } from '../wire/jsonrpc.js';

/**
 * A scope rule: the scopes required (all of them), the scopes and a condition ({@link ConditionalRule}), or a
 * function computing the scopes from the caller and the request. An empty array means "nothing beyond the base
 * scopes".
 */
export type ScopeRule = readonly string[] | ConditionalRule | ((auth: AuthInfo, message: JsonRpcMessage) => readonly string[]);

/**
 * A rule with a condition: the request needs `scopes` (default none) and `when` must hold. `when` is a CEL
 * expression over `claims` (the verified token's claims), `scopes` (the granted scopes), `mcp` (`method`, `name`,
 * `arguments`, `uri`, `params`) and `server`; see the policy guide. A condition that is false, or cannot be
 * evaluated, refuses the request with 403 and no scope challenge (a new token with more scopes cannot help).
 *
 * @example
 * { tools: { payments__refund: { scopes: ['payments'], when: '"finance" in claims.groups' } } }
 */
export interface ConditionalRule {
  /** Scopes required, as in a list rule. Default `[]`. */
  readonly scopes?: readonly string[];
  /** The condition, a CEL expression that must evaluate to `true`. Absent: none (the rule is its scopes). */
  readonly when?: string;
}

/**
 * Per-name rules (tools, prompts or resources). Keys are names (for resources: a URI or an RFC 6570
 * URI template); `*` is the default for names not listed. A named entry replaces the default.
 * Names are data: `constructor`, `__proto__` and `toString` are ordinary names here.
 */
export type NamedScopeRules = Readonly<Record<string, ScopeRule>>;

/**
 * The authorization policy. The JSON policy file (`MCP_AUTH_POLICY`) has the same shape, without functions.
 */
export interface PolicyDefinition {
  /** Scopes advertised in metadata `scopes_supported` (RFC 9728 §2). `offline_access` is never advertised. */
  scopesSupported?: readonly string[];
  /** Scopes every request needs, `initialize` included. Also the scope the bare 401 challenge asks for. Default `[]`. */
  requiredScopes?: readonly string[];
  /** Scopes per JSON-RPC method, e.g. `{"tools/call": ["mcp:tools"]}`. Added to the base scopes. */
  methods?: NamedScopeRules;
  /** Scopes per tool name (for `tools/call` and `tools/list` filtering). */
  tools?: NamedScopeRules;
  /** Scopes per prompt name (for `prompts/get` and `prompts/list` filtering). */
  prompts?: NamedScopeRules;
  /** Scopes per resource URI or URI template (for `resources/read`, `resources/list`, `resources/templates/list`). */
  resources?: NamedScopeRules;
  /**
   * Scope hierarchy: each key implies the listed scopes, transitively.
   * E.g. `{"notes:admin": ["notes:write"], "notes:write": ["notes:read"]}`.
   */
  scopeHierarchy?: Readonly<Record<string, readonly string[]>>;
  /** Rate limits beyond the caller-wide one (`rateLimit`, `MCP_AUTH_RATE_LIMIT`); see {@link RateLimitsDefinition}. */
  rateLimits?: RateLimitsDefinition;
}

/**
 * Per-tool rate limits, e.g. `{"tools": {"notes_add": "10/min"}}`: `tools/call` of that tool, per caller
 * (issuer, subject, client), on top of the caller-wide limit. Rates are `<count>/<unit>` with `s`, `min` or `h`.
 * `"*"` is the limit of every tool not named, each tool counted apart: `{"tools": {"*": "60/min", "notes_add": "10/min"}}`.
 */
export interface RateLimitsDefinition {
  tools?: Readonly<Record<string, string>>;
}
