import type { IncomingMessage, ServerResponse } from 'node:http';
import type { DecisionEvent, DecisionHook, DecisionReason, DecisionRequest } from '../core/kernel/decision.js';
import { jsonField } from '../core/kernel/log-line.js';
import { decisionRequestOf } from './decision-request.js';
import { httpRequestId } from './request-id.js';
import type { SessionRefusal } from '../core/session/session-gate.js';
import type { SealedSessionRefusalReason } from '../core/session/session-seal.js';

/**
 * The request log of the pipeline: one JSON line per request, written when its answer ends, for the gateway and the
 * middleware alike. `Failure` is the stable code of a handler's failure (the gateway's `UpstreamFailureReason`).
 */

/**
 * One line of the request log. Identifiers only: the token, the request body and the query string
 * (where a misbehaving client might put a token) are never logged.
 */
export interface RequestLogEntry<Failure extends string = string> {
  /** When the request arrived, ISO 8601. */
  time: string;
  /**
   * The request's id: its `X-Request-Id` when it sent a usable one, else a random UUID; the same as its audit
   * record's `requestId`, to join the two.
   */
  requestId: string;
  /** HTTP method. */
  httpMethod: string;
  /**
   * Request path, without the query string; a connect link's as `/connect/{ticket}` (its id is never logged), an
   * upstream's callback as `/connect/callback/{server}`.
   */
  path: string;
  /** JSON-RPC method, when the body was parsed. */
  method?: string;
  /**
   * Tool, prompt or resource the request named, whatever its kind (`method` says which): the audit record's `tool`,
   * `prompt` or `resource`. Kept as one field, as log queries and `onDecision` read it.
   */
  name?: string;
  /**
   * The server the request was for, when several share the endpoint (the gateway's `servers`): the one it was
   * handed to, or, for a request refused before that, the one its decision named (`DecisionEvent.server`); absent
   * with one upstream, and for what no single server answers (merged lists, `initialize`, the merged stream).
   */
  server?: string;
  /**
   * The decision; absent for requests nobody decides on (metadata, health). A request the guard allowed
   * but the gateway refused for the session it named is logged as `deny` with the session reason.
   */
  decision?: 'allow' | 'deny';
  /** Why (stable code): the guard's reason, or the gateway's session refusal. */
  reason?: DecisionReason | SealedSessionRefusalReason;
  /** On a deny by the guard, what the client was told (expected and actual issuer or audience, …; never the token). */
  detail?: string;
  /** Scopes the operation required, when the policy was evaluated. */
  requiredScopes?: string[];
  /** Token subject, when a token was verified. */
  subject?: string;
  /** OAuth client id, when a token was verified. */
  clientId?: string;
  /** HTTP status sent. */
  status: number;
  /** Time from arrival to the end of the answer (or of the stream), in milliseconds, to 0.1 ms. */
  durationMs: number;
  /** Why the upstream exchange (the handler's work) failed, when it did. */
  upstreamError?: Failure;
  /** True when the client went away before the answer was complete. */
  aborted?: boolean;
}

/** Options of {@link createRequestLog}. */
export interface RequestLogOptions<Failure extends string = string> {
  /**
   * Receives each line (JSON, no trailing newline). Default: written to stdout with a newline. `null`: no line is
   * made at all (the request log is off), and the entries still reach `onEntry`.
   */
  write?: ((line: string) => void) | null;
  /**
   * Receives each finished entry, before it is written, e.g. for metrics (the gateway's request counts and
   * durations come from here: it is where the guard's decision and the gateway's session refusals meet). It
   * must not keep or change the entry. Errors it throws are ignored. Default none.
   */
  onEntry?: (entry: Readonly<RequestLogEntry<Failure>>) => void;
}

/** The pieces to wire in: a middleware first in the chain, and the hooks. */
export interface RequestLog<Failure extends string = string> {
  /** Starts the entry for a request, runs `next`, and writes the entry when the answer ends (Connect-shaped). */
  middleware(req: IncomingMessage, res: ServerResponse, next: () => void): void;
  /** Drops the entry `middleware` started for `res`: the request is not one to log (another path's). */
  abandon(res: ServerResponse): void;
  /** Pass as the guard's `onDecision`. */
  onDecision: DecisionHook;
  /** Pass as the upstream proxy's `onUpstreamError`. */
  onUpstreamError(req: IncomingMessage, failure: Readonly<{ reason: Failure; status?: number; code?: string }>): void;
  /** Pass as the upstream proxy's `onSessionRefused`. The session id itself is not logged. */
  onSessionRefused(req: IncomingMessage, refusal: SessionRefusal): void;
  /** Pass as the upstream proxy's `onAnsweredInstead`: the request was answered in the handler's place, a `deny`. */
  onAnsweredInstead(req: IncomingMessage, reason: DecisionReason): void;
  /** Records the server a request is handed to, when several share the endpoint (the entry's `server`). */
  onServerRouted(req: IncomingMessage, server: string): void;
}

/**
 * Builds the structured request log: one JSON line per request, written when the answer ends.
 *
 * The guard reports decisions through `onDecision` with the request's view (`decisionRequestOf`), by which the
 * middleware recorded the entry: the log joins them without ever holding a credential.
 * (Not an `AsyncLocalStorage` context: one costs every promise and callback of the process a context
 * propagation, measured at a tenth of the gateway's CPU per request.)
 *
 * The middleware makes one itself with `requestLog: true`; by hand, on a plain `node:http` server:
 *
 * @example
 * ```ts
 * import { createServer } from 'node:http';
 * import { createGuard, loadOptionsFromEnv } from 'mcp-oauth-guard/core';
 * import { createRequestLog, createRequestPipeline } from 'mcp-oauth-guard/http';
 *
 * const log = createRequestLog({ write: (line) => console.error(line) });
 * const pipeline = createRequestPipeline(createGuard({ ...loadOptionsFromEnv(), onDecision: log.onDecision }), handler);
 * createServer((req, res) =>
 *   log.middleware(req, res, () => {
 *     if (pipeline.serve(req, res)) return;
 *     log.abandon(res); // another path: not logged
 *     res.writeHead(404).end();
 *   }),
 * ).listen(3000);
 * ```
 */
export function createRequestLog<Failure extends string = string>(options: RequestLogOptions<Failure> = {}): RequestLog<Failure> {
  const write = options.write === undefined ? (line: string) => void process.stdout.write(`${line}\n`) : options.write;
  const writer = new RequestLogWriter(write ?? undefined, options.onEntry as RequestLogWriter['onEntry']);
  const entries = new WeakMap<DecisionRequest, RequestLogEntry<Failure>>();

  return {
    middleware(req, res, next) {
      const url = req.url ?? '/';
      const q = url.indexOf('?');
      const entry: RequestLogEntry<Failure> = {
        time: isoTimeNow(),
        requestId: httpRequestId(req),
        httpMethod: req.method ?? 'GET',
        path: loggedPath(q === -1 ? url : url.slice(0, q)),
        status: 0,
        durationMs: 0,
      };
      entries.set(decisionRequestOf(req), entry);
      (res as LoggedResponse)[LOGGED] = new LoggedRequest(entry, writer);
      // One listener function for every response (no closure per request): the entry rides on the response.
      res.on('close', onLoggedResponseClose);
      next();
    },
    abandon(res) {
      (res as LoggedResponse)[LOGGED] = undefined;
      res.off('close', onLoggedResponseClose);
    },
    onDecision(event: DecisionEvent, request?: DecisionRequest) {
      const entry = request === undefined ? undefined : entries.get(request);
      if (!entry) return;
      entry.decision = event.decision;
      entry.reason = event.reason;
      if (event.method !== undefined) entry.method = event.method;
      if (event.name !== undefined) entry.name = event.name;
      if (event.requiredScopes?.length) entry.requiredScopes = [...event.requiredScopes];
      if (event.subject !== undefined) entry.subject = event.subject;
      if (event.clientId) entry.clientId = event.clientId;
      if (event.detail !== undefined) entry.detail = event.detail;
      // A request refused before it was handed to a server is logged with the server its decision named.
      if (event.server !== undefined && entry.server === undefined) entry.server = event.server;
    },
    onUpstreamError(req, failure) {
      const entry = entries.get(decisionRequestOf(req));
      if (entry) entry.upstreamError = failure.reason;
    },
    onSessionRefused(req, refusal) {
      const entry = entries.get(decisionRequestOf(req));
      if (!entry) return;
      // The guard had allowed the request; the gateway overrules it, and the log must say so.
      entry.decision = 'deny';
      entry.reason = refusal.reason;
    },
    onAnsweredInstead(req, reason) {
      const entry = entries.get(decisionRequestOf(req));
      if (!entry) return;
      // The guard had allowed the request; what was answered is not what it asked for (a link to connect, say).
      entry.decision = 'deny';
      entry.reason = reason;
    },
    onServerRouted(req, server) {
      const entry = entries.get(decisionRequestOf(req));
      if (entry) entry.server = server;
    },
  };
}

/** Paths under `/connect/` that name no secret: the gateway's callback and its client metadata documents. */
const OPEN_CONNECT_PATH = /^\/connect\/(?:callback|client-metadata\/[A-Za-z0-9_-]{1,64}\.json)$/;

/**
 * The path as logged. A connect link's path carries its ticket id, which grants a sign-in for a user: it is
 * logged as the template `/connect/{ticket}` (every `/connect/` path but the callbacks and client metadata). An
 * upstream's callback, `/connect/callback/<server>`, is logged as `/connect/callback/{server}`: it is no link, and
 * its last segment is whatever the browser sent. The query string, with a callback's `code` and `state`, is never
 * logged.
 */
function loggedPath(path: string): string {
  if (!path.startsWith('/connect/') || OPEN_CONNECT_PATH.test(path)) return path;
  return path.startsWith('/connect/callback/') ? '/connect/callback/{server}' : '/connect/{ticket}';
}

/** Where a response being logged keeps its entry, so that one 'close' listener serves every response. */
const LOGGED = Symbol('request log entry');
type LoggedResponse = ServerResponse & { [LOGGED]?: LoggedRequest | undefined };

function onLoggedResponseClose(this: LoggedResponse): void {
  const logged = this[LOGGED];
  if (logged === undefined) return;
  this[LOGGED] = undefined;
  logged.end(this);
}

/** Where one log's lines go: the writer and the entry hook. */
class RequestLogWriter {
  constructor(
    /** Undefined: the request log is off, and only `onEntry` is told. */
    readonly write: ((line: string) => void) | undefined,
    readonly onEntry: ((entry: Readonly<RequestLogEntry>) => void) | undefined,
  ) {}
}

/** One request being logged: its entry, when it arrived, and the log its line goes to. */
class LoggedRequest {
  readonly started = performance.now();

  constructor(
    readonly entry: RequestLogEntry,
    readonly writer: RequestLogWriter,
  ) {}

  /** The answer ended (or the client left): the entry is completed, handed to the hook, and written. */
  end(res: ServerResponse): void {
    const entry = this.entry;
    entry.status = res.statusCode;
    entry.durationMs = Math.round((performance.now() - this.started) * 10) / 10;
    if (!res.writableFinished) entry.aborted = true;
    const { write, onEntry } = this.writer;
    try {
      onEntry?.(entry);
    } catch {
      // Metrics must never break serving, nor cost the log line.
    }
    if (write === undefined) return;
    try {
      write(logLine(entry));
    } catch {
      // Logging must never break serving.
    }
  }
}

/** `new Date().toISOString()`, made once per millisecond: a busy gateway logs many requests in each. */
let isoTimeMs = Number.NaN;
let isoTime = '';
export function isoTimeNow(): string {
  const now = Date.now();
  if (now !== isoTimeMs) {
    isoTimeMs = now;
    isoTime = new Date(now).toISOString();
  }
  return isoTime;
}

/**
 * The entry as one JSON line, its fields in a fixed, readable order: the text `JSON.stringify` makes of the entry
 * with its fields in that order, written field by field, with no object copied for it.
 */
function logLine(e: RequestLogEntry): string {
  let line = `{"time":${JSON.stringify(e.time)}${jsonField('requestId', e.requestId)}${jsonField('httpMethod', e.httpMethod)}${jsonField('path', e.path)}`;
  if (e.method !== undefined) line += jsonField('method', e.method);
  if (e.name !== undefined) line += jsonField('name', e.name);
  if (e.server !== undefined) line += jsonField('server', e.server);
  if (e.decision !== undefined) line += jsonField('decision', e.decision) + jsonField('reason', e.reason);
  if (e.detail !== undefined) line += jsonField('detail', e.detail);
  if (e.requiredScopes !== undefined) line += jsonField('requiredScopes', e.requiredScopes);
  if (e.subject !== undefined) line += jsonField('subject', e.subject);
  if (e.clientId !== undefined) line += jsonField('clientId', e.clientId);
  line += jsonField('status', e.status) + jsonField('durationMs', e.durationMs);
  if (e.upstreamError !== undefined) line += jsonField('upstreamError', e.upstreamError);
  if (e.aborted) line += ',"aborted":true';
  return `${line}}`;
}
