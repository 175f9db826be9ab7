import type { ServerResponse } from 'node:http';
import { ConfigurationError } from '../../../core/kernel/errors.js';
import { formatLogLine } from '../../../core/kernel/log-line.js';
import { createPendingRequestIds, type PendingRequestIds } from '../../../core/mcp/pending-request-ids.js';
import type { BoundSession } from '../../../core/session/session-registry.js';
import type { GuardedRequest, HttpHandlerContext } from '../../../http/http-handler.js';
import { requestSessionId } from '../../../http/request-headers.js';
import { passSessionGate } from '../../../http/session-gate.js';
import { checkUpstreamName, type UpstreamFailure } from '../upstream.js';
import { childEnvironment } from './child-environment.js';
import { createChildProcessPool, type ChildProcessPool } from './child-process-pool.js';
import type { ChildLogEvent } from './stdio-child.js';
import type { Exchange } from './stdio-exchange.js';
import { stdioInteger } from './stdio-integer-settings.js';
import { StdioSession, type ChildLaunch, type ReplaySettings } from './stdio-session.js';
import { SessionIdSealing } from './session-id-sealing.js';
import type { StdioUpstreamOptions } from './stdio-upstream-options.js';

/** Writes a child's log event as one JSON line on stderr: the default `log`. */
function logToStderr(event: ChildLogEvent): void {
  const { event: name, ...fields } = event;
  void process.stderr.write(`${formatLogLine(name, fields)}\n`);
}

/**
 * What every request of one stdio upstream shares: its checked settings, its processes (one
 * {@link StdioSession} each), the exchanges open, the ids of requests in progress, the sealing of session ids,
 * and the log hooks. Made once per upstream; each request's handling reads it.
 *
 * @throws ConfigurationError when `command` is missing or an option is out of range.
 */
export class StdioUpstreamState {
  /** The upstream's name behind the gateway's endpoint. */
  readonly name: string;
  readonly idleTimeoutMs: number;
  readonly replayBufferBytes: number;
  readonly replayWindowMs: number;
  readonly pool: ChildProcessPool<StdioSession>;
  /** POSTs waiting and GET streams open, for shutdown and the in-flight gauge. */
  readonly exchanges = new Set<Exchange>();
  /** Ids of the requests each session has in progress: a client reusing one is refused (see createPendingRequestIds). */
  readonly pendingIds: PendingRequestIds = createPendingRequestIds();
  /** With `sessionSealer`: how session ids are sealed for clients and opened again. */
  readonly sealing: SessionIdSealing | undefined;
  private readonly onUpstreamError: StdioUpstreamOptions['onUpstreamError'];
  private readonly onSessionRefused: StdioUpstreamOptions['onSessionRefused'];

  constructor(options: StdioUpstreamOptions) {
    if (typeof options?.command !== 'string' || options.command === '') {
      throw new ConfigurationError('command', 'is required: the program of the stdio MCP server, e.g. "python3"');
    }
    this.name = checkUpstreamName(options.name, 'name');
    const args = [...(options.args ?? [])];
    const env = options.env ?? childEnvironment([], process.env);
    // The settings are checked in this order, so that of several bad ones the same is named first.
    this.idleTimeoutMs = stdioInteger(options, 'idleTimeoutMs');
    const launch: ChildLaunch = {
      command: options.command,
      args,
      cwd: options.cwd,
      env,
      identityEnv: options.identityEnv === true,
      stopTimeoutMs: stdioInteger(options, 'stopTimeoutMs'),
      maxLineBytes: stdioInteger(options, 'maxLineBytes'),
      maxStdinBytes: stdioInteger(options, 'maxStdinBytes'),
      log: options.log ?? logToStderr,
      stdioStarts: options.stdioStarts,
    };
    this.onUpstreamError = options.onUpstreamError;
    this.onSessionRefused = options.onSessionRefused;
    this.sealing = options.sessionSealer ? new SessionIdSealing(options.sessionSealer, options.onSessionRefused) : undefined;
    this.replayBufferBytes = stdioInteger(options, 'replayBufferBytes');
    this.replayWindowMs = stdioInteger(options, 'replayWindowMs');
    const replay: ReplaySettings = { maxBytes: this.replayBufferBytes, maxAgeMs: this.replayWindowMs, now: options.now };
    this.pool = createChildProcessPool<StdioSession>({
      maxProcesses: stdioInteger(options, 'maxProcesses'),
      maxProcessesPerCaller: stdioInteger(options, 'maxProcessesPerCaller'),
      idleTimeoutMs: stdioInteger(options, 'processIdleTimeoutMs'),
      ...(options.now ? { now: options.now } : {}),
      createSlot: (sessionId) => new StdioSession(sessionId, replay),
      startChild: (session, _sessionId, auth, ended) => session.startChild(launch, auth, ended),
    });
  }

  /** Tells `onUpstreamError` of a failed exchange; the status only while the answer's head is not sent yet. */
  reportFailure(req: GuardedRequest, res: ServerResponse, reason: UpstreamFailure['reason'], status?: number): void {
    try {
      this.onUpstreamError?.(req, { reason, ...(res.headersSent || status === undefined ? {} : { status }) });
    } catch {
      // Logging must never break serving.
    }
  }

  /**
   * The session gate for the session a request names (none under 2026-07-28): that session, when it is the
   * caller's; null when the request names none; undefined once a session it may not use (unknown, ended, a
   * caller's sessionless one, or another caller's) was refused with 404 (`passSessionGate`).
   */
  namedSession(req: GuardedRequest, res: ServerResponse, context: HttpHandlerContext): BoundSession<StdioSession> | null | undefined {
    const sessionId = requestSessionId(req, context.protocolVersion);
    if (sessionId === undefined) return null;
    // The pool's lookup, not the registry's: it also refuses the ids of callers' sessionless processes.
    return passSessionGate(this.pool, sessionId, req, res, context.auth, this.onSessionRefused);
  }
}
