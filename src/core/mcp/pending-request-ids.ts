/**
 * The ids of the requests each session has in progress, so that a request reusing one is refused. MCP forbids
 * it (2025-11-25 `basic`, "Requests": the request id MUST NOT have been previously used by the requestor within
 * the same session), and an upstream that meets it anyway answers in ways no one can filter by id: the MCP SDK
 * moves the id to the newest request's stream, so the answer to the first request goes out on the second's.
 * Shared by every adapter that keeps sessions (the gateway's HTTP and stdio upstreams, the SDK adapter).
 *
 * Only ids in progress are refused; an id whose request was answered may come again. Whatever an upstream then
 * replays or misroutes is still filtered by its shape (see `response-filter.ts`), which does not depend on ids.
 */
import { hash } from 'node:crypto';
import { RATE_LIMITED_JSONRPC_CODE } from '../kernel/errors.js';
import { jsonRpcError, JsonRpcErrorCode, type JsonRpcErrorResponse, type JsonRpcId } from '../wire/jsonrpc.js';

/** Options of {@link createPendingRequestIds}. */
export interface PendingRequestIdsOptions {
  /** Most requests one session may have in progress at once; one more is refused (`'too_many'`). Default 1024. */
  maxPerSession?: number;
}

/** Why {@link PendingRequestIds.claim} refused a request. */
export type PendingIdRefusal = 'in_use' | 'too_many';

/** See {@link createPendingRequestIds}. */
export interface PendingRequestIds {
  /**
   * Claims `id` for a request of `session` now in progress: the function to call once it is over (answered,
   * cancelled, or its answer can no longer be delivered; calling it again does nothing), or why it is refused:
   * `'in_use'`, a request of the session with the same id (same value and type: `1` and `"1"` differ) is in
   * progress; `'too_many'`, the session has `maxPerSession` requests in progress.
   */
  claim(session: string, id: JsonRpcId): (() => void) | PendingIdRefusal;
  /**
   * Forgets every id of `session`, which ended (closed, expired, evicted): requests a server aborts when a
   * session ends may never be answered, so their claims would otherwise stay. Their release functions then do
   * nothing.
   */
  forgetSession(session: string): void;
  /** Requests in progress, all sessions together. */
  readonly size: number;
}

/** Longest string id kept as it is, in UTF-16 code units; a longer one is kept as its SHA-256 digest. */
const MAX_KEPT_ID_LENGTH = 64;

/**
 * The key an id is kept under: numbers and short strings as they are, a longer string as `#` and its SHA-256
 * digest (base64url, 44 characters in all), so what is kept does not grow with the ids a client chooses. Two ids
 * with one key (a collision, or a short id spelling a digest) only make the later request of that same session
 * refused as a reuse.
 */
function idKey(id: JsonRpcId): JsonRpcId {
  return typeof id === 'string' && id.length > MAX_KEPT_ID_LENGTH ? `#${hash('sha256', id, 'base64url')}` : id;
}

/** Default of {@link PendingRequestIdsOptions.maxPerSession}. */
export const DEFAULT_MAX_PENDING_REQUESTS_PER_SESSION = 1024;

/**
 * Creates the set of ids in progress. What it holds is bounded by the requests in progress: at most
 * `maxPerSession` per session, each a number or a string of at most 64 characters (a longer id is kept as its
 * digest), and a session with nothing in progress, or forgotten, holds nothing.
 *
 * @example
 * const claimed = pending.claim(sessionId, message.id);
 * if (typeof claimed !== 'function') return refuse(pendingIdRefusal(claimed, message.id));
 * res.once('close', claimed);
 */
export function createPendingRequestIds(options: PendingRequestIdsOptions = {}): PendingRequestIds {
  const maxPerSession = options.maxPerSession ?? DEFAULT_MAX_PENDING_REQUESTS_PER_SESSION;
  // A Set tells 1 from "1" (SameValueZero), as JSON-RPC does.
  const sessions = new Map<string, Set<JsonRpcId>>();
  let size = 0;
  return {
    claim(session, id) {
      const key = idKey(id);
      let ids = sessions.get(session);
      if (ids?.has(key)) return 'in_use';
      if (ids !== undefined && ids.size >= maxPerSession) return 'too_many';
      if (ids === undefined) sessions.set(session, (ids = new Set()));
      ids.add(key);
      size++;
      const held = ids;
      let released = false;
      return () => {
        if (released) return;
        released = true;
        // Already gone when the session was forgotten: then nothing is counted twice.
        if (sessions.get(session) !== held || !held.delete(key)) return;
        size--;
        if (held.size === 0) sessions.delete(session);
      };
    },
    forgetSession(session) {
      const held = sessions.get(session);
      if (held === undefined) return;
      sessions.delete(session);
      size -= held.size;
    },
    get size() {
      return size;
    },
  };
}

/**
 * The answer to a refused request: 400 with JSON-RPC `-32600` (Invalid Request) for an id in progress, 429 with
 * the guard's rate-limit code and `Retry-After: 1` for too many requests in progress.
 */
export function pendingIdRefusal(refusal: PendingIdRefusal, id: JsonRpcId): { status: number; body: JsonRpcErrorResponse; headers: Record<string, string> } {
  if (refusal === 'in_use') {
    const shown = typeof id === 'string' && id.length > 64 ? `${JSON.stringify(id.slice(0, 64))}…` : JSON.stringify(id);
    return {
      status: 400,
      body: jsonRpcError(id, JsonRpcErrorCode.InvalidRequest, `Invalid Request: id ${shown} is in use by a request of this session still in progress; a request id must not be reused`),
      headers: {},
    };
  }
  return {
    status: 429,
    body: jsonRpcError(id, RATE_LIMITED_JSONRPC_CODE, 'Too many requests in progress in this session: wait for some answers'),
    headers: { 'Retry-After': '1' },
  };
}
