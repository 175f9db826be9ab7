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
  | 'origin_forbidden'
  | 'authorization_server_unavailable'
  | 'request_invalid'
  | 'request_too_large'
  | 'request_timeout'
  | 'header_mismatch'
  | 'unsupported_protocol_version'
  | 'method_not_allowed'
  | 'method_not_found'
  | 'unsupported_media_type'
  | 'not_acceptable'
  // Over a rate limit (429); also counted by the metrics' mcp_guard_rate_limited_total.
  | 'rate_limited'
  // The shared rate limiter's store (Redis) is unreachable and MCP_AUTH_REDIS_FAIL is closed (503).
  | 'rate_limiter_unavailable';

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
}

/**
 * Receives every decision, with the adapter's request object when there is one (the `node:http` request
 * for the Express, `node:http` and gateway adapters), to find per-request state without a context store.
 * That request still carries the `Authorization` header: log fields of it, never the object itself.
 * Must not throw; errors are swallowed so auditing cannot break serving.
 */
export type DecisionHook = (event: DecisionEvent, request?: object) => void;
