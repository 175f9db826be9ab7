/**
 * The one place that decides which answers the guard rewrites for a caller, and rewrites them, whichever
 * copy of the answer it is: a JSON body, an SSE event of a live answer, an event kept in an SDK event store,
 * or an event replayed after `Last-Event-ID`.
 *
 * - The four list methods: items the caller may not use are removed (see `CompiledPolicy.filterListResult`).
 * - `resources/read`: a result marked `cacheScope: "public"` may be served by shared caches to any token
 *   (MCP 2026-07-28 caching); when the resource needs more than the base scopes it is downgraded to
 *   `"private"`.
 */
import type { AuthInfo } from './auth-info.js';
import { isListMethod, LIST_RESULT_KEYS, type CompiledPolicy } from './compile-policy.js';
import type { JsonRpcId, JsonRpcMessage } from './jsonrpc.js';
import { PROTOCOL_VERSION_META_KEY } from './protocol-version.js';

/** Filters one response for the caller; see {@link createResponseFilter}. */
export type ResponseFilter = (request: JsonRpcMessage, response: JsonRpcMessage, auth: AuthInfo, protocolVersion?: string) => JsonRpcMessage;

/** Finds the request a response answers (by its id); undefined when the response is not one to rewrite. */
export type RequestLookup = (id: JsonRpcId, response: JsonRpcMessage) => JsonRpcMessage | undefined;

const READ_METHOD = 'resources/read';
/** Longest read URI a kept request holds; a longer one is not kept and the read counts as restricted. */
const MAX_KEPT_URI_LENGTH = 4096;

/** Whether answers to `method` are rewritten for the caller (list methods and `resources/read`). */
export function isFilteredMethod(method: unknown): method is string {
  return typeof method === 'string' && (method === READ_METHOD || isListMethod(method));
}

/** Whether `message` is a request whose answer is rewritten for the caller. */
export function isFilteredRequest(message: JsonRpcMessage | undefined): message is JsonRpcMessage & { id: JsonRpcId; method: string } {
  return message !== undefined && 'id' in message && 'method' in message && isFilteredMethod(message.method);
}

/**
 * Builds the filter for a compiled policy. Only a success response whose id equals the request's id (same
 * value and type) is touched; anything else comes back unchanged. Idempotent, so an answer filtered before
 * it was stored may be filtered again when written.
 */
export function createResponseFilter(policy: CompiledPolicy): ResponseFilter {
  return function filterResponse(request, response, auth, protocolVersion) {
    if (!('id' in request) || !('result' in response) || response.id !== request.id) return response;
    const method = (request as { method?: unknown }).method;
    const result = response.result;
    if (typeof result !== 'object' || result === null) return response;
    if (method === READ_METHOD) {
      if ((result as Record<string, unknown>).cacheScope !== 'public') return response;
      // A read whose URI is not known (a replay whose request was not kept) is kept private: fail closed.
      const uri = (request as { params?: { uri?: unknown } }).params?.uri;
      if (typeof uri === 'string') {
        const required = policy.requiredScopesFor(request, auth);
        if (required.every((s) => policy.requiredScopes.includes(s))) return response;
      }
      return { ...response, result: { ...result, cacheScope: 'private' } };
    }
    if (typeof method !== 'string' || !policy.isListMethod(method)) return response;
    return { ...response, result: policy.filterListResult(method, result, auth, request, protocolVersion) };
  };
}

/**
 * One parsed message: a response whose request `lookup` finds comes back as `filter(request, response)`; any other
 * message (a request, a notification, a response with no such request) comes back as it is, the same object.
 *
 * @example
 * filterMessage(stored, inferRequest, context.filterResponse); // a replayed list answer, filtered again
 */
export function filterMessage(
  message: unknown,
  lookup: RequestLookup,
  filter: (request: JsonRpcMessage, response: JsonRpcMessage) => JsonRpcMessage,
): unknown {
  if (typeof message !== 'object' || message === null || 'method' in message) return message;
  const id = (message as { id?: unknown }).id;
  if (typeof id !== 'string' && typeof id !== 'number') return message;
  const request = lookup(id, message as JsonRpcMessage);
  return request === undefined ? message : filter(request, message as JsonRpcMessage);
}

/**
 * Rewrites the responses in a parsed payload (one message, or a batch array) whose request `lookup` finds,
 * with `filter(request, response)`. Returns undefined when nothing was rewritten.
 */
function filterPayload(
  payload: unknown,
  lookup: RequestLookup,
  filter: (request: JsonRpcMessage, response: JsonRpcMessage) => JsonRpcMessage,
): unknown {
  let changed = false;
  const one = (message: unknown): unknown => {
    const filtered = filterMessage(message, lookup, filter);
    if (filtered !== message) changed = true;
    return filtered;
  };
  const out = Array.isArray(payload) ? payload.map(one) : one(payload);
  return changed ? out : undefined;
}

/**
 * {@link filterPayload} for serialized JSON (a JSON body, or the data of an SSE event): the rewritten JSON,
 * or undefined when the text is not JSON or nothing was rewritten.
 */
export function filterJsonText(
  text: string,
  lookup: RequestLookup,
  filter: (request: JsonRpcMessage, response: JsonRpcMessage) => JsonRpcMessage,
): string | undefined {
  const first = text.trimStart()[0];
  if (first !== '{' && first !== '[') return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return undefined;
  }
  const filtered = filterPayload(parsed, lookup, filter);
  return filtered === undefined ? undefined : JSON.stringify(filtered);
}

/** A lookup that finds only `request` (the one request a live answer answers). */
export function answering(request: JsonRpcMessage): RequestLookup {
  const id = (request as { id?: unknown }).id;
  return (candidate) => (candidate === id ? request : undefined);
}

/**
 * What a kept copy of a request needs for filtering its answer later: method, id, the URI of a read, and
 * the protocol version. The rest (arguments, cursors) is dropped, so keeping many costs little.
 */
export function requestForReplay(request: JsonRpcMessage & { id: JsonRpcId; method: string }): JsonRpcMessage {
  const params = (request as { params?: Record<string, unknown> }).params;
  const kept: Record<string, unknown> = {};
  const uri = params?.uri;
  // A longer URI is not kept: the read is then taken as restricted (fail closed).
  if (request.method === READ_METHOD && typeof uri === 'string' && uri.length <= MAX_KEPT_URI_LENGTH) kept.uri = uri;
  const meta = params?._meta as Record<string, unknown> | undefined;
  const version = meta?.[PROTOCOL_VERSION_META_KEY];
  if (typeof version === 'string' && version.length <= 64) kept._meta = { [PROTOCOL_VERSION_META_KEY]: version };
  return { jsonrpc: '2.0', id: request.id, method: request.method, params: kept };
}

/**
 * A stand-in request for an answer whose request was not kept, recognised by the shape of its result
 * (fail closed: better filter a look-alike than pass a list unfiltered); undefined when it looks like no
 * filtered answer.
 */
export function inferRequest(id: JsonRpcId, response: unknown): JsonRpcMessage | undefined {
  const result = (response as { result?: unknown } | null)?.result;
  if (typeof result !== 'object' || result === null) return undefined;
  for (const [key, method] of LIST_RESULT_KEYS) if (Array.isArray((result as Record<string, unknown>)[key])) return { jsonrpc: '2.0', id, method };
  if (Array.isArray((result as Record<string, unknown>).contents)) return { jsonrpc: '2.0', id, method: READ_METHOD, params: {} };
  return undefined;
}
