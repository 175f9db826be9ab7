import { AuthorizationServerUnavailableError, RATE_LIMITED_JSONRPC_CODE, UNAVAILABLE_JSONRPC_CODE } from '../../../core/kernel/errors.js';
import { STORE_RETRY_AFTER_SECONDS } from '../../../core/kernel/store-unavailable.js';
import { printableOAuthErrorCode } from '../../../http/oauth-error-code.js';
import { CredentialStoreFullError, CredentialStoreUnavailableError } from '../../upstream-auth/upstream-credentials.js';
import { UpstreamTokenRefusedError } from '../../upstream-auth/upstream-token-client.js';
import type { UpstreamFailureReason } from '../upstream.js';
import { GATEWAY_SHUTDOWN_MESSAGE } from '../gateway-error.js';

/** Why an HTTP upstream exchange failed, and what the client is told when nothing was sent yet. */
export interface ExchangeFailure {
  readonly reason: UpstreamFailureReason;
  /** Status for the client when nothing was sent yet; 502 when absent. */
  readonly status?: 403 | 429 | 502 | 503 | 504;
  /** Text of the JSON-RPC error; never upstream error text. */
  readonly message?: string;
  /** Node's error code, for logs. */
  readonly code?: string;
  /** `Retry-After` for the client, in seconds. */
  readonly retryAfter?: string;
  /** JSON-RPC code of the error; `GATEWAY_JSONRPC_CODE` (-32603) when absent. */
  readonly jsonRpcCode?: number;
}

/** The failures with nothing of their own: one object each, shared by every exchange. */
export const FAILURES = {
  shutdown: { reason: 'gateway_shutdown', status: 503, message: GATEWAY_SHUTDOWN_MESSAGE },
  connectTimeout: { reason: 'upstream_connect_timeout', status: 504, message: 'Gateway timeout: could not connect to the upstream MCP server in time' },
  headersTimeout: { reason: 'upstream_timeout', status: 504, message: 'Gateway timeout: the upstream MCP server did not answer in time' },
  idleTimeout: { reason: 'upstream_idle_timeout' },
  refusedGateway: { reason: 'upstream_auth', status: 502, message: 'Bad gateway: the upstream MCP server refused the gateway' },
  tooLarge: { reason: 'upstream_too_large', status: 502, message: 'Bad gateway: the upstream response is too large' },
  grewTooLarge: { reason: 'upstream_too_large' },
  sessionConflict: { reason: 'upstream_session_conflict', status: 502, message: 'Bad gateway: the upstream MCP server issued a session id that is in use' },
  sealFailed: { reason: 'session_seal_failed', status: 502, message: 'Bad gateway: the session could not be sealed' },
} as const satisfies Record<string, ExchangeFailure>;

/** Text of a 502 with no failure of its own: the upstream closed the connection before answering. */
export const CLOSED_TEXT = 'Bad gateway: the upstream MCP server closed the connection';

/** The upstream could not be reached: 502, with Node's error code for logs. */
export function unreachable(code: string | undefined): ExchangeFailure {
  return { reason: 'upstream_unreachable', status: 502, message: 'Bad gateway: the upstream MCP server is unreachable', code };
}

/** The upstream's answer was cut off after it started. */
export function reset(code: string | undefined): ExchangeFailure {
  return { reason: 'upstream_reset', code };
}

/**
 * Why the gateway has no credentials for the upstream, for the caller: the authorization server refusing (to
 * exchange this caller's token, or to serve the gateway's client) is 403, as this caller cannot reach the
 * upstream; the server or the gateway's token store unreachable is 503 with `Retry-After` and the unavailable
 * JSON-RPC code (-31503), as the guard answers for its own stores. The token store full is 503 saying so; this
 * caller holding its share of it is 429 with `Retry-After` and the rate-limit code (-31429), as for DPoP proofs over
 * a caller's share. None carries the server's error text.
 */
export function credentialFailure(error: unknown): ExchangeFailure {
  if (error instanceof CredentialStoreFullError) return storeFull(error);
  if (error instanceof UpstreamTokenRefusedError) {
    return {
      reason: 'upstream_credentials_refused',
      status: 403,
      message: `Forbidden: the upstream MCP server's authorization server refused the gateway a token for this request (${printableOAuthErrorCode(error.error) ?? 'error not shown'})`,
    };
  }
  const retryAfter = error instanceof AuthorizationServerUnavailableError ? error.headers['Retry-After'] : undefined;
  return {
    reason: 'upstream_credentials_unavailable',
    status: 503,
    message:
      error instanceof CredentialStoreUnavailableError
        ? "Service unavailable: the gateway's token store could not be reached"
        : "Service unavailable: the upstream MCP server's authorization server could not be reached",
    retryAfter: retryAfter ?? String(STORE_RETRY_AFTER_SECONDS),
    jsonRpcCode: UNAVAILABLE_JSONRPC_CODE,
  };
}

/** The token store refused a new entry: full for everyone (503), or this caller's share used up (429). */
function storeFull(error: CredentialStoreFullError): ExchangeFailure {
  if (error.retryAfterMs !== undefined) {
    return {
      reason: 'upstream_credentials_unavailable',
      status: 429,
      message: 'Too many requests: this user holds its share of pending connect links and sign-ins at the gateway; retry later',
      retryAfter: String(Math.max(1, Math.ceil(error.retryAfterMs / 1000))),
      jsonRpcCode: RATE_LIMITED_JSONRPC_CODE,
    };
  }
  return {
    reason: 'upstream_credentials_unavailable',
    status: 503,
    message: "Service unavailable: the gateway's token store is full and cannot take a new connect link right now",
    retryAfter: String(STORE_RETRY_AFTER_SECONDS),
    jsonRpcCode: UNAVAILABLE_JSONRPC_CODE,
  };
}
