import type { IncomingMessage, ServerResponse } from 'node:http';
import { isStatelessRevision, negotiatedSessionVersion } from '../../core/mcp/protocol-version.js';
import { JsonRpcErrorCode, jsonRpcError, requestIdOf, type JsonRpcMessage, type JsonRpcRequest } from '../../core/wire/jsonrpc.js';
import { httpHandler, type GuardedRequest, type HttpHandlerContext } from '../../http/http-handler.js';
import { auditSessionRefused } from '../../http/audit-trail.js';
import { requestSessionId } from '../../http/request-headers.js';
import { holdSessionRefusals } from '../../http/held-session-refusals.js';
import { refuseSession, type SessionRefusedHook } from '../../http/session-gate.js';
import { writeAccepted, writeError, writeJson } from '../../http/write-response.js';
import type { AuthInfo } from '../../core/kernel/auth-info.js';
import type { GuardHttpResponse } from '../../core/guard/create-guard.js';
import { JSON_MEDIA_TYPE } from '../../http/media-type.js';
import type { ConnectedLists } from '../upstream-auth/connected-lists.js';
import { writeGatewayError } from '../upstream/gateway-error.js';
import { writeSessionOpenRefusal } from '../upstream/session-open-refusal.js';
import { DEFAULT_LIST_TIMEOUT_MS, type Upstream } from '../upstream/upstream.js';
import type { SessionSealer } from '../../core/session/session-seal.js';
import { CompositeSessions, type CompositeSession, type MemberSession } from './composite-sessions.js';
import { forwardToMember, handToMember, prepareClientResponse, watchForLostSession, type MemberTarget } from './forward-to-member.js';
import { ListCursors } from './list-cursor.js';
import { callMember, ownRequestId } from './member-call.js';
import { deadlineSignal } from './deadline-signal.js';
import { discoverResult, initializeResult, type GatewayInfo } from './merge-initialize.js';
import { ListMerger, noServerAnswered, type ListFailureListener } from './merge-lists.js';
import { MAX_PAGE_REUSE_MS } from './reused-pages.js';
import { ResourceRoutes, type ResourceClaimConflict } from './resource-routes.js';
import { ListenFanOut } from './listen-fan-out.js';
import { MergedStream } from './merged-stream.js';
import { EventIdVector } from './relabelled-events.js';
import { routeMessage, type MessageRoute } from './route-message.js';
import { readRequestId } from './server-request-ids.js';
import { learnProfile, profileOf, recallProfiles, type SetMember } from './set-member.js';
import type { KeptProfiles } from '../upstream-auth/kept-profile.js';
import type { ToolPins } from '../pins/tool-pins.js';

/** One server of {@link createServerSet}. */
export interface ServerSetEntry {
  readonly name: string;
  readonly upstream: Upstream;
  /** Whether a tool of its own name is exposed. Default: every tool. */
  readonly selects?: (tool: string) => boolean;
  /** Time allowed for its part of a merged list, in milliseconds. Default: the set's `listTimeoutMs`. */
  readonly listTimeoutMs?: number;
  /**
   * Its lists are the same for every caller: its pages are served again, to anyone, for this many milliseconds
   * (at most five minutes). Default: only pages it marks `cacheScope: "public"` (2026-07-28).
   */
  readonly listReuseMs?: number;
  /**
   * Its requests carry nothing of the caller (no per-caller credential, identity headers or environment), so that
   * identical list requests outside a session may share one exchange with it. Default false.
   */
  readonly callerBlind?: boolean;
  /** In connected mode: its kept profile (the credentials' `profile`). Default none. */
  readonly kept?: KeptProfiles;
}

/** Options of {@link createServerSet}. */
export interface ServerSetOptions {
  /** The servers, in configuration order (the order of merged lists, and of precedence for resources). */
  readonly servers: readonly ServerSetEntry[];
  /** Time allowed for each server's part of a merged list, and for opening a server's session, in milliseconds. Default 5 000. */
  readonly listTimeoutMs?: number;
  /** The pinned tool definitions (`MCP_AUTH_PINS`): every server's tools are compared with their pins. Default none. */
  readonly pins?: ToolPins;
  /** Bounds of clients' sessions (as a single upstream's). */
  readonly maxSessions: number;
  readonly maxSessionsPerCaller: number;
  readonly sessionIdleTimeoutMs: number;
  /** Most bytes read of one server's answer to the set's own requests (lists, `initialize`). Default 8 MiB. */
  readonly maxResponseBytes?: number;
  /** Key material for list cursors any replica opens (the sealed sessions' keys). Default: one key per process. */
  readonly cursorSecrets?: readonly Uint8Array[];
  /** The gateway's `serverInfo`. */
  readonly info: GatewayInfo;
  /** Told of each server left out of a merged list. */
  readonly onListFailure?: ListFailureListener;
  /** Told once of each resource URI or template two servers claim. */
  readonly onResourceConflict?: (conflict: ResourceClaimConflict) => void;
  /** Told of each request refused for naming an unknown session. */
  readonly onSessionRefused?: SessionRefusedHook;
  /**
   * Seals clients' session ids (`MCP_AUTH_SESSION_SECRET`) so that any replica serves them; give the HTTP servers
   * `PASS_THROUGH_SESSION_IDS` then. Default none.
   */
  readonly sessionSealer?: SessionSealer;
  /**
   * Decides a message again under the policy in force, for a resource request whose server became known only once
   * the set had listed resources: the pipeline decided it before its server's own rules could apply. Returns the
   * refusal to answer with, or undefined when allowed; a refusal is reported for `req` (decision hook, request log,
   * audit record, which names `server`, the one server the request is for, when there is one). Default none: no
   * second decision (tests only).
   */
  readonly recheck?: (message: JsonRpcMessage, auth: AuthInfo, req?: IncomingMessage, server?: string) => GuardHttpResponse | undefined;
  /** Connected accounts, when a server is in connected mode: what merged lists show of servers a caller has not connected. */
  readonly connectedLists?: ConnectedLists;
  /**
   * Whether the caller may use anything of the server of that name (it holds the server's own `requiredScopes`,
   * under the policy in force): a server it may not is never contacted on its behalf (no session opened, no list
   * asked), and is left out of its merged lists and of the capabilities answered to it. Default: every server.
   */
  readonly mayReach?: (server: string, auth: AuthInfo) => boolean;
}

/** Several upstreams behind one endpoint: an {@link Upstream} itself, with its servers. */
export interface ServerSet extends Upstream {
  /** Its servers, by name, in configuration order. */
  readonly servers: ReadonlyMap<string, Upstream>;
  /** Which server a resource URI (or template) goes to, as learnt from lists; undefined when none claims it. */
  serverOfResource(uri: string): string | undefined;
  /** Learns the resources a server listed outside a client's request (the start-up listing), so routes are known early. */
  learnResources(server: string, listed: { resources?: readonly string[]; resourceTemplates?: readonly string[] }): void;
}

export { DEFAULT_LIST_TIMEOUT_MS };
const DEFAULT_MAX_RESPONSE_BYTES = 8 * 1_048_576;
/** The end of a merged list's answer, after its result. */
const CLOSING_BRACE = Buffer.from('}');

/**
 * Serves several MCP servers behind one endpoint. Tools and prompts are exposed as `<server>__<name>`, resources
 * keep their URIs and go to the server that listed them; lists are merged; each request goes to its server's own
 * upstream (HTTP or stdio), which forwards it as it would alone. Under revisions with sessions the gateway answers
 * `initialize` itself and opens each server's session on first use ({@link CompositeSessions}).
 *
 * @example
 * const set = createServerSet({ servers: [{ name: 'notes', upstream: notes }, { name: 'files', upstream: files }], info, maxSessions: 10_000, maxSessionsPerCaller: 100, sessionIdleTimeoutMs: 3_600_000 });
 * mcpOAuthGuard({ ...options, handler: set });
 */
export function createServerSet(options: ServerSetOptions): ServerSet {
  const listTimeoutMs = options.listTimeoutMs ?? DEFAULT_LIST_TIMEOUT_MS;
  const members: SetMember[] = options.servers.map((server) => ({
    name: server.name,
    upstream: server.upstream,
    selects: server.selects ?? (() => true),
    ...(options.pins ? { pins: options.pins } : {}),
    listTimeoutMs: server.listTimeoutMs ?? listTimeoutMs,
    ...(server.listReuseMs !== undefined ? { listReuseMs: Math.min(server.listReuseMs, MAX_PAGE_REUSE_MS) } : {}),
    callerBlind: server.callerBlind === true,
    profile: undefined,
    ...(server.kept ? { kept: server.kept } : {}),
  }));
  const router = new ServerSetRouter(members, options, listTimeoutMs);
  return {
    ...httpHandler((req, res, context) => router.handle(req, res, context)),
    name: 'servers',
    transport: 'http',
    servers: new Map(members.map((m) => [m.name, m.upstream])),
    serverOfResource: (uri) => router.routes.serverOf(uri),
    learnResources(server, listed) {
      if (listed.resources) router.routes.learn(server, listed.resources, 'uris');
      if (listed.resourceTemplates) router.routes.learn(server, listed.resourceTemplates, 'templates');
    },
    get inFlight() {
      return members.reduce((sum, m) => sum + m.upstream.inFlight, 0);
    },
    get sessions() {
      return router.sessions.size;
    },
    endStreams(which) {
      router.endStreams();
      for (const member of members) member.upstream.endStreams(which);
    },
    async close() {
      router.sessions.clear();
      await Promise.all(members.map((m) => m.upstream.close()));
    },
  };
}

/** The per-request work of a server set. */
class ServerSetRouter {
  readonly sessions: CompositeSessions;
  private readonly byName: ReadonlyMap<string, SetMember>;
  readonly routes: ResourceRoutes;
  private readonly lists: ListMerger;
  private readonly maxBytes: number;
  private readonly streams = new Set<MergedStream>();
  /** URIs no server claimed when last looked for, and when. */
  private readonly unrouted = new RecentMisses(UNROUTED_MEMORY_MS, MAX_UNROUTED_REMEMBERED);
  private readonly listens: ListenFanOut;
  /** The last merged result written, with its bytes (see `resultBytes`). */
  private lastResult: { readonly text: string; readonly bytes: Buffer } | undefined;

  constructor(
    private readonly members: readonly SetMember[],
    private readonly options: ServerSetOptions,
    private readonly listTimeoutMs: number,
  ) {
    this.maxBytes = options.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES;
    this.byName = new Map(members.map((m) => [m.name, m]));
    this.routes = new ResourceRoutes(members.map((m) => m.name), options.onResourceConflict);
    this.sessions = new CompositeSessions(members, {
      maxSessions: options.maxSessions,
      maxSessionsPerCaller: options.maxSessionsPerCaller,
      idleTimeoutMs: options.sessionIdleTimeoutMs,
      maxBytes: this.maxBytes,
      openTimeoutMs: listTimeoutMs,
      ...(options.sessionSealer ? { sealer: options.sessionSealer } : {}),
    });
    this.listens = new ListenFanOut(members, this.routes, (server) => this.lists.forgetPages(server));
    const configuration = members.map((m) => m.name).join(',');
    this.lists = new ListMerger({
      members,
      sessions: this.sessions,
      cursors: new ListCursors({ configuration, ...(options.cursorSecrets ? { secrets: options.cursorSecrets } : {}) }),
      routes: this.routes,
      maxBytes: this.maxBytes,
      onFailure: options.onListFailure ?? (() => {}),
      ...(options.connectedLists ? { connected: options.connectedLists } : {}),
    });
  }

  handle(req: GuardedRequest, res: ServerResponse, context: HttpHandlerContext): void | Promise<void> {
    const stateless = isStatelessRevision(context.protocolVersion);
    if (req.method === 'DELETE') return this.endSession(req, res, context);
    if (req.method === 'GET') return this.stream(req, res, context);
    const message = req.body;
    if (message === undefined) {
      writeJson(res, 405, jsonRpcError(null, JsonRpcErrorCode.InvalidRequest, 'Method not allowed'));
      return;
    }
    if (!stateless && 'method' in message && message.method === 'initialize') return this.initialize(res, context, message as JsonRpcRequest);
    const sessionId = requestSessionId(req, context.protocolVersion);
    if (!stateless && sessionId !== undefined) return this.handleInSession(req, res, context, message, sessionId);
    // Without a session, a request for one server goes straight to it: no promise of the set's own on the way.
    const route = routeMessage(message, this.byName, this.routes);
    if (route.to === 'member') return forwardToMember(req, res, context, { member: route.member, message: route.message, ...(route.localName !== undefined ? { localName: route.localName } : {}), sessionId: undefined, protocolVersion: context.protocolVersion, clientSessionId: undefined });
    return this.route(req, res, context, message, undefined, undefined, route);
  }

  /** A request naming the client's session: served within it, once it is found for this caller. */
  private async handleInSession(req: GuardedRequest, res: ServerResponse, context: HttpHandlerContext, message: JsonRpcMessage, sessionId: string): Promise<void> {
    const found = await this.sessions.find(sessionId, context.auth);
    if ('refused' in found) {
      refuseSession(req, res, { reason: found.refused, sessionId }, context.auth, this.options.onSessionRefused);
      return;
    }
    try {
      return await this.route(req, res, context, message, found.session, sessionId);
    } finally {
      found.release();
    }
  }

  private async route(
    req: GuardedRequest,
    res: ServerResponse,
    context: HttpHandlerContext,
    message: JsonRpcMessage,
    session: CompositeSession | undefined,
    sessionId: string | undefined,
    routed?: MessageRoute,
  ): Promise<void> {
    const id = requestIdOf(message);
    let route = routed ?? routeMessage(message, this.byName, this.routes);
    if (route.to === 'unrouted_resource' && (await this.learnResources(req, context, session, route.uri))) {
      // Routes are learnt from lists: list the resources for this caller, then look again. The pipeline decided
      // the request before its server was known, so under the gateway-wide rules alone: decide it again now that
      // the server's own rules apply.
      route = routeMessage(message, this.byName, this.routes);
      const refused = route.to === 'member' ? this.options.recheck?.(message, context.auth, req, route.member.name) : undefined;
      if (refused) {
        writeError(res, refused);
        return;
      }
    }
    switch (route.to) {
      case 'gateway':
        return this.answerForGateway(res, context, message, id);
      case 'merge':
        return this.mergeList(req, res, context, message as JsonRpcRequest, session);
      case 'member':
        return this.forwardRouted(req, res, context, route, session, sessionId);
      case 'unrouted_resource':
        writeJson(res, 200, jsonRpcError(id, isStatelessRevision(context.protocolVersion) ? JsonRpcErrorCode.InvalidParams : JsonRpcErrorCode.ResourceNotFound, 'Resource not found'));
        return;
      case 'listen': {
        const uris = (((message as JsonRpcRequest).params as { notifications?: { resourceSubscriptions?: unknown } } | undefined)?.notifications?.resourceSubscriptions ?? []) as unknown[];
        if (uris.some((uri) => typeof uri === 'string' && this.routes.serverOf(uri) === undefined) && (await this.learnResources(req, context, session))) {
          // As for a resource request: decided before its servers were known, so decided again now.
          const refused = this.options.recheck?.(message, context.auth, req);
          if (refused) {
            writeError(res, refused);
            return;
          }
        }
        return this.listens.listen(req, res, context, message as JsonRpcRequest, this.reachable(context.auth));
      }
      case 'opened':
        if ('method' in message && message.method === 'notifications/cancelled' && this.listens.cancel(context.auth, (message.params as { requestId?: unknown } | undefined)?.requestId)) {
          writeAccepted(res);
          return;
        }
        return this.toOpenedMembers(res, context, message, session, id);
      case 'asker':
        return this.answerAsker(req, res, context, message, session, sessionId);
      case 'refused':
        if (route.audit !== undefined) auditSessionRefused(req, route.audit);
        if (id === null) writeAccepted(res);
        else writeJson(res, route.code === JsonRpcErrorCode.MethodNotFound && isStatelessRevision(context.protocolVersion) ? 404 : 200, jsonRpcError(id, route.code, route.message));
        return;
    }
  }

  /**
   * A request routed to one server, within the client's session with it when there is one (opened now on first
   * use). When the server answers that it no longer knows that session (it restarted), a new one is opened and the
   * request sent again, once; a refusal of the lost session is then not reported (log, audit): the client is not
   * refused.
   */
  private async forwardRouted(req: GuardedRequest, res: ServerResponse, context: HttpHandlerContext, route: MemberRoute, session: CompositeSession | undefined, sessionId: string | undefined): Promise<void> {
    if (!session) {
      // No session (2026-07-28, or a server without sessions): straight to the server.
      return forwardToMember(req, res, context, { member: route.member, message: route.message, ...(route.localName !== undefined ? { localName: route.localName } : {}), sessionId: undefined, protocolVersion: context.protocolVersion, clientSessionId: sessionId });
    }
    const id = requestIdOf(req.body);
    const clientCapabilities = session.initialize.params?.capabilities;
    const base = { member: route.member, message: route.message, ...(route.localName !== undefined ? { localName: route.localName } : {}), clientSessionId: sessionId, ...(clientCapabilities !== undefined ? { clientCapabilities } : {}) };
    const target = async (): Promise<MemberTarget | undefined> => {
      const opened = await this.sessions.memberSession(session, route.member, context.signal, context.auth);
      // The caller must first connect their account there: the connect flow that refused the session answers the
      // request itself, outside a session, in the one shape it gives every such answer (the server is not asked).
      if ('failed' in opened && opened.byGateway) return { ...base, sessionId: undefined, protocolVersion: context.protocolVersion };
      if ('failed' in opened) {
        // The server's own URL elicitation required error is passed on as it gave it.
        if (opened.refusal) writeJson(res, 200, jsonRpcError(id, opened.refusal.code, opened.refusal.message, opened.refusal.data));
        else writeGatewayError(res, opened.status >= 500 ? opened.status : 502, id, `Bad gateway: the server ${route.member.name} could not be reached`);
        return undefined;
      }
      return { ...base, sessionId: opened.id, protocolVersion: opened.protocolVersion ?? context.protocolVersion };
    };
    const first = await target();
    if (!first) return;
    if (first.sessionId === undefined) return forwardToMember(req, res, context, first);
    prepareClientResponse(res, sessionId, route.member.name, id);
    const watch = watchForLostSession(res);
    // The server's upstream may refuse the lost session itself (a stdio process that died, a session its registry
    // forgot): that refusal is reported only if the client gets it, never when the request is sent again.
    const held = holdSessionRefusals(req);
    let again = false;
    try {
      await handToMember(req, res, context, first);
      again = watch.lost && !context.signal.aborted;
    } finally {
      watch.restore();
      if (again) held.drop();
      else held.report();
    }
    if (!again) return;
    this.sessions.forgetMember(session, route.member.name, first.sessionId);
    const next = await target();
    if (next) await handToMember(req, res, context, next);
  }

  /** `initialize`: the gateway opens the client's session and answers with what the servers offer. */
  private async initialize(res: ServerResponse, context: HttpHandlerContext, message: JsonRpcRequest): Promise<void> {
    const params = (message.params ?? {}) as Record<string, unknown>;
    // Kept with the session for opening its servers later: only what they need, and bounded, since the request
    // itself may be as large as the body limit.
    const kept: JsonRpcRequest = { jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: params.protocolVersion, capabilities: params.capabilities ?? {}, clientInfo: params.clientInfo } };
    if (JSON.stringify(kept.params).length > MAX_KEPT_INITIALIZE_CHARS) {
      writeJson(res, 200, jsonRpcError(message.id, JsonRpcErrorCode.InvalidParams, `Invalid params: the client's capabilities and clientInfo take more than ${MAX_KEPT_INITIALIZE_CHARS} characters`));
      return;
    }
    // Servers not yet known are opened with the session, so that the capabilities and instructions answered are
    // theirs; the others open when first used (sealed, every HTTP server opens now: see CompositeSessions).
    const reachable = this.reachable(context.auth);
    const opened = await this.sessions.open(context.auth, kept, negotiatedSessionVersion(params.protocolVersion), context.signal, reachable);
    if (opened === 'no_identity' || opened === 'busy' || opened === 'unsealable') {
      writeSessionRefusal(res, message.id, opened);
      return;
    }
    await recallProfiles(reachable);
    const unknown = reachable.filter((m) => m.profile === undefined || m.profile === m.recalled);
    if (unknown.length > 0) {
      const found = await this.sessions.find(opened, context.auth);
      if ('session' in found) {
        await Promise.all(unknown.map((m) => this.sessions.memberSession(found.session, m, context.signal, context.auth)));
        found.release();
      }
    }
    const answer = initializeResult(params.protocolVersion, reachable, this.options.info);
    writeJson(res, 200, { jsonrpc: '2.0', id: message.id, result: answer }, { 'Mcp-Session-Id': opened });
  }

  private async answerForGateway(res: ServerResponse, context: HttpHandlerContext, message: JsonRpcMessage, id: ReturnType<typeof requestIdOf>): Promise<void> {
    const method = 'method' in message ? message.method : '';
    if (method === 'notifications/initialized' || id === null) {
      writeAccepted(res);
      return;
    }
    if (method === 'server/discover') {
      const reachable = this.reachable(context.auth);
      await recallProfiles(reachable);
      const timedOut = await this.discoverUnknown(reachable, context, (message as JsonRpcRequest).params);
      // As for a merged list: a server that did not answer is left out, and only when none did is the answer an error
      // (an empty list of revisions would tell the client that none is supported).
      if (reachable.length > 0 && !reachable.some((m) => m.profile?.supportedVersions !== undefined)) {
        const failed = noServerAnswered(method, reachable.every((m) => timedOut.has(m.name)));
        writeGatewayError(res, failed.status, id, failed.message);
        return;
      }
      writeJson(res, 200, { jsonrpc: '2.0', id, result: discoverResult(reachable, this.options.info) });
      return;
    }
    // ping, or initialize under a stateless revision (which has none): an empty result, as MCP's ping.
    if (method === 'initialize') writeJson(res, 200, jsonRpcError(id, JsonRpcErrorCode.MethodNotFound, 'Method not found: initialize'));
    else writeJson(res, 200, { jsonrpc: '2.0', id, result: {} });
  }

  /**
   * Asks `server/discover` of every server whose revisions are not known yet, in parallel, with the client's
   * `_meta` (2026-07-28 servers refuse a request without its protocol version and capabilities). A server that
   * answered without them is not asked again for a while; one that could not be reached, did not answer in time, or
   * refused for now (401, 403, 408, 429) is asked again next time, as a list would be.
   *
   * @returns The names of the servers asked that did not answer in time.
   */
  private async discoverUnknown(members: readonly SetMember[], context: HttpHandlerContext, clientParams: JsonRpcRequest['params']): Promise<ReadonlySet<string>> {
    const meta = (clientParams as { _meta?: unknown } | undefined)?._meta;
    const timedOut = new Set<string>();
    await Promise.all(
      members
        .filter((m) => m.profile?.supportedVersions === undefined && Date.now() - (m.discoverAskedAt ?? -Infinity) >= DISCOVER_RETRY_MS)
        .map(async (member) => {
          member.discoverAskedAt = Date.now();
          const deadline = deadlineSignal(context.signal, member.listTimeoutMs);
          const answer = await callMember(member.upstream, {
            message: { jsonrpc: '2.0', id: ownRequestId(), method: 'server/discover', params: meta === undefined ? {} : { _meta: meta } },
            auth: context.auth,
            protocolVersion: context.protocolVersion,
            signal: deadline.signal,
            maxBytes: this.maxBytes,
          }).finally(deadline.release);
          // A failure, or a refusal that may pass (the upstream's authorization or rate limit, a timeout): asked again
          // next time. Only a server that answered without revisions (a 404, 405, a JSON-RPC error) waits.
          if (answer.status >= 500 || answer.cut || TRANSIENT_REFUSALS.has(answer.status)) {
            member.discoverAskedAt = undefined;
            if (answer.status === 504 || deadline.signal.aborted) timedOut.add(member.name);
            return;
          }
          const response = answer.response;
          const profile = response && 'result' in response ? profileOf(response.result) : undefined;
          if (profile) learnProfile(member, profile);
        }),
    );
    return timedOut;
  }

  private async mergeList(req: GuardedRequest, res: ServerResponse, context: HttpHandlerContext, message: JsonRpcRequest, session: CompositeSession | undefined): Promise<void> {
    const outcome = await this.lists.merge({ request: message, auth: context.auth, protocolVersion: context.protocolVersion, signal: context.signal, session, headers: passedHeaders(req), members: this.reachable(context.auth) });
    if (res.writableEnded || context.signal.aborted) return;
    if ('refused' in outcome) {
      writeJson(res, 400, jsonRpcError(message.id, JsonRpcErrorCode.InvalidParams, 'Invalid params: the cursor is not one this endpoint gave'));
      return;
    }
    if ('failed' in outcome) {
      writeGatewayError(res, outcome.failed.status, message.id, outcome.failed.message);
      return;
    }
    // As bytes, never as one string: the result spliced into a template is a V8 cons string, whose UTF-8 length and
    // encoding V8 computes a character at a time, about 2.5 ms for a 900-tool list against 0.2 ms for bytes. Written
    // in three parts, in one corked write: the result's bytes, reused from the last merge, are not copied.
    const head = Buffer.from(`{"jsonrpc":"2.0","id":${JSON.stringify(message.id)},"result":`);
    const result = this.resultBytes(outcome.result);
    res.writeHead(200, { 'Content-Type': JSON_MEDIA_TYPE, 'Content-Length': head.length + result.length + CLOSING_BRACE.length });
    res.cork();
    res.write(head);
    res.write(result);
    res.end(CLOSING_BRACE);
  }

  /** A merged result as UTF-8: the last one's bytes again when the merge was reused (the very same string). */
  private resultBytes(result: string): Buffer {
    const last = this.lastResult;
    if (last !== undefined && last.text === result) return last.bytes;
    const bytes = Buffer.from(result);
    this.lastResult = { text: result, bytes };
    return bytes;
  }

  /** Lists resources and templates for this caller, to learn which server holds which URI. */
  /**
   * Lists every server's resources and templates for this caller (every page, up to a bound), to learn which
   * server holds which URI. False without listing when `uri` was looked for in vain moments ago: a client
   * naming unknown URIs must not cost a listing of every server each time.
   */
  private async learnResources(req: GuardedRequest, context: HttpHandlerContext, session: CompositeSession | undefined, uri?: string): Promise<boolean> {
    if (uri !== undefined && this.unrouted.recent(uri)) return false;
    const headers = passedHeaders(req);
    const members = this.reachable(context.auth);
    await Promise.all(
      ['resources/list', 'resources/templates/list'].map(async (method) => {
        let cursor: string | undefined;
        for (let page = 0; page < MAX_LEARNING_PAGES; page++) {
          const request: JsonRpcRequest = { jsonrpc: '2.0', id: 0, method, params: cursor === undefined ? {} : { cursor } };
          const outcome = await this.lists.merge({ request, auth: context.auth, protocolVersion: context.protocolVersion, signal: context.signal, session, headers, members });
          cursor = 'result' in outcome ? ((JSON.parse(outcome.result) as { nextCursor?: unknown }).nextCursor as string | undefined) : undefined;
          if (typeof cursor !== 'string') break;
        }
      }),
    );
    if (uri !== undefined && this.routes.serverOf(uri) === undefined) this.unrouted.add(uri);
    return true;
  }

  /** A notification or `logging/setLevel`: to every server the client's session has opened. */
  private async toOpenedMembers(res: ServerResponse, context: HttpHandlerContext, message: JsonRpcMessage, session: CompositeSession | undefined, id: ReturnType<typeof requestIdOf>): Promise<void> {
    if (session) {
      const level = 'method' in message && message.method === 'logging/setLevel' ? (message.params as { level?: unknown } | undefined)?.level : undefined;
      // A level is one short word (RFC 5424 severities): anything else is not kept.
      if (typeof level === 'string' && level.length <= 16) session.logLevel = level;
      await Promise.all(
        this.reachable(context.auth).map(async (member) => {
          const state = session.members.get(member.name);
          if (state === undefined) return;
          const opened = await state;
          if ('failed' in opened) return;
          const deadline = deadlineSignal(context.signal, this.listTimeoutMs);
          await callMember(member.upstream, {
            message,
            auth: context.auth,
            protocolVersion: opened.protocolVersion,
            ...(opened.id !== undefined ? { sessionId: opened.id } : {}),
            signal: deadline.signal,
            maxBytes: this.maxBytes,
          }).finally(deadline.release);
        }),
      );
    }
    if (id === null) writeAccepted(res);
    else writeJson(res, 200, { jsonrpc: '2.0', id, result: {} });
  }

  /** A client's answer to a server's request: to the server that asked, with the id it gave. */
  private async answerAsker(req: GuardedRequest, res: ServerResponse, context: HttpHandlerContext, message: JsonRpcMessage, session: CompositeSession | undefined, sessionId: string | undefined): Promise<void> {
    const asked = readRequestId('id' in message ? message.id : null);
    const member = asked ? this.byName.get(asked.server) : undefined;
    const state = member && session ? session.members.get(member.name) : undefined;
    const opened = state === undefined ? undefined : await state;
    if (!asked || !member || (session && (!opened || 'failed' in opened))) {
      // An answer to nothing the set relayed: nobody is waiting for it.
      writeAccepted(res);
      return;
    }
    const memberSession = opened && !('failed' in opened) ? opened : undefined;
    return forwardToMember(req, res, context, {
      member,
      message: { ...message, id: asked.id } as JsonRpcMessage,
      sessionId: memberSession?.id,
      protocolVersion: memberSession?.protocolVersion ?? context.protocolVersion,
      clientSessionId: sessionId,
    });
  }

  /** GET: the client's stream, merging the streams of every server its session has opened. */
  private async stream(req: GuardedRequest, res: ServerResponse, context: HttpHandlerContext): Promise<void> {
    const sessionId = requestSessionId(req, context.protocolVersion);
    if (sessionId === undefined || isStatelessRevision(context.protocolVersion)) {
      writeJson(res, 405, jsonRpcError(null, JsonRpcErrorCode.InvalidRequest, 'Method not allowed: a stream needs a session'), { Allow: 'POST, DELETE' });
      return;
    }
    const found = await this.sessions.find(sessionId, context.auth);
    if ('refused' in found) {
      refuseSession(req, res, { reason: found.refused, sessionId }, context.auth, this.options.onSessionRefused);
      return;
    }
    const session = found.session;
    const lastEventId = req.headers['last-event-id'];
    const resumeFrom = EventIdVector.read(typeof lastEventId === 'string' ? lastEventId : undefined, new Set(this.byName.keys()));
    const merged = new MergedStream(res, context.auth, context.signal, resumeFrom, (server) => this.lists.forgetPages(server));
    this.streams.add(merged);
    const previous = session.onOpened;
    const attach = (member: SetMember, opened: MemberSession): void => merged.attach(member, opened);
    session.onOpened = attach;
    try {
      for (const member of this.members) {
        const state = session.members.get(member.name);
        if (state === undefined) continue;
        void Promise.resolve(state).then((opened) => {
          if (!('failed' in opened)) merged.attach(member, opened);
        });
      }
      await merged.done;
    } finally {
      if (session.onOpened === attach) session.onOpened = previous;
      this.streams.delete(merged);
      found.release();
    }
  }

  /** The servers the caller may use anything of (see `ServerSetOptions.mayReach`): all of them, as one array, most often. */
  private reachable(auth: AuthInfo): readonly SetMember[] {
    const mayReach = this.options.mayReach;
    if (mayReach === undefined) return this.members;
    let some: SetMember[] | undefined;
    for (let i = 0; i < this.members.length; i++) {
      const member = this.members[i]!;
      if (!mayReach(member.name, auth)) some ??= this.members.slice(0, i);
      else some?.push(member);
    }
    return some ?? this.members;
  }

  /** Ends every client's GET stream (shutdown: they never end by themselves). */
  endStreams(): void {
    for (const stream of [...this.streams]) stream.end();
  }

  /** DELETE: ends the client's session and every server session it opened. */
  private async endSession(req: GuardedRequest, res: ServerResponse, context: HttpHandlerContext): Promise<void> {
    const sessionId = requestSessionId(req, context.protocolVersion);
    if (sessionId === undefined) {
      writeJson(res, 400, jsonRpcError(null, JsonRpcErrorCode.InvalidRequest, 'Bad request: DELETE needs an Mcp-Session-Id'));
      return;
    }
    const found = await this.sessions.find(sessionId, context.auth);
    if ('refused' in found) {
      refuseSession(req, res, { reason: found.refused, sessionId }, context.auth, this.options.onSessionRefused);
      return;
    }
    found.release();
    await this.sessions.end(sessionId, found.session);
    res.writeHead(200, { 'Content-Length': '0' }).end();
  }
}

/** Least time between two `server/discover` requests to a server that did not give its revisions, in milliseconds. */
const DISCOVER_RETRY_MS = 60_000;
/** HTTP statuses of a refusal that may pass (authorization, a timeout, a rate limit): not a server without revisions. */
const TRANSIENT_REFUSALS: ReadonlySet<number> = new Set([401, 403, 408, 429]);

/** Largest `initialize` params (capabilities and clientInfo) kept with a client's session, in characters. */
const MAX_KEPT_INITIALIZE_CHARS = 8_192;
/** Most pages of each resource list read to learn where a URI belongs. */
const MAX_LEARNING_PAGES = 10;
/** How long a URI no server claims is not looked for again, in milliseconds. */
const UNROUTED_MEMORY_MS = 5_000;
/** Most such URIs remembered. */
const MAX_UNROUTED_REMEMBERED = 1_000;

/** Keys looked for in vain, each remembered for a while; bounded, oldest out first. */
class RecentMisses {
  private readonly seen = new Map<string, number>();

  constructor(
    private readonly forMs: number,
    private readonly max: number,
  ) {}

  recent(key: string): boolean {
    const at = this.seen.get(key);
    return at !== undefined && Date.now() - at < this.forMs;
  }

  add(key: string): void {
    if (key.length > 2_048) return;
    this.seen.delete(key);
    this.seen.set(key, Date.now());
    if (this.seen.size > this.max) this.seen.delete(this.seen.keys().next().value as string);
  }
}

/** A route to one server. */
type MemberRoute = Extract<MessageRoute, { to: 'member' }>;

/** The answer to an `initialize` whose session could not be opened. */
function writeSessionRefusal(res: ServerResponse, id: JsonRpcRequest['id'], refusal: 'no_identity' | 'busy' | 'unsealable'): void {
  if (refusal !== 'unsealable') writeSessionOpenRefusal(res, id, refusal);
  else writeGatewayError(res, 502, id, 'Bad gateway: the servers\' sessions do not fit in a sealed session id');
}

/** The client headers a server set passes on in its own requests to servers (as the upstreams' allow-list would). */
function passedHeaders(req: GuardedRequest): GuardedRequest['headers'] {
  const headers: GuardedRequest['headers'] = {};
  for (const name of ['accept-language', 'user-agent']) if (req.headers[name] !== undefined) headers[name] = req.headers[name];
  return headers;
}
