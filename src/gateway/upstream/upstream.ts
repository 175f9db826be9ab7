/**
 * What an upstream is, for every kind the gateway forwards to (an HTTP MCP server, a stdio MCP server it
 * starts): the interface they implement, how they fail, the JSON-RPC codes of the gateway's own answers, and
 * their defaults. The server, the configuration, the logs and the metrics depend on this module, never on one
 * implementation.
 *
 * Built so that several named upstreams can later sit behind one endpoint: each upstream has a
 * {@link Upstream.name}, forwarding one request ({@link UpstreamForwarding}) is separate from the lifecycle of
 * the upstream ({@link UpstreamLifecycle}), and sessions are per upstream (each upstream keeps its own, see
 * {@link UpstreamLifecycle.sessions}).
 */
import type { DecisionReason } from '../../core/kernel/decision.js';
import { ConfigurationError } from '../../core/kernel/errors.js';
import { JsonRpcErrorCode } from '../../core/wire/jsonrpc.js';
import type { SessionRefusal } from '../../core/session/session-gate.js';
import type { GuardedRequest, McpHttpHandler } from '../../http/http-handler.js';

export { DEFAULT_MAX_SESSIONS, DEFAULT_MAX_SESSIONS_PER_CALLER, DEFAULT_SESSION_IDLE_TIMEOUT_MS } from '../../core/session/session-defaults.js';
export { SESSION_NOT_FOUND_JSONRPC_CODE, type SessionRefusal } from '../../core/session/session-gate.js';
export type { SessionRefusalReason } from '../../core/session/session-registry.js';
export type { SealedSessionRefusalReason } from '../../core/session/session-seal.js';

/** Why an upstream exchange failed; a stable code for logs. */
export type UpstreamFailureReason =
  | 'upstream_unreachable'
  | 'upstream_connect_timeout'
  | 'upstream_timeout'
  | 'upstream_idle_timeout'
  | 'upstream_reset'
  | 'upstream_auth'
  // The upstream's authorization server refused the gateway a token (403), or could not be reached (503).
  | 'upstream_credentials_refused'
  | 'upstream_credentials_unavailable'
  | 'upstream_too_large'
  | 'upstream_session_conflict'
  // A new session's id could not be sealed (MCP_AUTH_SESSION_SECRET).
  | 'session_seal_failed'
  // A list answer the guard could not filter (not JSON, compressed, or too large to hold), so it was replaced by
  // a JSON-RPC error (502 when nothing was sent yet) rather than passed on unfiltered.
  | 'upstream_unfilterable'
  | 'gateway_shutdown'
  // A stdio upstream's process: exited, could not be started, wrote an oversized line, was stopped, or a
  // bound on processes refused a new one (429).
  | 'upstream_exited'
  | 'upstream_spawn_failed'
  | 'upstream_line_too_large'
  | 'upstream_stopped'
  | 'upstream_busy';

/** A failed upstream exchange, as reported to {@link UpstreamHooks.onUpstreamError}. */
export interface UpstreamFailure {
  reason: UpstreamFailureReason;
  /** HTTP status sent to the client, or undefined when the response had already started. */
  status?: number;
  /** Node's error code (e.g. `ECONNREFUSED`), when there was one. */
  code?: string;
}

/** One upstream exchange, as reported to {@link UpstreamHooks.onExchangeEnd}. */
export interface UpstreamExchange {
  /** HTTP method sent upstream: POST, GET (a stream) or DELETE. */
  httpMethod: string;
  /** From sending the request to the end of the answer (of the stream, for event streams), in milliseconds. */
  durationMs: number;
  /** The upstream's HTTP status, when it answered. */
  status?: number;
  /**
   * `complete`: the upstream's answer was passed on whole; `client_closed`: the client went away first; else why
   * the exchange failed.
   */
  outcome: 'complete' | 'client_closed' | UpstreamFailureReason;
}

/** What an upstream tells the gateway about its exchanges, for logs and metrics. Every hook is optional. */
export interface UpstreamHooks {
  /**
   * Called when the upstream exchange fails (before or after the response started), for logs. Never given
   * upstream error text beyond Node's error code.
   */
  onUpstreamError?: (req: GuardedRequest, failure: UpstreamFailure) => void;
  /** Called when a request naming a session is refused with 404, for logs. Errors it throws are ignored. */
  onSessionRefused?: (req: GuardedRequest, refusal: SessionRefusal) => void;
  /**
   * Called when the gateway answers an allowed request itself instead of forwarding it (connected accounts: the
   * user must connect first), with the stable reason, for logs and metrics to record a `deny`.
   */
  onAnsweredInstead?: (req: GuardedRequest, reason: DecisionReason) => void;
  /**
   * Called when an upstream exchange ends, whatever the outcome, for metrics. Called on the request's path: keep
   * it cheap. Errors it throws are ignored. Default none.
   */
  onExchangeEnd?: (req: GuardedRequest, exchange: UpstreamExchange) => void;
}

/**
 * Forwarding one request: the request pipeline hands each authorized request (`req.auth` is the verified caller,
 * `req.body` the parsed POST message) to {@link McpHttpHandler.handle}, which forwards it for that caller and the
 * session it names, and writes the upstream's answer. A session belongs to one upstream and one caller: a request
 * naming another's, or one the upstream does not hold, is refused by the session gate (404, -32001) and not
 * forwarded.
 */
export type UpstreamForwarding = McpHttpHandler;

/** The lifecycle of an upstream, apart from any one request: what a graceful shutdown and the gauges need. */
export interface UpstreamLifecycle {
  /** Upstream exchanges in progress. */
  readonly inFlight: number;
  /** Upstream sessions remembered (bound to their callers), for the sessions gauge; absent when not tracked. */
  readonly sessions?: number;
  /**
   * Ends exchanges in progress: `'get'` ends only standalone GET streams (notification channels, which
   * never finish by themselves), `'all'` ends everything. Event streams are ended cleanly (the client may
   * resume with `Last-Event-ID`); other bodies are cut off.
   */
  endStreams(which: 'get' | 'all'): void;
  /** Ends everything and releases what the upstream holds (pooled connections, processes). */
  close(): void | Promise<void>;
}

/**
 * An upstream as the gateway's server uses it: forwarding ({@link UpstreamForwarding}) and lifecycle
 * ({@link UpstreamLifecycle}). Implemented by the HTTP upstream (`createUpstreamProxy`) and the stdio upstream
 * (`createStdioUpstream`).
 *
 * @example
 * const upstream: UpstreamProxy = createUpstreamProxy({ upstream: 'http://127.0.0.1:3001/mcp' });
 * // On shutdown: end the notification streams, let the rest finish, then close.
 * upstream.endStreams('get');
 * while (upstream.inFlight > 0) await delay(25);
 * upstream.close();
 */
export interface UpstreamProxy extends UpstreamForwarding, UpstreamLifecycle {
  /** Ends everything and releases what the upstream holds; returns once it is done (an HTTP upstream's pool is destroyed at once). */
  close(): void;
}

/** How the gateway reaches an upstream: over Streamable HTTP, or over the stdio of a process it starts. */
export type UpstreamTransport = 'http' | 'stdio';

/**
 * An upstream with its name: what one entry behind the gateway's endpoint is. Today there is one, named
 * `DEFAULT_UPSTREAM_NAME` (`default`); several named upstreams can share the endpoint, each keeping its own sessions
 * and connections, with a name for logs, metrics and routing.
 *
 * @example
 * const upstreams = new Map<string, Upstream>([['notes', createUpstreamProxy({ name: 'notes', upstream: notesUrl })]]);
 * for (const upstream of upstreams.values()) upstream.endStreams('get');
 */
export interface Upstream extends UpstreamForwarding, UpstreamLifecycle {
  /** The upstream's name behind the endpoint (checked by `checkUpstreamName`). */
  readonly name: string;
  /** How the gateway reaches it. */
  readonly transport: UpstreamTransport;
}

/** The name of the one upstream a gateway configured by `MCP_AUTH_UPSTREAM` or `MCP_AUTH_UPSTREAM_COMMAND` has. */
export const DEFAULT_UPSTREAM_NAME = 'default';

// Letters, digits, `-` and `_`, starting with a letter, at most 64: a name that can prefix a tool's name
// (`<upstream>__<tool>`) and a metric label, with no `__` of its own and no `_` at its end, so that the prefix reads
// back unambiguously (`x_` and `a` would make `x___a`, which reads as `x` and `_a`).
const UPSTREAM_NAME = /^[A-Za-z](?:[A-Za-z0-9_-]{0,62}[A-Za-z0-9-])?$/;

/**
 * Checks an upstream's name: a letter, then letters, digits, `-` or `_`, at most 64 characters in all, no `__` (the
 * separator a name takes before a tool's name when several upstreams share an endpoint) and no `_` at its end.
 *
 * @param setting - Reported in errors, e.g. `name`.
 * @throws ConfigurationError naming `setting`.
 * @example
 * checkUpstreamName(undefined, 'name'); // 'default'
 * checkUpstreamName('notes', 'name'); // 'notes'
 * checkUpstreamName('a__b', 'name'); // throws
 */
export function checkUpstreamName(value: unknown, setting: string): string {
  if (value === undefined) return DEFAULT_UPSTREAM_NAME;
  if (typeof value !== 'string' || !UPSTREAM_NAME.test(value) || value.includes('__')) {
    throw new ConfigurationError(setting, 'must start with a letter and hold only letters, digits, "-" and single "_" (not at its end; at most 64), e.g. notes');
  }
  return value;
}

/**
 * JSON-RPC code of the gateway's own 502, 503 and 504 answers: the standard "Internal error" (JSON-RPC 2.0
 * §5.1), as the fault is server-side.
 */
export const GATEWAY_JSONRPC_CODE = JsonRpcErrorCode.InternalError;

/** JSON-RPC code of an upstream's 429 when a bound of its own (processes, requests in flight) is reached: the guard's one 429 code. */
export const UPSTREAM_BUSY_JSONRPC_CODE = JsonRpcErrorCode.RateLimited;

/** Default time allowed to resolve and connect (TCP and TLS) to an HTTP upstream, in milliseconds. */
export const DEFAULT_UPSTREAM_CONNECT_TIMEOUT_MS = 10_000;
/** Default time allowed with no bytes from an upstream (HTTP or stdio), in milliseconds: 5 minutes. */
export const DEFAULT_UPSTREAM_IDLE_TIMEOUT_MS = 300_000;
/** Longest idle timeout of an upstream (HTTP or stdio), in milliseconds: a day. */
export const MAX_UPSTREAM_IDLE_TIMEOUT_MS = 86_400_000;
/** Default largest non-streaming upstream response body, in bytes: 64 MiB. */
export const DEFAULT_MAX_RESPONSE_BYTES = 64 * 1_048_576;

/** Default time allowed for each server's part of a merged list (several servers behind one endpoint), in milliseconds. */
export const DEFAULT_LIST_TIMEOUT_MS = 5_000;
