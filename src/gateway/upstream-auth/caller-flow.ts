/**
 * What credentials that need the caller's own action add to an exchange: connected accounts, where the user must
 * first connect their account at the upstream (see `src/gateway/connected/flow/`). The exchange knows only this
 * interface; credentials of the other modes have no flow, and their requests do no extra work.
 */
import type { AuthInfo } from '../../core/kernel/auth-info.js';
import type { DecisionReason } from '../../core/kernel/decision.js';
import type { JsonRpcMessage, JsonRpcResponse } from '../../core/wire/jsonrpc.js';

/** One request, as a {@link CallerFlow} sees it. Made by the exchange; `note` belongs to the flow. */
export interface CallerFlowRequest {
  /** The POST's JSON-RPC message as it will be forwarded; undefined for GET and DELETE. */
  message: JsonRpcMessage | undefined;
  readonly auth: AuthInfo;
  /** The upstream's id of the session the request names (revisions with sessions), if any. */
  readonly sessionId: string | undefined;
  /** The request's HTTP method: `POST` (a message), `GET` (an event stream) or `DELETE` (the session's end). Default `POST`. */
  readonly httpMethod?: string;
  /** What the client declared in its session's `initialize`, when known beside the upstream's session (a server set's session). */
  readonly clientCapabilities?: unknown;
  /** What {@link CallerFlow.prepare} learnt of the request (a verified retry), for the flow's later steps. */
  note?: unknown;
}

/**
 * The gateway's own answer in the upstream's place: a JSON-RPC response, written as JSON with `status` and
 * `headers`; or, for a GET or DELETE, which carry no message to answer, `status` and `headers` with no body.
 */
export interface CallerFlowAnswer {
  readonly status: number;
  /** Undefined: no body (a GET or DELETE). */
  readonly response: JsonRpcResponse | undefined;
  /** Extra response headers, e.g. `Retry-After` or `Allow`. */
  readonly headers?: Readonly<Record<string, string>>;
  /**
   * The stable reason the request log and metrics record, as a `deny`, for this answer (the guard had allowed the
   * request, but the upstream was not called): `connection_required` for a connect answer.
   */
  readonly denied: DecisionReason;
}

/** The caller's part in credentials that need it. Every method is called only for credentials that have a flow. */
export interface CallerFlow {
  /**
   * Before the credentials are asked: removes from `request.message` what belongs to the gateway (a retry's
   * `requestState` and its `inputResponses` entry), checking it, so the upstream never sees it. Resolves with an
   * answer to give instead when what the gateway minted does not check out (forged, expired, replayed, another
   * caller's or another request's); undefined to go on.
   */
  prepare(request: CallerFlowRequest): Promise<CallerFlowAnswer | undefined>;
  /**
   * The answer to a failure of the credentials that the caller can act on (connect their account), or undefined
   * for the others (the exchange answers those as it always did). Never rejects for such a failure.
   */
  answer(error: unknown, request: CallerFlowRequest): Promise<CallerFlowAnswer> | undefined;
  /** Whether `error` of the credentials is one the caller fixes by connecting (nothing is minted to know it). */
  needsConnection(error: unknown): boolean;
  /**
   * The upstream answered 403 with `error="insufficient_scope"` (RFC 6750 §3.1) naming `scope` (space-separated,
   * undefined when it named none): the failure to answer with instead (a step-up: connect again asking for it), or
   * undefined to pass the refusal on as it is (the connection already has that scope, or this request is already
   * the retry of a step-up for it: never a loop).
   */
  insufficientScope(request: CallerFlowRequest, scope: string | undefined): Promise<unknown>;
  /**
   * The upstream answered 401 again after the credentials were renewed (a refresh, RFC 6750 `invalid_token`): the
   * failure to answer with instead (connect again), or undefined to pass the refusal on as the gateway's (a
   * connection just made that is refused at once is a configuration fault, and connecting again would loop).
   */
  refusedAfterRenewal(request: CallerFlowRequest): Promise<unknown>;
  /** An `initialize` was answered with the session `sessionId` (the upstream's id): keeps what the client declared. */
  sessionStarted(sessionId: string, initialize: JsonRpcMessage): void;
}
