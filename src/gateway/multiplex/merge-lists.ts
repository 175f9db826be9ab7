import type { IncomingHttpHeaders } from 'node:http';
import type { AuthInfo } from '../../core/kernel/auth-info.js';
import { exposeName } from '../../core/mcp/exposed-names.js';
import { isStatelessRevision } from '../../core/mcp/protocol-version.js';
import { LIST_SPECS } from '../../core/policy/policy-rules.js';
import { JsonRpcErrorCode, type JsonRpcRequest } from '../../core/wire/jsonrpc.js';
import type { ConnectedLists } from '../upstream-auth/connected-lists.js';
import type { UpstreamFailureReason } from '../upstream/upstream.js';
import type { CompositeSession, CompositeSessions } from './composite-sessions.js';
import type { ListCursors, ServerCursors } from './list-cursor.js';
import { callMember, ownRequestId, type MemberAnswer } from './member-call.js';
import type { ResourceRoutes } from './resource-routes.js';
import { deadlineSignal } from './deadline-signal.js';
import { pageBytesOf, samePage, type PageBytes } from './page-bytes.js';
import { ReusedPages, reuseMsOf } from './reused-pages.js';
import type { SetMember } from './set-member.js';
import { SharedExchanges } from './shared-exchanges.js';

/** Why a server's part of a merged list is missing. */
export type ListFailureReason = Extract<UpstreamFailureReason, 'upstream_timeout' | 'upstream_unreachable'> | 'upstream_refused' | 'upstream_invalid' | 'upstream_session';

/**
 * Told of a server left out of a merged list and why. `sessionless` (with `upstream_session`) says the server needs
 * a session and the request came without one: it is left out of every such list, not until it recovers.
 */
export type ListFailureListener = (server: string, method: string, reason: ListFailureReason, sessionless?: boolean) => void;

/** One merged list request, as the server set hands it over. */
export interface MergeRequest {
  readonly request: JsonRpcRequest;
  readonly auth: AuthInfo;
  readonly protocolVersion: string | undefined;
  readonly signal: AbortSignal;
  /** The client's session, under a revision with sessions. */
  readonly session: CompositeSession | undefined;
  /** Client headers passed on to each server. */
  readonly headers: IncomingHttpHeaders;
  /** The servers the caller may use (in configuration order); no other is asked. Default: every server. */
  readonly members?: readonly SetMember[];
}

/** A merged list, or why there is none. */
export type MergeOutcome =
  | { readonly result: string }
  | { readonly refused: 'cursor' }
  | { readonly failed: { readonly status: number; readonly message: string } };

/**
 * What the endpoint answers a request the set asks every server of (a list, `server/discover`) when not one of them
 * answered it: 504 when every one timed out, else 502 (with the gateway's JSON-RPC code; see `writeGatewayError`).
 * While one server answers, the answer is built from those that did.
 */
export function noServerAnswered(method: string, everyOneTimedOut: boolean): { readonly status: number; readonly message: string } {
  return { status: everyOneTimedOut ? 504 : 502, message: `No server answered ${method}` };
}

/** What a server answered for its part. */
interface Part {
  readonly member: SetMember;
  readonly answer?: MemberAnswer;
  /** The answer's body and where the request's own id is in it, compared to reuse the last merge. */
  readonly page?: PageBytes;
  readonly failure?: ListFailureReason;
  /** With `upstream_session`: the server needs a session and none was sent. */
  readonly sessionless?: boolean;
}

/** Options of {@link ListMerger}. */
export interface ListMergerOptions {
  readonly members: readonly SetMember[];
  readonly sessions: CompositeSessions;
  readonly cursors: ListCursors;
  readonly routes: ResourceRoutes;
  /** Most bytes read of one server's list page. */
  readonly maxBytes: number;
  /** Told of each server left out of a list; `sessionless` when it needs a session and the request came without one. */
  readonly onFailure: ListFailureListener;
  /** Connected accounts, when a server is in connected mode. */
  readonly connected?: ConnectedLists;
}

/**
 * Merges one list across every server of a set: each server's page is asked in parallel (each within its list
 * timeout), tools and prompts are renamed `<server>__<name>` (tools the server's `tools` selection leaves out are
 * dropped), and the items follow configuration order, then each server's own order. A server that answers -32601
 * (it offers no such list: no prompts, no resources) adds nothing and has not failed. A server that fails is left
 * out and reported; only when every server fails is the answer an error. The next page is an opaque cursor
 * ({@link ListCursors}) holding each server's own cursor.
 *
 * A server the caller has not connected (connected accounts) is not a failure. When the gateway holds a page of it
 * that it may serve to anyone (`listReuseMs`, or a page marked public), fetched with a connected user's token, the
 * caller gets that page: they see its tools, and calling one leads them to connect. Else its part is the connect
 * flow's answer: the definitions the server last listed for a connected user (empty before any did), renamed as any
 * part, and the flow's note (why, and the link) in the merged `_meta` under {@link ConnectedLists.noteKey}, by server
 * name. With `hide`, such a server shows nothing. The connect flow's answers are never kept: they are one caller's.
 *
 * The merged result is written as JSON for the request pipeline to filter by the caller's policy, as any list
 * answer is. When every server's answer is byte for byte the last one, the last merge is reused unparsed.
 */
export class ListMerger {
  private readonly memo = new Map<string, { pages: readonly PageBytes[]; result: string }>();
  private memoBytes = 0;
  /** Servers' pages that any caller may be served while fresh (2026-07-28 `cacheScope: "public"`). */
  private readonly pages = new ReusedPages<Part>();
  /** Parts being fetched that identical requests of other callers may share (see {@link sharedPartKey}). */
  private readonly shared = new SharedExchanges<Part>();

  constructor(private readonly options: ListMergerOptions) {}

  /** Drops the pages kept of `server`: it said its lists changed. */
  forgetPages(server: string): void {
    this.pages.forget(server);
  }

  async merge(request: MergeRequest): Promise<MergeOutcome> {
    const method = request.request.method;
    const params = (request.request.params ?? {}) as Record<string, unknown>;
    let wanted: ServerCursors | undefined;
    if (params.cursor !== undefined) {
      const opened = this.options.cursors.open(params.cursor, method, request.auth);
      if ('refused' in opened) return { refused: 'cursor' };
      wanted = opened.servers;
    }
    const reachable = request.members ?? this.options.members;
    const members = wanted === undefined ? reachable : reachable.filter((m) => wanted.some(([name]) => name === m.name));
    // Only when a server may share: the key copies the request's parameters.
    const shareBase = members.some((member) => member.callerBlind) ? sharedPartsKey(request) : undefined;
    const parts = await Promise.all(members.map((member) => this.askPart(request, member, wanted?.find(([name]) => name === member.name)?.[1], false, shareBase)));
    const answered = parts.filter((part) => part.answer !== undefined);
    // A client that left ended every server's part: nothing failed.
    if (!request.signal.aborted) for (const part of parts) if (part.failure) this.options.onFailure(part.member.name, method, part.failure, part.sessionless);
    if (answered.length === 0 && parts.length > 0) return { failed: noServerAnswered(method, parts.every((part) => part.failure === 'upstream_timeout')) };
    return { result: this.mergedResult(method, answered, parts.filter((p) => p.failure).map((p) => p.member.name), request, wanted) };
  }

  /** Asks one server for its page; a failure is reported as a reason, never thrown. */
  private async askPart(request: MergeRequest, member: SetMember, cursor: string | undefined, retried = false, shareBase?: string): Promise<Part> {
    // A server the operator says lists alike for everyone, or a request of the stateless revision outside any session,
    // whose pages say themselves whether they are public.
    const mayReuse = member.listReuseMs !== undefined || (request.session === undefined && isStatelessRevision(request.protocolVersion));
    const pageKey = mayReuse ? ReusedPages.key(member.name, request.request.method, request.protocolVersion ?? '', cursor) : undefined;
    const kept = pageKey !== undefined ? this.pages.get(pageKey) : undefined;
    if (kept !== undefined) {
      const may = this.mayServeKept(member, request.auth);
      if (may === true || (await may)) return kept;
    }
    if (shareBase === undefined || !member.callerBlind) return this.fetchWithin(request.signal, request, member, cursor, pageKey, retried);
    const began = performance.now();
    const key = `${member.name}\n${cursor ?? ''}\n${shareBase}`;
    const part = await this.shared.join(key, request.signal, (signal) => this.fetchWithin(signal, request, member, cursor, pageKey, retried), () => ({ member, failure: 'upstream_timeout' }));
    if (part.failure !== 'upstream_timeout' || request.signal.aborted) return part;
    // The exchange this request joined began earlier, so its time ran out first: what is left of this request's own
    // time is asked alone, once.
    const left = member.listTimeoutMs - (performance.now() - began);
    return left >= 1 ? this.fetchWithin(request.signal, request, member, cursor, pageKey, retried, left) : part;
  }

  /** {@link fetchPart} within `ms` (default the server's list timeout), and no longer than `signal` stays unaborted. */
  private async fetchWithin(signal: AbortSignal, request: MergeRequest, member: SetMember, cursor: string | undefined, pageKey: string | undefined, retried: boolean, ms = member.listTimeoutMs): Promise<Part> {
    const deadline = deadlineSignal(signal, ms);
    try {
      return await this.fetchPart(request, member, cursor, pageKey, deadline.signal, retried);
    } finally {
      deadline.release();
    }
  }

  /** Asks one server for its page now, within `signal` (the request's, bounded by the server's list timeout). */
  private async fetchPart(request: MergeRequest, member: SetMember, cursor: string | undefined, pageKey: string | undefined, signal: AbortSignal, retried: boolean): Promise<Part> {
    let sessionId: string | undefined;
    let protocolVersion = request.protocolVersion;
    if (request.session) {
      const opened = await this.options.sessions.memberSession(request.session, member, signal, request.auth);
      if ('failed' in opened && !opened.refusal) return { member, failure: signal.aborted || opened.status === 504 ? 'upstream_timeout' : opened.status >= 500 ? 'upstream_unreachable' : 'upstream_session' };
      // A server the caller must first connect (connected accounts) opens no session for them: the list is asked
      // outside one, and the connect flow answers it (its part empty, with the link unless lists hide it) without
      // contacting the server.
      if (!('failed' in opened)) {
        sessionId = opened.id;
        protocolVersion = opened.protocolVersion ?? protocolVersion;
      }
    }
    const params = { ...(request.request.params as Record<string, unknown> | undefined) };
    if (cursor === undefined) delete params.cursor;
    else params.cursor = cursor;
    const message: JsonRpcRequest = { jsonrpc: '2.0', id: ownRequestId(), method: request.request.method, params };
    const answer = await callMember(member.upstream, {
      message,
      auth: request.auth,
      protocolVersion,
      ...(sessionId !== undefined ? { sessionId } : {}),
      headers: request.headers,
      signal,
      maxBytes: this.options.maxBytes,
    });
    if (answer.cut && signal.aborted) return { member, failure: 'upstream_timeout' };
    if (answer.status === 504) return { member, failure: 'upstream_timeout' };
    if (answer.status >= 500 || answer.cut) return { member, failure: 'upstream_unreachable' };
    // Read only for an answer that is not a 200: it decides nothing for one that is, and reading it parses the page,
    // which a merge reused byte for byte never does.
    const notOffered = answer.status !== 200 && offersNoList(answer);
    if (request.session && sessionId !== undefined && !retried && !notOffered && isLostSession(answer)) {
      // The server no longer knows the session (it restarted): open a new one, once.
      this.options.sessions.forgetMember(request.session, member.name, sessionId);
      return this.askPart(request, member, cursor, true);
    }
    // A server that keeps sessions refuses a request without one (400 naming the session, as a 2025-11-25 stdio
    // server or server-everything answers): not a passing failure, a request it never serves.
    if (sessionId === undefined && answer.status === 400 && !notOffered && isLostSession(answer)) return { member, failure: 'upstream_session', sessionless: true };
    if (answer.status !== 200 && !notOffered) return { member, failure: 'upstream_refused' };
    // Each request has an id of its own: without it, an unchanged list reads as the same bytes.
    const part: Part = { member, answer, page: pageBytesOf(answer.bytes, JSON.stringify(message.id)) };
    // Parsed for its hints only when it may have them: most pages are not public. The connect flow's answer (an
    // empty page with this caller's link) is never kept, whatever the operator said.
    if (pageKey !== undefined && !answer.byGateway && (member.listReuseMs !== undefined || part.page!.bytes.includes('"public"'))) {
      const response = answer.response;
      const result = response && 'result' in response ? (response.result as Record<string, unknown>) : undefined;
      // An error or an input-required answer is never served again, whatever the operator said.
      const reuseMs = member.listReuseMs !== undefined && result !== undefined && (result.resultType === undefined || result.resultType === 'complete') ? member.listReuseMs : reuseMsOf(result);
      this.pages.set(pageKey, part, part.page!.bytes.length, reuseMs);
    }
    return part;
  }

  /**
   * Whether a kept page of `member` may be served to this caller: always, but for a server in connected mode when
   * lists hide what the caller has not connected; then only to a caller who has connected it.
   */
  private mayServeKept(member: SetMember, auth: AuthInfo): boolean | Promise<boolean> {
    const connected = this.options.connected;
    if (connected === undefined || !connected.hide || !connected.servers.has(member.name)) return true;
    return connected.isConnected(member.name, auth);
  }

  /** The merged result as JSON text, reusing the last merge when every part's bytes are the same. */
  private mergedResult(method: string, answered: readonly Part[], unavailable: readonly string[], request: MergeRequest, wanted: ServerCursors | undefined): string {
    // Pins accepted or reloaded, or a definition seen that differs from its pin, change what a server's unchanged page
    // shows: their generation is part of the key, so a merge kept under an older one is compared with the pins again.
    // The revision too: a 2026-07-28 merge carries resultType and cacheScope, an earlier one does not.
    const pins = answered[0]?.member.pins;
    const keyOf = (): string => `${method}\n${isStatelessRevision(request.protocolVersion)}\n${answered.map((p) => p.member.name).join(',')}\n${JSON.stringify(wanted ?? null)}\n${pins?.generation ?? ''}`;
    const pages = answered.map((part) => part.page!);
    const last = this.memo.get(keyOf());
    if (last && unavailable.length === 0 && last.pages.length === pages.length && last.pages.every((page, i) => samePage(page, pages[i]!))) return last.result;
    // The list methods and their result keys are the policy's: one table of them.
    const itemsKey = LIST_SPECS.get(method)!.resultKey;
    const items: unknown[] = [];
    const missing = [...unavailable];
    const next: [string, string][] = [];
    let ttlMs: number | undefined = Infinity;
    let connect: Record<string, unknown> | undefined;
    for (const part of answered) {
      const response = part.answer!.response;
      const result = response && 'result' in response ? (response.result as Record<string, unknown>) : undefined;
      const listed = result?.[itemsKey];
      if (!Array.isArray(listed)) {
        // A server without prompts or resources says so with -32601: its part is empty, nothing failed.
        if (offersNoList(part.answer!)) continue;
        this.options.onFailure(part.member.name, method, response && 'error' in response ? 'upstream_refused' : 'upstream_invalid');
        // Its items are missing as a failed server's are: the client is told, and this merge is not kept as complete.
        missing.push(part.member.name);
        continue;
      }
      items.push(...this.exposedItems(part.member, method, listed, typeof result!.nextCursor !== 'string'));
      // A server the caller has not connected: the connect flow's note (why, and the link) is kept, by server name.
      // Only the gateway's own answer carries one: a server cannot pass a link of its own off as the gateway's.
      const noteKey = part.answer!.byGateway ? this.options.connected?.noteKey : undefined;
      const note = noteKey === undefined ? undefined : (result!._meta as Record<string, unknown> | undefined)?.[noteKey];
      if (note !== undefined) (connect ??= {})[part.member.name] = note;
      if (typeof result!.nextCursor === 'string') next.push([part.member.name, result!.nextCursor]);
      ttlMs = typeof result!.ttlMs === 'number' && ttlMs !== undefined ? Math.min(ttlMs, result!.ttlMs) : undefined;
    }
    const merged: Record<string, unknown> = { [itemsKey]: items };
    if (next.length > 0) merged.nextCursor = this.options.cursors.make(method, request.auth, next);
    if (ttlMs !== undefined && ttlMs !== Infinity) merged.ttlMs = ttlMs;
    // A merged list varies per caller (servers, policies): private, whether or not the pipeline filters it.
    if (isStatelessRevision(request.protocolVersion)) Object.assign(merged, { resultType: 'complete', cacheScope: 'private' });
    if (missing.length > 0 || connect !== undefined) {
      merged._meta = { ...(missing.length > 0 ? { [UNAVAILABLE_META_KEY]: missing } : {}), ...(connect !== undefined ? { [this.options.connected!.noteKey]: connect } : {}) };
    }
    const result = JSON.stringify(merged);
    // Only a complete merge without a per-caller cursor is worth keeping: the next request of anyone may reuse it.
    const bytes = pages.reduce((sum, page) => sum + page.bytes.length, result.length);
    if (missing.length === 0 && connect === undefined && next.length === 0 && bytes <= MAX_MEMO_BYTES) {
      if (this.memo.size >= MAX_MEMO_ENTRIES || this.memoBytes + bytes > MAX_MEMO_BYTES * 2) {
        this.memo.clear();
        this.memoBytes = 0;
      }
      // Kept under the generation the merge itself left: comparing its pages may have moved it.
      this.memo.set(keyOf(), { pages, result });
      this.memoBytes += bytes;
    }
    return result;
  }

  /**
   * A server's items as the endpoint shows them: its tools and prompts renamed, its unselected tools dropped, and
   * its tools compared with their pins (those that differ dropped in `enforce`).
   */
  private exposedItems(member: SetMember, method: string, listed: readonly unknown[], lastPage: boolean): unknown[] {
    const spec = LIST_SPECS.get(method)!;
    if (spec.kind === 'resource') {
      const claimed = listed.map((item) => (item as Record<string, unknown>)?.[spec.itemKey]).filter((uri): uri is string => typeof uri === 'string');
      this.options.routes.learn(member.name, claimed, method === 'resources/list' ? 'uris' : 'templates');
      return [...listed];
    }
    const exposed: unknown[] = [];
    const shown = method === 'tools/list' && member.pins ? member.pins.observe(member.name, listed.filter((item) => member.selects(String((item as Record<string, unknown> | null)?.name))), lastPage) : listed;
    for (const item of shown) {
      const name = (item as Record<string, unknown> | null)?.name;
      if (typeof name !== 'string') continue;
      if (method === 'tools/list' && !member.selects(name)) continue;
      exposed.push({ ...(item as Record<string, unknown>), name: exposeName(member.name, name) });
    }
    return exposed;
  }
}

/**
 * What requests for servers' pages must have in common to share one exchange with a server that is not told who
 * asks ({@link SetMember.callerBlind}; the server's name and cursor complete the key), or undefined when they may
 * not: only outside a session (a session's list is that session's). Everything else the server is sent is in it:
 * the method, the parameters, the revision and the client headers passed on. Made once per merged list.
 */
function sharedPartsKey(request: MergeRequest): string | undefined {
  if (request.session !== undefined) return undefined;
  const { cursor: _ignored, ...params } = (request.request.params ?? {}) as Record<string, unknown>;
  return JSON.stringify([request.request.method, request.protocolVersion ?? null, params, request.headers]);
}

/**
 * Whether an answer says the server does not know the session: 404, as MCP asks of it, or a 400 whose text speaks
 * of the session, as some servers answer (any other 400 is the server's answer to the request itself).
 */
export function isLostSession(answer: Pick<MemberAnswer, 'status' | 'text'>): boolean {
  return answer.status === 404 || (answer.status === 400 && /session/i.test(answer.text.slice(0, 1_024)));
}

/**
 * Whether a server answered a list with -32601 (Method not found) to this very request: it does not offer that list
 * (no prompts, no resources), whatever the status: a 404 under 2026-07-28, a 200 before it, a 400 from some servers.
 * The response must carry this request's own id, so a 404 for an unknown session or path is not taken for it.
 */
function offersNoList(answer: Pick<MemberAnswer, 'response'>): boolean {
  const response = answer.response;
  return response !== undefined && 'error' in response && response.error?.code === JsonRpcErrorCode.MethodNotFound;
}

/** `_meta` key of a merged list naming the servers left out of it. */
export const UNAVAILABLE_META_KEY = 'io.github.mcp-oauth-guard/unavailable';
/** Most merges kept for reuse (one per list method and server set, in practice a handful). */
const MAX_MEMO_ENTRIES = 16;
/** Largest merge kept for reuse, in bytes of its pages and code units of its result; all kept merges together stay under twice that. */
const MAX_MEMO_BYTES = 8 * 1_048_576;
