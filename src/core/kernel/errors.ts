import { JsonRpcErrorCode } from '../wire/jsonrpc.js';
import type { DecisionReason } from './decision.js';

/** OAuth 2.0 Bearer error codes (RFC 6750 §3.1). */
export type BearerErrorCode = 'invalid_request' | 'invalid_token' | 'insufficient_scope';

/**
 * Error codes a `WWW-Authenticate` challenge can carry: the RFC 6750 §3.1 codes, which the DPoP scheme shares,
 * and RFC 9449 §7.1 `invalid_dpop_proof`, which only a `DPoP` challenge carries.
 */
export type ChallengeErrorCode = BearerErrorCode | 'invalid_dpop_proof';

/**
 * Base class of every request failure the guard answers. It carries all that is needed to answer:
 * HTTP status, the JSON-RPC error code for the body, the RFC 6750 error for `WWW-Authenticate`,
 * and a stable {@link DecisionReason}. Messages never contain a token.
 */
export class GuardError extends Error {
  /** HTTP status to answer with. */
  readonly status: number;
  /** Stable reason code, for the decision hook. */
  readonly reason: DecisionReason;
  /** JSON-RPC error code for the response body. */
  readonly jsonRpcCode: number;
  /**
   * Error code for the `WWW-Authenticate` challenge (RFC 6750 §3.1, RFC 9449 §7.1); absent when no challenge is due
   * or for a bare 401.
   */
  readonly bearerError?: ChallengeErrorCode;
  /** Extra response headers (for example `Retry-After`, `Allow`). */
  readonly headers: Readonly<Record<string, string>>;

  constructor(
    message: string,
    init: {
      status: number;
      reason: DecisionReason;
      jsonRpcCode: number;
      bearerError?: ChallengeErrorCode;
      headers?: Record<string, string>;
      cause?: unknown;
      data?: Readonly<Record<string, unknown>>;
    },
  ) {
    super(message, init.cause === undefined ? undefined : { cause: init.cause });
    this.name = new.target.name;
    this.status = init.status;
    this.reason = init.reason;
    this.jsonRpcCode = init.jsonRpcCode;
    this.bearerError = init.bearerError;
    this.headers = init.headers ?? {};
    if (init.data !== undefined) this.data = init.data;
  }

  /** The JSON-RPC error's `data`, when the refusal has more to say than its message (and no challenge error). */
  readonly data?: Readonly<Record<string, unknown>>;
}

// The JSON-RPC codes of the guard's own refusals live in JsonRpcErrorCode, with the ranges they stay out of; these
// names are their public aliases.

/** JSON-RPC code in the body of 401 answers (no, invalid or wrongly presented token, or a bad DPoP proof). */
export const UNAUTHORIZED_JSONRPC_CODE = JsonRpcErrorCode.Unauthorized;
/** JSON-RPC code in the body of 403 `insufficient_scope` answers. */
export const FORBIDDEN_JSONRPC_CODE = JsonRpcErrorCode.Forbidden;
/** JSON-RPC code in the body of 503 answers (the authorization server cannot be reached). */
export const UNAVAILABLE_JSONRPC_CODE = JsonRpcErrorCode.Unavailable;

/**
 * The request carried no OAuth credentials (no `Authorization` header, an empty one, or another scheme such as
 * `Basic`): 401 with a bare challenge, no `error` (RFC 6750 §3.1), so that the client starts the OAuth flow.
 */
export class MissingTokenError extends GuardError {
  constructor(message = 'Authorization required: send an OAuth 2.1 access token as "Authorization: Bearer <token>"') {
    super(message, {
      status: 401,
      reason: 'token_missing',
      jsonRpcCode: UNAUTHORIZED_JSONRPC_CODE,
    });
  }
}

/** The credentials were malformed (RFC 6750 §3.1 `invalid_request`): 400. */
export class InvalidRequestError extends GuardError {
  constructor(message: string, reason: DecisionReason = 'token_malformed') {
    super(message, { status: 400, reason, jsonRpcCode: JsonRpcErrorCode.InvalidRequest, bearerError: 'invalid_request' });
  }
}

/** The token is expired, revoked, malformed or not meant for this server (RFC 6750 §3.1 `invalid_token`): 401. */
export class InvalidTokenError extends GuardError {
  constructor(message: string, reason: DecisionReason = 'token_invalid', cause?: unknown) {
    super(message, {
      status: 401,
      reason,
      jsonRpcCode: UNAUTHORIZED_JSONRPC_CODE,
      bearerError: 'invalid_token',
      cause,
    });
  }
}

/**
 * A DPoP proof (RFC 9449 §4) is missing, invalid, or already used, for a request with the `DPoP` scheme: 401 with
 * `error="invalid_dpop_proof"` in the `DPoP` challenge (RFC 9449 §7.1). A token not bound to the proof's key is an
 * {@link InvalidTokenError} instead, as RFC 9449 §7.1 says.
 */
export class InvalidDpopProofError extends GuardError {
  constructor(message: string, reason: DecisionReason = 'dpop_proof_invalid', cause?: unknown) {
    super(message, {
      status: 401,
      reason,
      jsonRpcCode: UNAUTHORIZED_JSONRPC_CODE,
      bearerError: 'invalid_dpop_proof',
      cause,
    });
  }
}

/**
 * The token lacks scope for the operation (RFC 6750 §3.1 `insufficient_scope`): 403. `scopes` is what the
 * challenge's `scope` names: every scope the operation needs plus those already granted (MCP 2025-11-25
 * step-up; older clients replace their scope with the challenged one, newer ones take the union).
 */
export class InsufficientScopeError extends GuardError {
  /** Scopes the operation needs. */
  readonly requiredScopes: readonly string[];
  /** Scopes to name in the challenge: required ∪ granted, in a stable order. */
  readonly challengeScopes: readonly string[];
  /** The policy rule that decided (see `DecisionEvent.rule`), when known. */
  readonly rule?: string;
  /** The server the refused request was for, with several behind one endpoint (see `DecisionEvent.server`). */
  readonly server?: string;
  constructor(message: string, requiredScopes: readonly string[], grantedScopes: readonly string[], rule?: string, server?: string) {
    super(message, {
      status: 403,
      reason: 'scope_insufficient',
      jsonRpcCode: FORBIDDEN_JSONRPC_CODE,
      bearerError: 'insufficient_scope',
    });
    this.requiredScopes = [...requiredScopes];
    const union = new Set<string>(requiredScopes);
    for (const s of grantedScopes) union.add(s);
    this.challengeScopes = [...union];
    if (rule !== undefined) this.rule = rule;
    if (server !== undefined) this.server = server;
  }
}

/** The `_meta` key of an authorization denial envelope (MCP SEP-2643, structured authorization denials). */
export const AUTHORIZATION_DENIAL_KEY = 'io.modelcontextprotocol/authorization';

/**
 * A policy condition (`when`) refused the request: 403 without a challenge, since no token with more scopes could
 * lift it and a step-up would only loop. Reason `condition_denied` when the condition was false, `condition_error`
 * when it could not be evaluated, or when a rule function threw or returned no array of scopes. The JSON-RPC
 * error's `data` names the rule (`rule`, our own field) and carries the SEP-2643 authorization denial envelope under
 * its key: `reason: insufficient_authorization` and `remediation: undisclosed` (the client must not retry unchanged
 * nor conclude that no remediation exists), with no hints (the SEP forbids them with `undisclosed`). The SEP puts
 * the envelope in a result's `_meta`; a 403 error carries it in `data`. The condition's source is kept for logs,
 * never sent.
 */
export class ConditionDeniedError extends GuardError {
  /** The rule whose condition refused, by its path in the policy (`tools.payments__refund`). */
  readonly rule: string;
  /** The condition's CEL source; absent when a rule function failed (then the reason is `condition_error`). */
  readonly condition?: string;
  /** The server the refused request was for, with several behind one endpoint (see `DecisionEvent.server`). */
  readonly server?: string;
  constructor(message: string, rule: string, condition: string | undefined, failed: boolean, server?: string) {
    super(message, {
      status: 403,
      reason: failed ? 'condition_error' : 'condition_denied',
      jsonRpcCode: FORBIDDEN_JSONRPC_CODE,
      data: { rule, [AUTHORIZATION_DENIAL_KEY]: { reason: 'insufficient_authorization', remediation: 'undisclosed' } },
    });
    this.rule = rule;
    if (condition !== undefined) this.condition = condition;
    if (server !== undefined) this.server = server;
  }
}

/**
 * The authorization server (discovery, JWKS or introspection) could not be reached or answered badly.
 * Not the client's fault: 503 with `Retry-After`, never 401 and never allow.
 */
export class AuthorizationServerUnavailableError extends GuardError {
  constructor(message: string, retryAfterSeconds = 5, cause?: unknown) {
    super(message, {
      status: 503,
      reason: 'authorization_server_unavailable',
      jsonRpcCode: UNAVAILABLE_JSONRPC_CODE,
      headers: { 'Retry-After': String(retryAfterSeconds) },
      cause,
    });
  }
}

/** JSON-RPC error code of a 429 answer (over a rate limit), after the pattern of the 401, 403 and 503 codes. */
export const RATE_LIMITED_JSONRPC_CODE = JsonRpcErrorCode.RateLimited;

/** Over a rate limit: 429 with `Retry-After` (whole seconds until the window ends, at least 1). */
export class RateLimitedError extends GuardError {
  /** Milliseconds until the refusing window ends. */
  readonly retryAfterMs: number;
  constructor(message: string, retryAfterMs: number) {
    super(message, {
      status: 429,
      reason: 'rate_limited',
      jsonRpcCode: RATE_LIMITED_JSONRPC_CODE,
      headers: { 'Retry-After': String(Math.max(1, Math.ceil(retryAfterMs / 1000))) },
    });
    this.retryAfterMs = retryAfterMs;
  }
}

/**
 * A transport-level refusal (bad JSON, bad JSON-RPC, too large, wrong origin, header mismatch, 405…), or a target the
 * endpoint does not expose or hides (answered as unknown).
 */
export class RequestRejectedError extends GuardError {
  /** The server the refused request was for, with several behind one endpoint, when known (see `DecisionEvent.server`). */
  readonly server?: string;
  constructor(
    message: string,
    init: { status: number; reason: DecisionReason; jsonRpcCode: number; headers?: Record<string, string>; server?: string },
  ) {
    const { server, ...rest } = init;
    super(message, rest);
    if (server !== undefined) this.server = server;
  }
}

/** One bad setting: which one, and what is wrong with it and how to fix it. */
export interface ConfigurationProblem {
  /** The option or environment variable at fault, e.g. `MCP_AUTH_ISSUER` or `options.resource`. */
  readonly setting: string;
  /** What is wrong and how to fix it, without the setting's name, e.g. `is required: set it to …`. */
  readonly detail: string;
}

/**
 * Misconfiguration found at start-up. The message names the setting and says how to fix it. When several
 * settings are wrong at once (see {@link ConfigurationError.of}), the message lists each on a line of its own
 * and {@link ConfigurationError.problems} holds them all, for programs.
 *
 * @example
 * try {
 *   loadOptionsFromEnv();
 * } catch (error) {
 *   if (error instanceof ConfigurationError) for (const p of error.problems) console.error(`${p.setting}: ${p.detail}`);
 * }
 */
export class ConfigurationError extends Error {
  /** The option or environment variable at fault, e.g. `MCP_AUTH_ISSUER` or `options.resource`; the first one when several are. */
  readonly setting: string;
  /** Every problem, in the order found; just this error's own when it is about one setting. */
  readonly problems: readonly ConfigurationProblem[];
  constructor(setting: string, message: string) {
    super(`${setting}: ${message}`);
    this.name = 'ConfigurationError';
    this.setting = setting;
    this.problems = Object.freeze([Object.freeze({ setting, detail: message })]);
  }

  /**
   * One error for every problem in `problems`: with one, the same error as `new ConfigurationError(setting, detail)`;
   * with several, a message that counts them and lists each as `  setting: detail` on a line of its own.
   *
   * @throws RangeError when `problems` is empty.
   */
  static of(problems: readonly ConfigurationProblem[]): ConfigurationError {
    const first = problems[0];
    if (first === undefined) throw new RangeError('ConfigurationError.of needs at least one problem');
    const error = new ConfigurationError(first.setting, first.detail);
    if (problems.length === 1) return error;
    // One line per problem, whatever line breaks a detail has, so that each reads on its own.
    const lines = problems.map((p) => `  ${p.setting}: ${p.detail.replace(/\s*\n\s*/g, ' ')}`);
    error.message = `${problems.length} settings need fixing:\n${lines.join('\n')}`;
    (error as { problems: readonly ConfigurationProblem[] }).problems = Object.freeze(problems.map((p) => Object.freeze({ setting: p.setting, detail: p.detail })));
    return error;
  }
}
