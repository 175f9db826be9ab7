/**
 * The one place that decides which answers the guard rewrites for a caller, and rewrites them, whichever
 * copy of the answer it is: a JSON body, an SSE event of a live answer (of any request), an event kept in an
 * SDK event store, or an event replayed after `Last-Event-ID`.
 *
 * The decision follows the shape of the result, never the id it carries: clients choose ids, and an upstream
 * may carry the answer to one request on the exchange of another that reused its id (the MCP SDK moves an id
 * to the newest request that claims it), or replay an old answer whose id now names another request.
 *
 * - Lists: every `tools`, `prompts`, `resources` or `resourceTemplates` array at the top of a success result
 *   is filtered as the answer of its list method (see `CompiledPolicy.filterListResult`), whatever request or
 *   id the answer carries, each key for itself when a result carries several. Other fields (`nextCursor`,
 *   `_meta`, …) are kept.
 * - `resources/read`: a result marked `cacheScope: "public"` may be served by shared caches to any token
 *   (MCP 2026-07-28 caching). It stays public only when it answers a `resources/read` (same id) whose URI,
 *   and the URI of every item it returns, need no more than the base scopes; any other public result with
 *   `contents` (a replay, an answer on another request's exchange) becomes `"private"` (fail closed).
 *
 * With `lists: "all"` (see {@link ListsMode}) lists are never rewritten, so what is left is the read rule: code
 * that sees answers as text asks {@link answerRewrites} which answers it must parse, so that a list answer is then
 * passed on as a tool call's is, never held, parsed or re-serialised.
 */
import type { AuthInfo } from '../kernel/auth-info.js';
import type { CompiledPolicy } from './compile-policy.js';
import type { ListsMode } from './lists-mode.js';
import { isListMethod, LIST_RESULT_KEYS } from './policy-rules.js';
import { JsonRpcErrorCode, jsonRpcError, type JsonRpcErrorResponse, type JsonRpcId, type JsonRpcMessage, type JsonRpcNotification } from '../wire/jsonrpc.js';

/**
 * Filters one response for the caller; see {@link createResponseFilter}. `request` is the request the exchange
 * carried, or {@link UNKNOWN_REQUEST} when none is known (a replay): the result's shape decides either way.
 */
export type ResponseFilter = (request: JsonRpcMessage, response: JsonRpcMessage, auth: AuthInfo, protocolVersion?: string) => JsonRpcMessage;

/** Stands for the request of an answer when none is known (a replayed event): the answer is filtered by its shape. */
export const UNKNOWN_REQUEST: JsonRpcMessage = Object.freeze({ jsonrpc: '2.0', method: '' } satisfies JsonRpcNotification);

const READ_METHOD = 'resources/read';

/**
 * Keys (as they appear in JSON text) whose presence means an answer may need rewriting when lists are filtered:
 * the four list results, and `cacheScope` for reads. See {@link mayNeedFiltering}.
 */
const FILTERED_KEY_MARKERS: readonly string[] = [...LIST_RESULT_KEYS.map(([key]) => `"${key}"`), '"cacheScope"'];
/**
 * The same when every list is shown: only a read result can be rewritten then, and only one with `contents` (see
 * {@link createResponseFilter}). Not `cacheScope`, which every list answer of 2026-07-28 carries: searching for it
 * would parse the list answers this mode lets pass.
 */
const ALL_LISTS_KEY_MARKERS: readonly string[] = ['"contents"'];
/** `\u00` followed by one of these (`4`–`7`) escapes an ASCII letter, so may spell one of the keys above. */
const LETTER_ESCAPE = '\\u00';

/**
 * Which answers the guard rewrites under one {@link ListsMode}, for code that sees answers as text (the pipeline's
 * written-answer filter): which requests' answers are always parsed, and the cheap check made before parsing any
 * other answer. Get one with {@link answerRewrites}; the filter that rewrites is {@link createResponseFilter},
 * made with the same mode.
 *
 * @example
 * ```ts
 * const rewrites: AnswerRewrites = answerRewrites(guard.options.lists);
 * if (rewrites.isFilteredRequest(request) || rewrites.mayNeedFiltering(answerText)) {
 *   // parse the answer and pass it through the guard's response filter
 * }
 * ```
 */
export interface AnswerRewrites {
  /** The mode these rules are for. */
  readonly lists: ListsMode;
  /**
   * Whether `message` is a request whose answer is always parsed and rewritten for the caller: a list or a read
   * when lists are filtered, a read only when every list is shown.
   */
  isFilteredRequest(message: JsonRpcMessage | undefined): message is JsonRpcMessage & { id: JsonRpcId; method: string };
  /**
   * The cheap check made before parsing an answer to any other request: false when the serialized JSON (text or
   * UTF-8 bytes) cannot hold a result the filter would rewrite, so it passes without being parsed. True when it
   * contains a key the mode rewrites (see the markers above), or any `\u00[4-7]` escape, which could spell one
   * (fail closed: a false alarm only costs a parse).
   */
  mayNeedFiltering(json: string | Uint8Array): boolean;
}

/** {@link AnswerRewrites} of one mode: its markers, and whether list requests are among those always parsed. */
class AnswerRewriteRules implements AnswerRewrites {
  constructor(
    readonly lists: ListsMode,
    private readonly markers: readonly string[],
  ) {}

  isFilteredRequest(message: JsonRpcMessage | undefined): message is JsonRpcMessage & { id: JsonRpcId; method: string } {
    if (message === undefined || !('id' in message) || !('method' in message)) return false;
    const method = message.method;
    return this.lists === 'filtered' ? isFilteredMethod(method) : method === READ_METHOD;
  }

  mayNeedFiltering(json: string | Uint8Array): boolean {
    const text = typeof json === 'string' ? json : Buffer.isBuffer(json) ? json : Buffer.from(json.buffer, json.byteOffset, json.byteLength);
    for (const marker of this.markers) if (text.indexOf(marker) !== -1) return true;
    for (let at = text.indexOf(LETTER_ESCAPE); at !== -1; at = text.indexOf(LETTER_ESCAPE, at + 1)) {
      const next = typeof text === 'string' ? text.charCodeAt(at + LETTER_ESCAPE.length) : text[at + LETTER_ESCAPE.length];
      if (next !== undefined && next >= 0x34 && next <= 0x37) return true;
    }
    return false;
  }
}

const REWRITES: Readonly<Record<ListsMode, AnswerRewrites>> = {
  filtered: new AnswerRewriteRules('filtered', FILTERED_KEY_MARKERS),
  all: new AnswerRewriteRules('all', ALL_LISTS_KEY_MARKERS),
};

/**
 * The {@link AnswerRewrites} of `lists` (one shared object per mode).
 *
 * @example
 * ```ts
 * const list = { jsonrpc: '2.0', id: 1, method: 'tools/list' } as const;
 * answerRewrites('filtered').isFilteredRequest(list); // true: its answer is filtered by the token's scopes
 * answerRewrites('all').isFilteredRequest(list); // false: every list is shown
 * answerRewrites('all').mayNeedFiltering('{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}'); // false
 * ```
 */
export function answerRewrites(lists: ListsMode): AnswerRewrites {
  return REWRITES[lists];
}

/** Whether answers to `method` are rewritten for the caller whatever their shape when lists are filtered (list methods and `resources/read`). */
export function isFilteredMethod(method: unknown): method is string {
  return typeof method === 'string' && (method === READ_METHOD || isListMethod(method));
}

/** Whether `message` is a request whose answer is always parsed and rewritten when lists are filtered (a list or a read). */
export function isFilteredRequest(message: JsonRpcMessage | undefined): message is JsonRpcMessage & { id: JsonRpcId; method: string } {
  return REWRITES.filtered.isFilteredRequest(message);
}

/**
 * {@link AnswerRewrites.mayNeedFiltering} when lists are filtered: true when the serialized JSON contains one of
 * the list keys or `"cacheScope"`, or any `\u00[4-7]` escape.
 *
 * @example
 * mayNeedFiltering('{"jsonrpc":"2.0","id":1,"result":{"content":[]}}'); // false
 * mayNeedFiltering('{"jsonrpc":"2.0","id":1,"result":{"t\\u006fols":[]}}'); // true
 */
export function mayNeedFiltering(json: string | Uint8Array): boolean {
  return REWRITES.filtered.mayNeedFiltering(json);
}

/**
 * Builds the filter for a compiled policy: see the module's description. An error response, or a result that is
 * not an object, comes back unchanged; so does a result the filter leaves as it is (the same object). Idempotent,
 * so an answer filtered before it was stored may be filtered again when written.
 *
 * @param lists `all` leaves every list as the server wrote it (see {@link ListsMode}); only the read rule applies.
 *   Default `filtered`.
 */
export function createResponseFilter(policy: CompiledPolicy, lists: ListsMode = 'filtered'): ResponseFilter {
  // Every list shown: lists are not looked at at all (not filtered and then undone).
  const listKeys = lists === 'filtered' ? LIST_RESULT_KEYS : [];
  return function filterResponse(request, response, auth, protocolVersion) {
    if (!('result' in response)) return response;
    const result = response.result as unknown;
    if (typeof result !== 'object' || result === null || Array.isArray(result)) return response;
    // What the request adds is only its own key and its URI, and only for the answer with its id.
    const answered = 'id' in request && 'method' in request && response.id === request.id ? request.method : undefined;
    let out = result as Record<string, unknown>;
    for (const [key, method] of listKeys) {
      // The request's own list method also fills in a missing key (as `filterListResult` describes).
      if (Array.isArray(out[key]) || answered === method) out = policy.filterListResult(method, out, auth, request, protocolVersion);
    }
    if (out.cacheScope === 'public' && (answered === READ_METHOD || Array.isArray(out.contents)) && !isPublicRead(policy, request, answered, out, auth)) {
      out = { ...out, cacheScope: 'private' };
    }
    return out === result ? response : { ...response, result: out };
  };
}

/** Whether a read result marked public may stay so: see {@link createResponseFilter}. */
function isPublicRead(policy: CompiledPolicy, request: JsonRpcMessage, answered: string | undefined, result: Record<string, unknown>, auth: AuthInfo): boolean {
  if (answered !== READ_METHOD) return false;
  const uri = (request as { params?: { uri?: unknown } }).params?.uri;
  if (typeof uri !== 'string' || !needsOnlyBaseScopes(policy, request, auth)) return false;
  const contents = result.contents;
  if (contents === undefined) return true;
  if (!Array.isArray(contents)) return false;
  for (const item of contents) {
    const itemUri = (item as { uri?: unknown } | null)?.uri;
    if (typeof itemUri !== 'string') return false;
    if (itemUri !== uri && !needsOnlyBaseScopes(policy, { jsonrpc: '2.0', id: 0, method: READ_METHOD, params: { uri: itemUri } }, auth)) return false;
  }
  return true;
}

function needsOnlyBaseScopes(policy: CompiledPolicy, message: JsonRpcMessage, auth: AuthInfo): boolean {
  return policy.requiredScopesFor(message, auth).every((s) => policy.requiredScopes.includes(s));
}

/**
 * One parsed message: a response with a result comes back as `filter(response)`; anything else (a request, a
 * notification, an error response) comes back as it is, the same object.
 *
 * @example
 * filterMessage(stored, (response) => context.filterResponse(UNKNOWN_REQUEST, response)); // a replayed list answer, filtered again
 */
export function filterMessage(message: unknown, filter: (response: JsonRpcMessage) => JsonRpcMessage): unknown {
  if (typeof message !== 'object' || message === null || Array.isArray(message) || 'method' in message || !('result' in message)) return message;
  return filter(message as JsonRpcMessage);
}

/** Rewrites the responses in a parsed payload (one message, or a batch array). Undefined when nothing was rewritten. */
function filterPayload(payload: unknown, filter: (response: JsonRpcMessage) => JsonRpcMessage): unknown {
  let changed = false;
  const one = (message: unknown): unknown => {
    const filtered = filterMessage(message, filter);
    if (filtered !== message) changed = true;
    return filtered;
  };
  const out = Array.isArray(payload) ? payload.map(one) : one(payload);
  return changed ? out : undefined;
}

/**
 * What {@link filterJsonText} answers for text that must be filtered but cannot be read: the caller replaces the
 * answer with a JSON-RPC `-32603` error rather than forward it (fail closed).
 */
export const UNFILTERABLE: unique symbol = Symbol('unfilterable');

/**
 * HTTP status of an answer replaced by {@link unfilterableAnswer} before its head was sent: 502, since the fault is
 * the answer of the server behind the guard (RFC 9110 §15.6.3: an invalid response from an inbound server), not
 * the guard's nor the client's.
 */
export const UNFILTERABLE_STATUS = 502;

/**
 * The JSON-RPC error (`-32603`, as the gateway's other 502 answers) that replaces an answer which must be filtered
 * but cannot be (fail closed). It says that the server's answer was at fault; nothing of that answer is in it.
 */
export function unfilterableAnswer(id: JsonRpcId | null): JsonRpcErrorResponse {
  return jsonRpcError(id, JsonRpcErrorCode.InternalError, "Bad gateway: the server's answer was invalid (not JSON, compressed or too large), so its list could not be filtered");
}

/** A UTF-8 byte order mark, as decoded: clients decoding a body as UTF-8 (`Response.json()`) drop it, so it is dropped here too. */
const BOM = '\uFEFF';

/**
 * {@link filterPayload} for serialized JSON (a JSON body, or the data of an SSE event): the rewritten JSON, or
 * undefined when nothing was rewritten. Unless `always` (the answer to a list or a read, see
 * {@link AnswerRewrites.isFilteredRequest}), text that `rewrites.mayNeedFiltering` clears is not parsed at all
 * (`rewrites`: those of the filter's lists mode; default filtered). Text that must be
 * parsed (`always`, or a key was found) but is not JSON is {@link UNFILTERABLE}: what a client may still read in
 * it must not pass unfiltered. A leading byte order mark is skipped, as clients skip it.
 */
export function filterJsonText(
  text: string,
  filter: (response: JsonRpcMessage) => JsonRpcMessage,
  always = false,
  rewrites: AnswerRewrites = REWRITES.filtered,
): string | undefined | typeof UNFILTERABLE {
  if (!always && !rewrites.mayNeedFiltering(text)) return undefined;
  const json = text.startsWith(BOM) ? text.slice(BOM.length) : text;
  let parsed: unknown;
  try {
    parsed = JSON.parse(json);
  } catch {
    return UNFILTERABLE;
  }
  const filtered = filterPayload(parsed, filter);
  return filtered === undefined ? undefined : JSON.stringify(filtered);
}
