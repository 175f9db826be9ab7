import { randomBytes, randomUUID } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { acceptsMediaType, EVENT_STREAM_MEDIA_TYPE } from '../../../http/media-type.js';
import { jsonRpcError, requestIdOf, type JsonRpcId, type JsonRpcMessage, type JsonRpcNotification, type JsonRpcRequest, type JsonRpcResponse } from '../../../core/wire/jsonrpc.js';
import { acceptsClientResponses, acceptsPrimingEvent, httpStatusForResponse, isStatelessRevision, mayStreamServerMessage } from '../../../core/mcp/protocol-version.js';
import type { BoundSession } from '../../../core/session/session-registry.js';
import type { SessionSealer } from '../../../core/session/session-seal.js';
import { ConfigurationError, RATE_LIMITED_JSONRPC_CODE, UNAVAILABLE_JSONRPC_CODE } from '../../../core/kernel/errors.js';
import { createPendingRequestIds } from '../../../core/mcp/pending-request-ids.js';
import { filterJsonText, UNFILTERABLE, unfilterableAnswer, UNKNOWN_REQUEST } from '../../../core/policy/response-filter.js';
import { httpHandler, type GuardedRequest, type HttpHandlerContext } from '../../../http/http-handler.js';
import { requestSessionId, sessionIdHeader } from '../../../http/request-headers.js';
import { firstHeader } from '../../../http/request-headers.js';
import { startEventStream, writeAccepted, writeEvent, writeEventWithId, writeJson, writePendingIdRefusal } from '../../../http/write-response.js';
import { childEnvironment, withCallerIdentity } from './child-environment.js';
import { createChildProcessPool, type ChildRefusal, type PooledChild } from './child-process-pool.js';
import { createSessionEventStreams, type ResumableEventStream, type SessionEventStreams, type StreamOwner } from '../session-event-streams.js';
import { stdioInteger } from './stdio-integer-settings.js';
import type { StdioStartOutcomes, StdioStartWatch } from './stdio-start-outcome.js';
import { startStdioChild, type ChildEndReason, type ChildLogEvent, type RequestSink, type StdioChild } from './stdio-child.js';
import { GATEWAY_JSONRPC_CODE, SESSION_NOT_FOUND_JSONRPC_CODE, type SessionRefusal, type UpstreamFailure, type UpstreamProxy } from '../http/upstream-proxy.js';

/** Options of {@link createStdioUpstream}. */
export interface StdioUpstreamOptions {
  /** Program of the stdio MCP server, e.g. `python3`; looked up on the child's `PATH` unless it has a `/`. */
  command: string;
  /** Its arguments. Default none. */
  args?: readonly string[];
  /** Its working directory. Default: the gateway's. */
  cwd?: string;
  /**
   * The child's whole environment. Default: `PATH`, `HOME` and `LANG` from the gateway's (see
   * `childEnvironment`); nothing else, so none of the gateway's settings or secrets reach it.
   */
  env?: Readonly<Record<string, string>>;
  /** Adds `MCP_CALLER_SUBJECT` and `MCP_CALLER_CLIENT_ID` of the caller the child serves to its environment. Never the token. Default false. */
  identityEnv?: boolean;
  /** Most children running at once; past it, a new session gets 429. Default 32. */
  maxProcesses?: number;
  /** Most children one caller (issuer, subject, client) holds; past it, 429. Default 4. */
  maxProcessesPerCaller?: number;
  /** A child with no request or stream in progress for this long is stopped, in milliseconds. Default 600 000 (10 minutes). */
  processIdleTimeoutMs?: number;
  /**
   * Time a request may wait for the child's next message about it, in milliseconds; then 504 (or the end of
   * its event stream) and the child is told the request is cancelled. Default 300 000, at most 86 400 000 (a day).
   */
  idleTimeoutMs?: number;
  /** Time between SIGTERM and SIGKILL when a child is stopped, in milliseconds. Default 5 000. */
  stopTimeoutMs?: number;
  /** Largest line (one JSON-RPC message) a child may write on stdout, in bytes; a longer one ends the child. Default 4 194 304 (4 MiB). */
  maxLineBytes?: number;
  /**
   * Most bytes written to a child's stdin that it has not read yet, in bytes. Past it the session's next client
   * message gets 503 with `Retry-After` (a child that stops reading must not make the gateway hold what clients
   * send it); the child is not stopped, and the client may retry once it reads again. Default 4 194 304 (4 MiB).
   */
  maxStdinBytes?: number;
  /**
   * Most bytes of event-stream events one session keeps so that a client whose stream broke can resume it
   * with `Last-Event-ID` (2025 revisions; see `createSessionEventStreams`); the oldest are forgotten first.
   * 0 turns resumable streams off: no event ids, and a closed stream cancels its request. Default 1 048 576 (1 MiB).
   */
  replayBufferBytes?: number;
  /**
   * How long, in milliseconds, events are kept for a resume, and how long a request whose client lost its
   * stream keeps running for the client to resume it; then it is cancelled. Default 60 000.
   */
  replayWindowMs?: number;
  /** Clock for idle expiry, in milliseconds. Default `Date.now`. */
  now?: () => number;
  /**
   * Receives the children's log events (started, exited and why, stderr lines, stdout lines that are not
   * JSON), each with the session id. Default: one JSON line each on stderr.
   */
  log?: (event: ChildLogEvent) => void;
  /** Called when an exchange fails (the child ended, timed out, or a bound refused it), for logs. */
  onUpstreamError?: (req: GuardedRequest, failure: UpstreamFailure) => void;
  /** Called when a request naming a session is refused with 404, for logs. Errors it throws are ignored. */
  onSessionRefused?: (req: GuardedRequest, refusal: SessionRefusal) => void;
  /**
   * Seals the session ids given to clients (`MCP_AUTH_SESSION_SECRET`, see `createSessionSealer`) with the id of
   * this upstream instance: a process lives in the gateway that started it, so only that gateway opens the id, and
   * any other (another replica, or this one after a restart) answers 404 like an unknown session, and the client
   * starts a new one. Default none: the session ids are the gateway's own, known to this process only.
   */
  sessionSealer?: SessionSealer;
  /** Told how each session process's start went (it answered, or ended before it did), for readiness. */
  stdioStarts?: Pick<StdioStartOutcomes, 'watch'>;
}

/** The stdio upstream: an HTTP handler for the request pipeline, with what a graceful shutdown needs. */
export interface StdioUpstream extends UpstreamProxy {
  /** Children running, counting those being stopped. */
  readonly processes: number;
  /** Ends every exchange and stops every child; resolves once all children exited. */
  close(): Promise<void>;
}

/** JSON-RPC code of the 429 answer when a bound on processes is reached: the guard's one 429 code. */
export const UPSTREAM_BUSY_JSONRPC_CODE = RATE_LIMITED_JSONRPC_CODE;

/** `Retry-After` when a child's stdin is full, in seconds: a child catches up in moments or is wedged. */
const STDIN_FULL_RETRY_AFTER_SECONDS = 1;
/** Requests one child may have in flight; past it, 429 (a client that never waits must not fill the gateway). */
const MAX_PENDING_PER_CHILD = 1024;

/** An open HTTP answer: a POST waiting for its response, or a session's GET stream. */
interface Exchange {
  readonly res: ServerResponse;
  readonly isGet: boolean;
  /** Whether the client accepts an event stream on this answer. */
  readonly sse: boolean;
  /**
   * Whether a client connection carries this answer now: false once it closed, even while a resume may come. A
   * method, not a getter: V8 makes an object literal with a getter in dictionary mode, and such per-request
   * objects kept their requests alive through young-generation collections (see `handlerContext` in
   * answer-with-function.ts).
   */
  connected(): boolean;
  /** The MCP revision of the request it answers (what its stream may carry depends on it). */
  readonly protocolVersion: string | undefined;
  /** Its resumable event stream, once it has one. */
  stream?: ResumableEventStream;
  /** Delivers a message on this answer's stream; false when it cannot carry it. */
  push(message: JsonRpcMessage): boolean;
  /** Ends the exchange: a POST still waiting gets `status` and a JSON-RPC error, a stream is ended. */
  end(status: number, message: string): void;
}

interface Slot extends PooledChild {
  readonly sessionId: string;
  /** POSTs waiting for an answer from this child, oldest first. */
  readonly waiting: Set<Exchange>;
  get: Exchange | undefined;
  /** The session's resumable event streams, made with its first one. */
  streams?: SessionEventStreams;
  /** What readiness learns from this process's start: told when the gateway gives up on its `initialize`. */
  start?: StdioStartWatch;
}

const CHILD_END_MESSAGES: Record<ChildEndReason, string> = {
  upstream_exited: 'Bad gateway: the upstream MCP server process exited',
  upstream_spawn_failed: 'Bad gateway: the upstream MCP server process could not be started',
  upstream_line_too_large: 'Bad gateway: the upstream MCP server wrote a message larger than the gateway accepts',
  upstream_stopped: 'Bad gateway: the upstream MCP server process was stopped',
};

/**
 * Makes a stdio MCP server (any program reading newline-delimited JSON-RPC on stdin and answering on stdout)
 * an upstream of the gateway: an `McpHttpHandler` for the request pipeline, which has already
 * authenticated, authorized and (for lists) arranged filtering of what it writes, exactly as for the HTTP
 * upstream proxy.
 *
 * - Processes: one per MCP session. A 2025 client's `initialize` starts one and gets the `Mcp-Session-Id`,
 *   bound to the caller (the project's session registry), so a request naming another caller's session gets
 *   404 like an unknown one. Requests without a session (2026-07-28, stateless) go to one child per caller; a
 *   2025 request without one that is not `initialize` gets 400.
 *   A process never serves anyone but the caller it was started for.
 * - Messages: each client request gets an id unique in its child (and its progress token likewise), so
 *   concurrent requests with equal ids cannot collide; the answer carries the client's id again. The answer
 *   is JSON unless the child sends something about the request first (progress, or a request of its own such
 *   as sampling or elicitation), which turns the answer into an event stream ending with the response. The
 *   child's other messages go to the one POST waiting on it, else to the session's GET stream, else to the
 *   newest waiting POST, connected streams first; a request of the child's that no connected stream can carry
 *   is answered with an error at once.
 *   The client's answers (POSTed responses) go back to the child that asked, with its own id.
 * - Lifecycle: DELETE stops the child (stdin closed and SIGTERM, SIGKILL after `stopTimeoutMs`). A child that
 *   exits fails its requests in flight with 502 (or an error event) and its session then answers 404. A
 *   request with no word from the child for `idleTimeoutMs` gets 504 and the child a `notifications/cancelled`,
 *   as does a request whose client went away.
 * - Bounds: `maxProcesses` and `maxProcessesPerCaller` refuse a new process with 429 and JSON-RPC
 *   {@link UPSTREAM_BUSY_JSONRPC_CODE}; no one's live process is ever stopped to make room. Idle children are
 *   stopped after `processIdleTimeoutMs`.
 *
 * @throws ConfigurationError when `command` is missing or an option is out of range.
 */
export function createStdioUpstream(options: StdioUpstreamOptions): StdioUpstream {
  if (typeof options?.command !== 'string' || options.command === '') {
    throw new ConfigurationError('command', 'is required: the program of the stdio MCP server, e.g. "python3"');
  }
  const command = options.command;
  const args = [...(options.args ?? [])];
  const baseEnv = options.env ?? childEnvironment([], process.env);
  const identityEnv = options.identityEnv === true;
  const idleTimeoutMs = stdioInteger(options, 'idleTimeoutMs');
  const stopTimeoutMs = stdioInteger(options, 'stopTimeoutMs');
  const maxLineBytes = stdioInteger(options, 'maxLineBytes');
  const maxStdinBytes = stdioInteger(options, 'maxStdinBytes');
  const log = options.log ?? ((event: ChildLogEvent) => void process.stderr.write(`${JSON.stringify({ time: new Date().toISOString(), ...event })}\n`));
  const onUpstreamError = options.onUpstreamError;
  const onSessionRefused = options.onSessionRefused;
  const sessionSealer = options.sessionSealer;
  // Names this instance in the ids it seals: another replica, or this gateway once restarted, holds none of its processes.
  const instance = randomBytes(9).toString('base64url');
  // With sealed ids: the id of the session an `initialize` opens, chosen and sealed before it is opened.
  const preparedSessions = new WeakMap<GuardedRequest, { id: string; sealed: string }>();
  const replayBufferBytes = stdioInteger(options, 'replayBufferBytes');
  const replayWindowMs = stdioInteger(options, 'replayWindowMs');
  const exchanges = new Set<Exchange>();
  // Ids of the requests each session has in progress: a client reusing one is refused (see createPendingRequestIds).
  const pendingIds = createPendingRequestIds();

  /** The session's resumable streams; only sessions a client named have them (it must name one to resume). */
  function streamsOf(slot: Slot): SessionEventStreams {
    slot.streams ??= createSessionEventStreams({
      maxBytes: replayBufferBytes,
      maxAgeMs: replayWindowMs,
      ...(options.now ? { now: options.now } : {}),
      write: (res, id, data) => holdChildWhileDraining(res, slot.child, writeEventWithId(res, id, data)),
    });
    return slot.streams;
  }

  const pool = createChildProcessPool<Slot>({
    maxProcesses: stdioInteger(options, 'maxProcesses'),
    maxProcessesPerCaller: stdioInteger(options, 'maxProcessesPerCaller'),
    idleTimeoutMs: stdioInteger(options, 'processIdleTimeoutMs'),
    ...(options.now ? { now: options.now } : {}),
    createSlot: (sessionId) => ({ sessionId, waiting: new Set(), get: undefined, child: undefined as unknown as StdioChild }),
    startChild: (slot, sessionId, auth, ended) => {
      const start = options.stdioStarts?.watch();
      if (start) slot.start = start;
      return startStdioChild({
        command,
        args,
        ...(options.cwd !== undefined ? { cwd: options.cwd } : {}),
        env: identityEnv ? withCallerIdentity(baseEnv, auth) : baseEnv,
        maxLineBytes,
        maxStdinBytes,
        stopTimeoutMs,
        label: sessionId,
        log: (event) => {
          start?.log(event);
          try {
            log(event);
          } catch {
            // Logging must never break serving.
          }
        },
        ...(start ? { onAnswered: () => start.answered() } : {}),
        onMessage: (message) => route(slot, message),
        onEnd: () => {
          ended();
          // Waiting POSTs were failed by the child; the GET stream ends with it.
          slot.get?.end(502, CHILD_END_MESSAGES.upstream_exited);
        },
      });
    },
  });

  /**
   * Delivers a message of the child's that answers none of its requests: see {@link createStdioUpstream}. Streams
   * a client is connected to come first, in the order there; a stream whose client is away (it may resume) only
   * gets a notification, kept for the resume, and only when no connected one can: a request of the child's sent
   * there would wait for an answer that may never come, so with nothing connected it is refused (the child
   * answers it with an error at once).
   */
  function route(slot: Slot, message: JsonRpcRequest | JsonRpcNotification): boolean {
    const only = slot.waiting.size === 1 ? [...slot.waiting][0] : undefined;
    // What the revision lets a stream carry: 2026-07-28 request streams take no request of the child's, and only
    // notifications that relate to their request, which the child's are known to be when only one request waits.
    // Others are dropped (a list change has no stream of its own there); no log, as there is no debug level.
    const fits = (exchange: Exchange): boolean => mayStreamServerMessage(message, exchange.protocolVersion, exchange === only);
    const order: Exchange[] = only !== undefined ? [only] : [];
    if (slot.get !== undefined) order.push(slot.get);
    // Newest first: the request most recently sent is the one most likely still being read.
    for (const exchange of [...slot.waiting].reverse()) if (exchange.sse && only === undefined) order.push(exchange);
    for (const exchange of order) if (exchange.connected() && fits(exchange) && exchange.push(message)) return true;
    if ('id' in message) return false;
    for (const exchange of order) if (!exchange.connected() && fits(exchange) && exchange.push(message)) return true;
    return false;
  }

  function reportFailure(req: GuardedRequest, res: ServerResponse, reason: UpstreamFailure['reason'], status?: number): void {
    try {
      onUpstreamError?.(req, { reason, ...(res.headersSent || status === undefined ? {} : { status }) });
    } catch {
      // Logging must never break serving.
    }
  }

  function refuseSession(req: GuardedRequest, res: ServerResponse, refusal: SessionRefusal): void {
    try {
      onSessionRefused?.(req, refusal);
    } catch {
      // Logging must never break serving.
    }
    // One answer for every refusal: whether the session exists, and whose it is, stays unknown to the caller.
    writeJson(res, 404, jsonRpcError(requestIdOf(req.body), SESSION_NOT_FOUND_JSONRPC_CODE, 'Session not found'));
  }

  function refuseChild(req: GuardedRequest, res: ServerResponse, refusal: ChildRefusal): void {
    const id = requestIdOf(req.body);
    if (refusal === 'no_identity') {
      writeJson(res, 400, jsonRpcError(id, -32600, 'Bad Request: a stdio upstream process is started for one caller, and this token names none (no sub, no client_id)'));
      return;
    }
    reportFailure(req, res, 'upstream_busy', 429);
    const text =
      refusal === 'caller_process_limit'
        ? 'Too many upstream sessions for this caller: end one (DELETE) or retry after one has been idle long enough to be stopped'
        : 'Too many upstream sessions on this gateway: retry later';
    writeJson(res, 429, jsonRpcError(id, UPSTREAM_BUSY_JSONRPC_CODE, text), { 'Retry-After': '5' });
  }

  /** The session a request names (none under 2026-07-28), or null when it names none. Undefined after answering 404. */
  function namedSession(req: GuardedRequest, res: ServerResponse, context: HttpHandlerContext): BoundSession<Slot> | null | undefined {
    const sessionId = requestSessionId(req, context.protocolVersion);
    if (sessionId === undefined) return null;
    const found = pool.lookup(sessionId, context.auth);
    if ('session' in found) return found.session;
    refuseSession(req, res, { reason: found.refused, sessionId });
    return undefined;
  }

  function post(req: GuardedRequest, res: ServerResponse, context: HttpHandlerContext): Promise<void> | void {
    const message = req.body!;
    const stateless = isStatelessRevision(context.protocolVersion);
    if (!('method' in message) && !acceptsClientResponses(context.protocolVersion)) {
      // Refused before any process is looked for: there is no request of a child's it could answer.
      writeJson(res, 400, jsonRpcError(null, -32600, `Bad Request: a ${context.protocolVersion} client sends no JSON-RPC responses (the server sends it no requests)`));
      return;
    }
    let opened = false;
    let session = namedSession(req, res, context);
    if (session === undefined) return;
    const named = session !== null;
    if (session === null) {
      const isInitialize = !stateless && 'method' in message && message.method === 'initialize' && 'id' in message;
      if (!stateless && !isInitialize) {
        // 2025 revisions: a process serves one session, opened by initialize; the caller's sessionless process is
        // for stateless requests, and would serve this one uninitialized (2025-11-25 streamable-http, "Session Management").
        writeJson(res, 400, jsonRpcError(requestIdOf(message), -32600, 'Bad Request: Mcp-Session-Id header is required (start a session with initialize)'));
        return;
      }
      const found = isInitialize ? pool.open(context.auth, preparedSessions.get(req)?.id) : pool.forCaller(context.auth);
      if ('refused' in found) {
        refuseChild(req, res, found.refused);
        return;
      }
      session = found.session;
      opened = isInitialize;
    }
    const slot = session.value;
    if (slot.child.inputFull) {
      // Refused, not queued: waiting for 'drain' would hold the body and the connection instead of the bytes.
      reportFailure(req, res, 'upstream_busy', 503);
      writeJson(res, 503, jsonRpcError(requestIdOf(message), UNAVAILABLE_JSONRPC_CODE, 'Service unavailable: the upstream MCP server process is not reading its input; retry later'), {
        'Retry-After': String(STDIN_FULL_RETRY_AFTER_SECONDS),
      });
      return;
    }
    if (!('method' in message)) {
      // A client's answer to a request of the child's (sampling, elicitation, roots): back to that child.
      slot.child.answer(message as JsonRpcResponse);
      writeAccepted(res);
      return;
    }
    if (!('id' in message)) {
      slot.child.notify(message);
      writeAccepted(res);
      return;
    }
    if (slot.child.pending >= MAX_PENDING_PER_CHILD) {
      reportFailure(req, res, 'upstream_busy', 429);
      writeJson(res, 429, jsonRpcError(message.id, UPSTREAM_BUSY_JSONRPC_CODE, 'Too many requests in flight in this session: wait for some answers'), { 'Retry-After': '1' });
      return;
    }
    let releaseId: (() => void) | undefined;
    if (named) {
      // The child never sees a clash (each request gets an id of its own there), but the client could not tell
      // the two answers apart, and MCP forbids reusing an id within a session.
      const claimed = pendingIds.claim(slot.sessionId, message.id);
      if (typeof claimed !== 'function') {
        writePendingIdRefusal(res, claimed, message.id);
        return;
      }
      releaseId = claimed;
    }
    // Only a stream of a session the client names can be resumed: a resume is a GET naming that session.
    return exchange(req, res, context, session, message as JsonRpcRequest, opened, named && replayBufferBytes > 0, releaseId);
  }

  function exchange(
    req: GuardedRequest,
    res: ServerResponse,
    context: HttpHandlerContext,
    session: BoundSession<Slot>,
    message: JsonRpcRequest,
    opened: boolean,
    resumable: boolean,
    releaseId: (() => void) | undefined,
  ): Promise<void> {
    const slot = session.value;
    const id: JsonRpcId = message.id;
    const acceptsSse = acceptsEventStream(req.headers.accept);
    return new Promise<void>((resolve) => {
      let settled = false;
      let streaming = false;
      let answered = false;
      let idleTimer: NodeJS.Timeout | undefined;
      let detachTimer: NodeJS.Timeout | undefined;
      let stream: ResumableEventStream | undefined;
      // Only the session the gateway just issued is announced, and only with a successful answer.
      const sessionHeader = (): Record<string, string> => (opened ? { 'Mcp-Session-Id': preparedSessions.get(req)?.sealed ?? slot.sessionId } : {});

      function settle(): void {
        settled = true;
        // A session whose id never reached its client (it left, the answer timed out or failed) can never be
        // used: its process goes now rather than after the idle timeout, and frees the caller's slot.
        if (opened && !answered) pool.end(slot.sessionId);
        clearTimeout(idleTimer);
        clearTimeout(detachTimer);
        stream?.end();
        exchanges.delete(record);
        slot.waiting.delete(record);
        res.off('close', onClose);
        session.release();
        releaseId?.();
        resolve();
      }

      function startStream(): void {
        for (const [name, value] of Object.entries(sessionHeader())) res.setHeader(name, value);
        startEventStream(res);
        streaming = true;
        if (resumable) record.stream = stream = streamsOf(slot).open(res, owner, acceptsPrimingEvent(context.protocolVersion));
      }

      // A resumable stream records each event for a replay, so it keeps the filtered form of a list answer
      // (a resumed stream is a GET, which the guard does not filter).
      const write = (msg: JsonRpcMessage): void =>
        stream ? stream.send(JSON.stringify('method' in msg ? msg : context.filterResponse(message, msg))) : writeHoldingChild(res, slot.child, msg);
      const endStream = (): void => void (stream ? stream.end() : res.end());

      // The client lost a resumable stream: the request runs on for `replayWindowMs`, for it to come back.
      const owner: StreamOwner = {
        detached() {
          detachTimer = setTimeout(() => {
            pendingRequest?.abandon(true, 'the client did not resume its stream');
            reportFailure(req, res, 'upstream_idle_timeout');
            // The stream's last event says the request ended, for a client that resumes now: never a stream that just stops.
            fail(504, 'Gateway timeout: the client did not resume its stream in time, so its request was cancelled');
          }, replayWindowMs);
        },
        attached() {
          clearTimeout(detachTimer);
        },
      };

      function fail(status: number, text: string): void {
        if (settled) return;
        if (!res.headersSent && !res.writableEnded) writeJson(res, status, jsonRpcError(id, GATEWAY_JSONRPC_CODE, text));
        else if (streaming && (stream !== undefined || !res.writableEnded)) {
          write(jsonRpcError(id, GATEWAY_JSONRPC_CODE, text));
          endStream();
        }
        settle();
      }

      const sink: RequestSink = {
        message(msg) {
          if (settled || !acceptsSse || (stream === undefined && res.writableEnded)) return false;
          idleTimer?.refresh();
          if (!streaming) startStream();
          write(msg);
          return true;
        },
        response(msg) {
          if (settled) return;
          // An initialize the child refused started no session after all (settle ends it).
          answered = !('error' in msg);
          if (streaming) {
            write(msg);
            endStream();
          } else {
            writeJson(res, httpStatusForResponse(msg, context.protocolVersion), msg, 'error' in msg ? {} : sessionHeader());
          }
          settle();
        },
        fail(reason) {
          if (settled) return;
          reportFailure(req, res, reason, 502);
          fail(502, CHILD_END_MESSAGES[reason]);
        },
      };

      const record: Exchange = {
        res,
        isGet: false,
        sse: acceptsSse,
        protocolVersion: context.protocolVersion,
        connected: () => (stream ? stream.isAttached() : !res.writableEnded && !res.destroyed),
        push: (msg) => sink.message(msg),
        end: (status, text) => {
          pendingRequest?.abandon(true, 'the gateway is shutting down');
          reportFailure(req, res, 'gateway_shutdown', status);
          fail(status, text);
        },
      };

      function onClose(): void {
        // A resumable stream's owner hears of its connections (`owner`): the client may resume it.
        if (settled || res.writableFinished || stream !== undefined) return;
        // The client went away: its answer can be sent nowhere, so the work stops.
        pendingRequest?.abandon(true, 'the client went away');
        settle();
      }

      session.acquire();
      exchanges.add(record);
      slot.waiting.add(record);
      res.once('close', onClose);
      const pendingRequest = slot.child.request(message, sink);
      if (pendingRequest === undefined) {
        sink.fail('upstream_exited');
        return;
      }
      idleTimer = setTimeout(() => {
        pendingRequest.abandon(true, 'the gateway timed out waiting for an answer');
        // Only an unanswered initialize says the program does not serve: the first request of a sessionless
        // process may be any call, which a caller could make slow on purpose to take the replica out of service.
        if (message.method === 'initialize') slot.start?.timedOut(idleTimeoutMs);
        reportFailure(req, res, streaming ? 'upstream_idle_timeout' : 'upstream_timeout', 504);
        fail(504, 'Gateway timeout: the upstream MCP server did not answer in time');
      }, idleTimeoutMs);
    });
  }

  function get(req: GuardedRequest, res: ServerResponse, context: HttpHandlerContext): Promise<void> | void {
    const found = sessionForGetOrDelete(req, res, context);
    if (!found) return;
    const session = found;
    const slot = session.value;
    if (!acceptsEventStream(req.headers.accept)) {
      // A GET is answered with an event stream or not at all (2025-11-25 streamable-http, "Listening for Messages").
      writeJson(res, 406, jsonRpcError(null, -32600, 'Not Acceptable: a GET is answered with an event stream; send Accept: text/event-stream'));
      return;
    }
    const lastEventId = firstHeader(req.headers['last-event-id']);
    if (lastEventId !== undefined && replayBufferBytes > 0) return resume(res, slot, lastEventId, context);
    if (slot.get !== undefined) {
      // A GET stream whose client left without resuming it is replaced; a connected one is not.
      if (slot.get.stream?.isAttached() === false) slot.get.end(200, '');
      else {
        writeJson(res, 409, jsonRpcError(null, -32600, 'Conflict: this session already has a GET stream open'));
        return;
      }
    }
    return new Promise<void>((resolve) => {
      let settled = false;
      let detachTimer: NodeJS.Timeout | undefined;
      const record: Exchange = {
        res,
        isGet: true,
        sse: true,
        protocolVersion: context.protocolVersion,
        connected: () => (record.stream ? record.stream.isAttached() : !res.writableEnded && !res.destroyed),
        push(message) {
          if (settled) return false;
          // A stream whose client lost it keeps its messages for the resume.
          if (record.stream) {
            record.stream.send(JSON.stringify(message));
            return true;
          }
          if (res.writableEnded) return false;
          writeHoldingChild(res, slot.child, message);
          return true;
        },
        end() {
          if (record.stream) record.stream.end();
          else if (!settled && !res.writableEnded) res.end();
          settle();
        },
      };
      function settle(): void {
        if (settled) return;
        settled = true;
        clearTimeout(detachTimer);
        record.stream?.end();
        exchanges.delete(record);
        if (slot.get === record) slot.get = undefined;
        session.release();
        resolve();
      }
      session.acquire();
      exchanges.add(record);
      slot.get = record;
      startEventStream(res);
      if (replayBufferBytes > 0) {
        const owner: StreamOwner = {
          detached: () => void (detachTimer = setTimeout(settle, replayWindowMs)),
          attached: () => clearTimeout(detachTimer),
        };
        record.stream = streamsOf(slot).open(res, owner, acceptsPrimingEvent(context.protocolVersion));
      } else {
        res.once('close', settle);
      }
    });
  }

  /**
   * A GET with `Last-Event-ID`: the stream it names is replayed from there and carried on, if it is this
   * session's and nothing after that event was forgotten; else 400, since a replay with a gap, or of another
   * stream, would let the client believe it missed nothing. The resumed stream's owner keeps the session in use.
   */
  function resume(res: ServerResponse, slot: Slot, lastEventId: string, context: HttpHandlerContext): Promise<void> | void {
    // The events kept were filtered when they were sent; filter them again for this request, so that a policy
    // narrowed since (or a token with fewer scopes) applies to the copies too. A list or read answer is recognised
    // by its result, whatever id it carries (fail closed).
    const filter = (response: JsonRpcMessage): JsonRpcMessage => context.filterResponse(UNKNOWN_REQUEST, response);
    const refilter = (data: string): string => {
      const out = filterJsonText(data, filter);
      return out === UNFILTERABLE ? JSON.stringify(unfilterableAnswer(null)) : (out ?? data);
    };
    const outcome = slot.streams === undefined ? { refused: 'unknown_event' as const } : slot.streams.resume(res, lastEventId, () => startEventStream(res), refilter);
    if (outcome !== undefined) {
      const why = outcome.refused === 'events_lost' ? 'events after it are no longer kept' : 'it is not an event id of this session';
      writeJson(res, 400, jsonRpcError(null, -32600, `Bad Request: the stream named by Last-Event-ID cannot be resumed (${why}); send the request again`));
      return;
    }
    if (res.writableEnded) return;
    return new Promise<void>((resolve) => res.once('close', () => resolve()));
  }

  function del(req: GuardedRequest, res: ServerResponse, context: HttpHandlerContext): void {
    const session = sessionForGetOrDelete(req, res, context);
    if (!session) return;
    pool.end(session.value.sessionId);
    res.writeHead(200, { 'Content-Length': '0' }).end();
  }

  /** GET and DELETE are about a 2025 session; 2026-07-28 and sessionless requests get 405. */
  function sessionForGetOrDelete(req: GuardedRequest, res: ServerResponse, context: HttpHandlerContext): BoundSession<Slot> | undefined {
    if (requestSessionId(req, context.protocolVersion) === undefined) {
      res.setHeader('Allow', 'POST, OPTIONS');
      writeJson(res, 405, jsonRpcError(null, -32600, `Method not allowed: ${req.method} needs the Mcp-Session-Id of a session started with initialize`));
      return undefined;
    }
    return namedSession(req, res, context) ?? undefined;
  }

  function dispatch(req: GuardedRequest, res: ServerResponse, context: HttpHandlerContext): Promise<void> | void {
    switch (req.method) {
      case 'POST':
        return post(req, res, context);
      case 'GET':
        return get(req, res, context);
      case 'DELETE':
        return del(req, res, context);
      default:
        writeJson(res, 405, jsonRpcError(null, -32600, 'Method not allowed'));
    }
  }

  /**
   * With sealed session ids, before a 2025 request is served: the id it names is opened to the session's own id
   * (refused with 404, like an unknown session, unless it opens for this caller and this instance), and an
   * `initialize` gets the id of its new session chosen and sealed, as its answer carries it. False once answered.
   */
  async function unsealSessionId(req: GuardedRequest, res: ServerResponse, context: HttpHandlerContext, sealer: SessionSealer): Promise<boolean> {
    if (isStatelessRevision(context.protocolVersion)) return true;
    if (req.headers['mcp-session-id'] === undefined) {
      const message = req.body;
      if (message && 'method' in message && message.method === 'initialize' && 'id' in message) {
        const id = randomUUID();
        // Undefined for a token naming nobody, which opens no process anyway.
        const sealed = await sealer.seal(id, context.auth, instance);
        if (sealed !== undefined) preparedSessions.set(req, { id, sealed });
      }
      return true;
    }
    const sessionId = sessionIdHeader(req)!;
    const opened = await sealer.open(sessionId, context.auth, instance);
    if ('refused' in opened) {
      refuseSession(req, res, { reason: opened.refused, sessionId });
      return false;
    }
    req.headers['mcp-session-id'] = opened.session.upstreamSessionId;
    return !context.signal.aborted;
  }

  const handler = httpHandler((req, res, context) =>
    sessionSealer ? unsealSessionId(req, res, context, sessionSealer).then((serve) => (serve ? dispatch(req, res, context) : undefined)) : dispatch(req, res, context),
  );

  // A gateway that dies without shutting down must not leave processes behind.
  const onExit = (): void => void pool.close();
  process.once('exit', onExit);

  let closing: Promise<void> | undefined;
  return {
    ...handler,
    get inFlight() {
      return exchanges.size;
    },
    get processes() {
      return pool.running;
    },
    endStreams(which) {
      for (const exchange of [...exchanges]) {
        if (which === 'all' || exchange.isGet) exchange.end(503, 'Service unavailable: the gateway is shutting down');
      }
    },
    close() {
      closing ??= (async () => {
        process.off('exit', onExit);
        for (const exchange of [...exchanges]) exchange.end(503, 'Service unavailable: the gateway is shutting down');
        await pool.close();
      })();
      return closing;
    },
  };
}

/** Answers whose client is slow to read, each holding its child's output until it drains. */
const draining = new WeakSet<ServerResponse>();

/**
 * Writes one event, and while the client is slow to read, holds the child's stdout: a slow client slows the
 * process that serves it instead of filling the gateway's memory (each child serves one caller).
 */
function writeHoldingChild(res: ServerResponse, child: StdioChild, message: JsonRpcMessage): void {
  holdChildWhileDraining(res, child, writeEvent(res, message));
}

/** After a write to `res` that returned `writable`: holds the child's stdout until `res` drains, if it must. */
function holdChildWhileDraining(res: ServerResponse, child: StdioChild, writable: boolean): void {
  if (writable || draining.has(res)) return;
  draining.add(res);
  const release = child.hold();
  const done = (): void => {
    draining.delete(res);
    res.off('drain', done);
    res.off('close', done);
    release();
  };
  res.once('drain', done);
  res.once('close', done);
}

/** Whether an `Accept` header admits `text/event-stream` (MCP clients send `application/json, text/event-stream`). */
function acceptsEventStream(accept: string | undefined): boolean {
  return acceptsMediaType(accept, EVENT_STREAM_MEDIA_TYPE);
}

