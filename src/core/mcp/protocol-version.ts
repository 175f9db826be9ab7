import { JsonRpcErrorCode, type JsonRpcMessage } from '../wire/jsonrpc.js';

/**
 * The first stateless revision (MCP 2026-07-28): headers mirror body fields, results carry `resultType`,
 * cache hints (`cacheScope`, `ttlMs`) exist, and some JSON-RPC errors get their own HTTP status.
 */
export const STATELESS_PROTOCOL_VERSION = '2026-07-28';

/**
 * The newest revision with `initialize` and sessions (MCP 2025-11-25), which the gateway's catalogue client
 * and the demo client speak.
 */
export const LATEST_SESSION_PROTOCOL_VERSION = '2025-11-25';

/** The revisions with sessions (`initialize`) the gateway speaks, newest first. */
export const SESSION_PROTOCOL_VERSIONS: readonly string[] = [LATEST_SESSION_PROTOCOL_VERSION, '2025-06-18', '2025-03-26', '2024-11-05'];

/**
 * The revision an `initialize` the gateway answers itself is answered with: the one the client asked for when the
 * gateway speaks it, else the newest.
 *
 * @example
 * negotiatedSessionVersion('2025-06-18'); // '2025-06-18'
 * negotiatedSessionVersion('1999-01-01'); // '2025-11-25'
 */
export function negotiatedSessionVersion(requested: unknown): string {
  return typeof requested === 'string' && SESSION_PROTOCOL_VERSIONS.includes(requested) ? requested : LATEST_SESSION_PROTOCOL_VERSION;
}

/** The first revision whose clients read priming events (2025-11-25); a fact of its own, whatever comes later. */
const FIRST_PRIMING_EVENT_VERSION = '2025-11-25';

/** `_meta` key carrying the protocol version in 2026-07-28 request bodies (`basic/index`). */
export const PROTOCOL_VERSION_META_KEY = 'io.modelcontextprotocol/protocolVersion';

/** `_meta` key carrying the client's capabilities in 2026-07-28 request bodies (`basic/index`). */
export const CLIENT_CAPABILITIES_META_KEY = 'io.modelcontextprotocol/clientCapabilities';

const DATED_REVISION = /^\d{4}-\d{2}-\d{2}$/;

/**
 * Client requests that 2026-07-28 removed (`changelog`, SEP-2575 "Deprecated and Removed RPCs"): the
 * `initialize` handshake, `ping`, `logging/setLevel` (the level is per request in `_meta`),
 * `resources/subscribe` and `resources/unsubscribe` (replaced by `subscriptions/listen`), and the tasks
 * methods the tasks extension (SEP-2663) dropped when tasks left the core (`tasks/result`, `tasks/list`).
 * `tasks/get` and `tasks/cancel` live on in that extension, so they are not listed.
 */
const REMOVED_IN_STATELESS_REVISION: ReadonlySet<string> = new Set([
  'initialize',
  'ping',
  'logging/setLevel',
  'resources/subscribe',
  'resources/unsubscribe',
  'tasks/result',
  'tasks/list',
]);

/**
 * Whether `version` is the stateless revision or later. Revisions are dates (`YYYY-MM-DD`) and compare as
 * strings; any other non-empty value (a draft name) counts as later, since the stricter rules are the safe
 * reading. `undefined` (no version known) is the 2025 behaviour.
 *
 * @example
 * isStatelessRevision('2026-07-28'); // true
 * isStatelessRevision('2025-11-25'); // false
 */
export function isStatelessRevision(version: string | undefined): boolean {
  if (version === undefined || version === '') return false;
  return !DATED_REVISION.test(version) || version >= STATELESS_PROTOCOL_VERSION;
}

/**
 * Whether a client of revision `version` reads a priming event: an event id with an empty data field, which
 * a server sends first on an event stream so that the client can resume it before any message arrived
 * (2025-11-25 Streamable HTTP, "Sending Messages to the Server"). Older clients may fail on empty data, and
 * 2026-07-28 streams are not resumable at all.
 *
 * @example
 * acceptsPrimingEvent('2025-11-25'); // true
 * acceptsPrimingEvent('2025-06-18'); // false
 */
export function acceptsPrimingEvent(version: string | undefined): boolean {
  return version !== undefined && DATED_REVISION.test(version) && version >= FIRST_PRIMING_EVENT_VERSION && !isStatelessRevision(version);
}

/**
 * Whether `method` is a client request that revision `version` no longer has. Such a request is answered
 * 404 with -32601 (2026-07-28 Streamable HTTP, "Protocol Version Header"), like any method the server does not
 * implement, and none of the checks that revision defines for other methods applies to it.
 *
 * @example
 * isRemovedMethod('resources/subscribe', '2026-07-28'); // true
 * isRemovedMethod('resources/subscribe', '2025-11-25'); // false
 */
export function isRemovedMethod(method: string, version: string | undefined): boolean {
  return REMOVED_IN_STATELESS_REVISION.has(method) && isStatelessRevision(version);
}

/**
 * Notifications that a 2026-07-28 server may send on a request's response stream, when they relate to that
 * request: progress and logging (`basic/transports/streamable-http`, "Receiving Messages"). Change
 * notifications such as `notifications/tools/list_changed` belong on a `subscriptions/listen` stream instead.
 */
const REQUEST_SCOPED_NOTIFICATIONS: ReadonlySet<string> = new Set(['notifications/progress', 'notifications/message']);

/**
 * Whether a server message that answers no request (a request of the server's, or a notification) may go on
 * the response stream of a client request of revision `version`; `related` says whether the sender knows it
 * relates to that request. Up to 2025-11-25 any may, server requests (sampling, elicitation, roots) included.
 * 2026-07-28 ("Receiving Messages"): a server MUST NOT send independent requests there (those interactions are
 * results, MRTR), and notifications there MUST relate to the request: progress or logging, known to be related.
 *
 * @example
 * mayStreamServerMessage({ method: 'sampling/createMessage', id: 1 }, '2025-11-25', false); // true
 * mayStreamServerMessage({ method: 'sampling/createMessage', id: 1 }, '2026-07-28', true); // false
 * mayStreamServerMessage({ method: 'notifications/tools/list_changed' }, '2026-07-28', true); // false
 */
export function mayStreamServerMessage(message: { method: string; id?: unknown }, version: string | undefined, related: boolean): boolean {
  if (!isStatelessRevision(version)) return true;
  if ('id' in message) return false;
  return related && REQUEST_SCOPED_NOTIFICATIONS.has(message.method);
}

/**
 * Whether a client of revision `version` may POST a JSON-RPC response (its answer to a request of the
 * server's). 2026-07-28 clients MUST NOT send responses (`basic/transports/streamable-http`, "Sending
 * Messages"), since servers send them no requests; a server cannot accept one (400).
 *
 * @example
 * acceptsClientResponses('2025-11-25'); // true
 * acceptsClientResponses('2026-07-28'); // false
 */
export function acceptsClientResponses(version: string | undefined): boolean {
  return !isStatelessRevision(version);
}

/** The protocol version a message declares in `params._meta` (2026-07-28), if any: a non-empty string. */
export function bodyProtocolVersion(message: JsonRpcMessage | undefined): string | undefined {
  const params = (message as { params?: unknown } | undefined)?.params;
  if (typeof params !== 'object' || params === null) return undefined;
  const meta = (params as Record<string, unknown>)._meta;
  if (typeof meta !== 'object' || meta === null) return undefined;
  const v = (meta as Record<string, unknown>)[PROTOCOL_VERSION_META_KEY];
  // An empty string names no revision: it is a missing value (-32602), not one the header disagrees with.
  return typeof v === 'string' && v !== '' ? v : undefined;
}

/**
 * The HTTP status of a JSON-RPC response sent as `application/json`. 2026-07-28 (Streamable HTTP) gives
 * some errors their own status: an unimplemented method is 404 with -32601; a header mismatch, a missing
 * client capability and an unsupported protocol version are 400. Earlier revisions answer every JSON-RPC
 * response with 200.
 *
 * A handler's -32602 (Invalid params: bad arguments, an unknown tool, a resource not found, which 2026-07-28
 * moved from -32002 to -32602) stays 200 under every revision. 2026-07-28 asks for 400 with -32602 only for a
 * request missing a required `_meta` field (`basic/index`, "Per-request protocol fields"), and the guard refuses
 * those itself before any handler runs (`checkRequestRevision`). For anything else the transport prescribes
 * no status, and a 400 would mislead: a dual-era client that gets a 4xx without one of the modern errors
 * (-32020..-32022, -32601) takes the server for a legacy one and falls back to `initialize` (`basic/versioning`,
 * "Compatibility Matrix"; `basic/transports/streamable-http`, "Backward Compatibility").
 */
export function httpStatusForResponse(response: JsonRpcMessage, protocolVersion: string | undefined): number {
  if (!('error' in response) || !isStatelessRevision(protocolVersion)) return 200;
  switch (response.error.code) {
    case JsonRpcErrorCode.MethodNotFound:
      return 404;
    case JsonRpcErrorCode.HeaderMismatch:
    case JsonRpcErrorCode.MissingRequiredClientCapability:
    case JsonRpcErrorCode.UnsupportedProtocolVersion:
      return 400;
    default:
      // Invalid params (-32602) included: see above.
      return 200;
  }
}
