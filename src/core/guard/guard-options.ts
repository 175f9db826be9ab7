import type { AuditOptions } from '../audit/audit-options.js';
import type { DecisionHook } from '../kernel/decision.js';
import type { JsonRpcMessage } from '../wire/jsonrpc.js';
import type { GuardLogOptions } from '../kernel/log-options.js';
import type { ListsMode } from '../policy/lists-mode.js';
import type { CompiledPolicy } from '../policy/compile-policy.js';
import type { PolicyDefinition } from '../policy/policy-definition.js';
import type { RateLimiter } from '../limits/rate-limiter.js';
import type { ReplayCache } from '../limits/replay-cache.js';
import type { DpopMode } from '../token/token-binding.js';
import type { TokenVerifierOptions } from '../token/token-verifier.js';

/**
 * Everything the guard needs except the MCP handler (which belongs to the adapter in use).
 * `loadOptionsFromEnv()` returns this; spread it into `mcpOAuthGuard({ ...options, handler })`.
 */
export interface GuardOptions extends Omit<TokenVerifierOptions, 'resource'>, GuardLogOptions {
  /**
   * The public URL of the MCP endpoint, e.g. `https://mcp.example.com/mcp`. It is canonicalized once
   * (RFC 8707 §2: lowercase scheme and host, no fragment, no trailing slash) and that one value is the
   * metadata `resource`, the base of the metadata URL and the required token audience. Its path is the
   * path the endpoint is served at.
   */
  resource: string;
  /**
   * Authorization servers listed in metadata (RFC 9728 §2 `authorization_servers`), by issuer identifier: where
   * clients are sent for tokens. Each must be one of the trusted issuers (`issuer` or `issuers`), spelt exactly
   * the same, or start-up fails with a `ConfigurationError`: a client sent to any other server would get tokens
   * the guard refuses (an issuer alias, such as Entra's v1 and v2 issuers, is trusted only when listed as an
   * issuer too). A subset is allowed, e.g. to keep accepting an old issuer's tokens during a migration without
   * sending new clients there. Default: every trusted issuer.
   *
   * @example
   * { issuers: ['https://login.example.com/v2', 'https://old-login.example.com'], authorizationServers: ['https://login.example.com/v2'] }
   */
  authorizationServers?: readonly string[];
  /**
   * Scope policy: a definition (see `PolicyDefinition`), compiled and checked at creation, or a policy compiled
   * already by `compilePolicy` or `compilePolicySet` (the policy of an endpoint serving several servers), used as
   * it is. Default: no scopes required.
   */
  policy?: PolicyDefinition | CompiledPolicy;
  /**
   * What lists show a caller (see {@link ListsMode}): `filtered`, only the tools, prompts, resources and templates
   * the token could use; `all`, everything, with each call still authorized (403 `insufficient_scope`, the MCP
   * step-up), for clients that refuse to call what they have not seen listed. Discovery then leaks names, never
   * access. Default `filtered`.
   */
  lists?: ListsMode;
  /**
   * Origins allowed to call the endpoint from a browser, besides the resource's own origin; `*` allows
   * any. A request whose `Origin` is present and not allowed gets 403 (MCP Streamable HTTP, DNS
   * rebinding protection). Default `[]`.
   */
  allowedOrigins?: readonly string[];
  /**
   * Scopes the bare 401 challenge asks for (RFC 6750 §3 `scope`; MCP 2025-11-25 scope selection): what a
   * client should request first. Default: `policy.requiredScopes`; when that is empty the challenge has
   * no `scope` and clients fall back to metadata `scopes_supported`.
   */
  challengeScopes?: readonly string[];
  /** Metadata `resource_name` (RFC 9728 §2). */
  resourceName?: string;
  /** Metadata `resource_documentation` URL (RFC 9728 §2). */
  resourceDocumentation?: string;
  /** Largest accepted POST body, in bytes; larger gets 413. Default 1 048 576 (1 MiB). */
  maxBodyBytes?: number;
  /**
   * Longest time to receive a POST body, in milliseconds, counted from the end of the headers to the last byte
   * (the total, not the gap between bytes). Past it: 408, `Connection: close`, and the connection is closed, so
   * a client sending a byte now and then cannot hold a connection open. Default 10 000.
   */
  bodyTimeoutMs?: number;
  /** Deepest accepted JSON nesting of a message; deeper gets 400 (-32600). Default 64. */
  maxJsonDepth?: number;
  /** `Cache-Control: max-age` of the metadata document, in seconds. Default 3600. */
  metadataMaxAgeSeconds?: number;
  /**
   * DPoP, sender-constrained tokens (RFC 9449, MCP SEP-1932): `off`, `allow` or `require`; see {@link DpopMode}.
   * With `allow`, Bearer tokens work as before and DPoP-bound ones (`cnf.jkt`) need `Authorization: DPoP` and a
   * proof. Default `allow`.
   */
  dpop?: DpopMode;
  /**
   * Where the `jti`s of accepted DPoP proofs are remembered, to refuse a replay (RFC 9449 §11.1). Give a shared
   * store to catch replays across a fleet. Default: in memory, per process (`createMemoryReplayCache()`: 100 000
   * `jti`s, of which each caller may hold 1 %; past its share a caller's new proofs get 429, see
   * `ReplayShareExceededError`).
   */
  dpopReplayCache?: ReplayCache;
  /**
   * Requests allowed per caller (issuer, subject and client; tokens with neither subject nor client share one
   * count per issuer), e.g. `120/min`, `10/s`, `5000/h`. Over it: 429 with `Retry-After` and a JSON-RPC error.
   * Counted for every POST and GET to the endpoint, after the token and the policy and before the handler
   * (DELETE, which ends a session, is never refused). Per-tool limits are the policy's `rateLimits`.
   * Default: no limit.
   */
  rateLimit?: string;
  /**
   * Where rate-limit counts are kept. Give a shared store (`createRedisStores` from `mcp-oauth-guard/redis`) so
   * that a fleet shares its limits. Default: in memory, per process (`createMemoryRateLimiter()`), created only
   * when a limit is set.
   */
  rateLimiter?: RateLimiter;
  /**
   * Called with every allow or deny decision (audit, metrics), and a view of the request without its credentials
   * (see {@link DecisionHook}): never given the token nor the DPoP proof. Default none.
   */
  onDecision?: DecisionHook;
  /**
   * The audit trail (`MCP_AUTH_AUDIT`): one JSON record per request that reaches a decision (who, what, the decision
   * and its reason, the status and duration of the answer), written when the answer ends, off the request path,
   * to stdout, a file rotated by size, OpenTelemetry log records or a sink of yours; never a token. See
   * {@link AuditOptions} and docs/audit.md. Flush it on shutdown with the pipeline's (or router's) `close()`.
   * Default: off.
   *
   * @example
   * { audit: { to: '/var/log/mcp/audit.jsonl' } }
   */
  audit?: AuditOptions | false;
  /**
   * Called with the number of audit records dropped, each time some are: the buffer was full (the destination could
   * not keep up) or a write failed. The metrics' hooks set it (`mcp_guard_audit_dropped_total`). Must not throw.
   * Default none (a warning line is still written, at most once a minute).
   */
  onAuditDropped?: (records: number) => void;
  /**
   * Names a tool or prompt the endpoint hides whatever the policy says (the gateway's pinned tool definitions in
   * `enforce`), and which kind: a request naming it is answered as one naming a target that exists nowhere. It is
   * decided only by the rules such a name meets (the method's, `*`; never its own), then answered HTTP 200, JSON-RPC
   * -32602 `Unknown tool: …`; so no 403 of its own rule tells a caller that it exists or which rule guards it. The
   * decision is reported with reason `target_unknown`, or with the reason and server a {@link HiddenTarget} gives
   * (the client's answer is the same either way). Asked once per well-formed `tools/call`, `prompts/get` or
   * completion; must be cheap and must not throw. Default none.
   *
   * @example
   * { hiddenTarget: (message) => (isHidden(message) ? 'tool' : undefined) }
   */
  hiddenTarget?: (message: JsonRpcMessage) => 'tool' | 'prompt' | HiddenTarget | undefined;
}

/**
 * A target `hiddenTarget` hides, with what the decision hook, the request log and the audit trail report of its
 * refusal. None of it reaches the client, which is answered as for a name that exists nowhere.
 *
 * @example
 * { hiddenTarget: (message) => (isHidden(message) ? { kind: 'tool', reason: 'tool_pin_mismatch', server: 'notes' } : undefined) }
 */
export interface HiddenTarget {
  /** Which kind of target: the answer is `Unknown tool: …` or `Unknown prompt: …`. */
  readonly kind: 'tool' | 'prompt';
  /**
   * The reported reason of the refusal: `target_unknown` (the default), or `tool_pin_mismatch` for a tool whose
   * definition differs from its pin; any other value is reported as `target_unknown`.
   */
  readonly reason?: 'target_unknown' | 'tool_pin_mismatch';
  /** The server the target belongs to, with several behind one endpoint (see `DecisionEvent.server`). Default none. */
  readonly server?: string;
}
