/**
 * Stable reason codes reported with every allow or deny decision. Switch on these, never on messages.
 */
export type DecisionReason =
  | 'allowed'
  | 'token_missing'
  | 'token_malformed'
  | 'token_in_query'
  | 'token_multiple'
  | 'token_invalid'
  | 'token_expired'
  | 'token_not_yet_valid'
  | 'token_signature'
  | 'token_algorithm'
  | 'token_type'
  | 'token_issuer'
  | 'token_audience'
  | 'token_claims'
  | 'token_inactive'
  | 'token_binding'
  | 'dpop_proof_missing'
  | 'dpop_proof_malformed'
  | 'dpop_proof_invalid'
  | 'dpop_proof_replayed'
  | 'dpop_replay_cache_unavailable'
  | 'scope_insufficient'
  // A policy condition (`when`) was false (403, no scope challenge: more scopes cannot help).
  | 'condition_denied'
  // A policy condition could not be evaluated (an error, a non-boolean result, the cost limit): denied, 403.
  | 'condition_error'
  | 'origin_forbidden'
  | 'authorization_server_unavailable'
  | 'request_invalid'
  | 'request_too_large'
  | 'request_timeout'
  | 'header_mismatch'
  | 'unsupported_protocol_version'
  | 'method_not_allowed'
  | 'method_not_found'
  // A tool or prompt the endpoint does not expose: a server set's name of no server, or a tool its server's
  // `tools` selection leaves out. Answered as an unknown tool (HTTP 200, JSON-RPC -32602), never with a 403:
  // selection is not authorization, and no scope would help.
  | 'target_unknown'
  // A tool the gateway's pinned tool definitions hide (`MCP_AUTH_PINS=enforce`: its listed definition differs from
  // its pin, or it has none), refused before any server is asked. The client is answered exactly as for `target_unknown`
  // (HTTP 200, JSON-RPC -32602 `Unknown tool: …`), so that it learns nothing; only the audit trail, the request log
  // and the decision hook tell the two apart. Named after the metric mcp_guard_tool_pin_mismatches_total.
  | 'tool_pin_mismatch'
  | 'unsupported_media_type'
  | 'not_acceptable'
  // Over a rate limit (429); also counted by the metrics' mcp_guard_rate_limited_total.
  | 'rate_limited'
  // The shared rate limiter's store (Redis) is unreachable and MCP_AUTH_REDIS_FAIL is closed (503).
  | 'rate_limiter_unavailable'
  // The gateway (connected accounts): the upstream needs the user's own authorization, which they have not given yet
  // (or which expired or lacks a scope). The answer carries a link to connect; the upstream was not called.
  | 'connection_required';

/** One authorization decision, reported to `onDecision` for audit logs and metrics. Never contains the token. */
export interface DecisionEvent {
  decision: 'allow' | 'deny';
  reason: DecisionReason;
  /** HTTP status sent (or about to be sent) for this decision. */
  status: number;
  /** Token subject (`sub`), when a token was verified. */
  subject?: string;
  /** OAuth client id, when a token was verified. */
  clientId?: string;
  /** JSON-RPC method, when the body was parsed. */
  method?: string;
  /** Tool, prompt or resource named by the request (`params.name` / `params.uri`), when any. */
  name?: string;
  /** Scopes the operation required (after policy evaluation), on scope decisions. */
  requiredScopes?: string[];
  /** Scopes the token carried. */
  grantedScopes?: string[];
  /** HTTP method of the request. */
  httpMethod: string;
  /**
   * On a deny, what the client was told (the `error_description`): for token refusals, what was expected and
   * what the token carried (issuer, audience), never the token. At most 512 characters.
   */
  detail?: string;
  /**
   * The policy rule that decided, by its path in the policy (e.g. `tools.payments__refund`), when one did; absent
   * when no rule was involved (a token refusal) or the policy cannot say.
   */
  rule?: string;
  /** The condition (CEL source) of that rule that decided, when the rule had one. At most 512 characters. */
  condition?: string;
  /**
   * With several servers behind one endpoint (the gateway's `servers`), the server the request is for, by name,
   * when it targets one (its tool, prompt or resource), on an allow and on a deny alike (a tool the pins hide,
   * `tool_pin_mismatch`, too); absent with one policy, and for a request of no known server or of several (a merged
   * list, `initialize`, a tool the endpoint does not expose: `target_unknown`).
   */
  server?: string;
}

/**
 * The request a decision was about, as the decision hook sees it: enough to log it and to join it with the
 * operator's own per-request state, nothing that authenticates. Built from an allow-list, so no credential
 * reaches the hook whatever header it came in (`Authorization`, `DPoP`, `Proxy-Authorization`, `Cookie`, an
 * API key header, `Mcp-Session-Id`, the query string): see {@link DECISION_REQUEST_HEADERS}. Frozen; one per
 * request (the `node:http` adapters give the same object to every caller of `decisionRequestOf(req)`).
 */
export interface DecisionRequest {
  /** HTTP method. */
  readonly httpMethod: string;
  /**
   * Path of the request target, without the query string (where a misbehaving client may put a token); at most
   * 1024 characters.
   */
  readonly path: string;
  /** Address of the peer: behind a proxy, the proxy's (its `X-Forwarded-For` is in `headers`). */
  readonly clientAddress?: string;
  /**
   * The request's headers named in {@link DECISION_REQUEST_HEADERS} that it carried, by lowercase name; a
   * repeated header joined with ", "; each value at most 256 characters (longer ones are cut and end in "…").
   */
  readonly headers: Readonly<Record<string, string>>;
}

/**
 * Headers a {@link DecisionRequest} may carry: the MCP headers that name the operation (not `Mcp-Param-*`, which
 * mirror tool arguments, nor `Mcp-Session-Id`, which lets whoever holds it resume a session) and the usual
 * correlation and client headers. Nothing else, credentials above all, is ever copied.
 */
export const DECISION_REQUEST_HEADERS: readonly string[] = Object.freeze([
  'mcp-protocol-version',
  'mcp-method',
  'mcp-name',
  'origin',
  'user-agent',
  'x-request-id',
  'x-forwarded-for',
  'traceparent',
]);

/**
 * `value`, cut to `max` characters (ending in "…" when cut). Client-chosen strings reach audit logs: one request
 * must not write a megabyte-long line.
 */
export function boundedText(value: string, max = 256): string {
  return value.length > max ? `${value.slice(0, max)}…` : value;
}

/**
 * Receives every decision, with the request it was about as a {@link DecisionRequest} when an adapter served it
 * (never the adapter's own request object, which carries the credentials). To join the event with per-request
 * state without a context store, key that state by `decisionRequestOf(req)` (from `mcp-oauth-guard`): the hook
 * gets the same object. Must not throw; errors are swallowed so auditing cannot break serving.
 *
 * @example
 * const onDecision: DecisionHook = (event, request) =>
 *   console.log(JSON.stringify({ ...event, path: request?.path, requestId: request?.headers['x-request-id'] }));
 */
export type DecisionHook = (event: DecisionEvent, request?: DecisionRequest) => void;
