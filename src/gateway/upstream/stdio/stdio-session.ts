import type { AuthInfo } from '../../../core/kernel/auth-info.js';
import { writeEventWithId } from '../../../http/write-response.js';
import { createSessionEventStreams, type SessionEventStreams } from '../session-event-streams.js';
import { holdChildWhileDraining } from './child-backpressure.js';
import { withCallerIdentity } from './child-environment.js';
import type { PooledChild } from './child-process-pool.js';
import { routeChildMessage } from './child-message-routing.js';
import { CHILD_END_MESSAGES } from './stdio-answers.js';
import { startStdioChild, type ChildLogEvent, type StdioChild } from './stdio-child.js';
import type { Exchange } from './stdio-exchange.js';
import type { StdioStartOutcomes, StdioStartWatch } from './stdio-start-outcome.js';

/** How a session's child is started: the program and the bounds of `StdioUpstreamOptions`, resolved. */
export interface ChildLaunch {
  readonly command: string;
  readonly args: readonly string[];
  readonly cwd: string | undefined;
  /** The environment of every child; the caller's identity is added to it with `identityEnv`. */
  readonly env: Readonly<Record<string, string>>;
  readonly identityEnv: boolean;
  readonly maxLineBytes: number;
  readonly maxStdinBytes: number;
  readonly stopTimeoutMs: number;
  /** Receives the child's log events; errors it throws are ignored. */
  readonly log: (event: ChildLogEvent) => void;
  readonly stdioStarts: Pick<StdioStartOutcomes, 'watch'> | undefined;
}

/** How long a session keeps events for a resume; see `createSessionEventStreams`. */
export interface ReplaySettings {
  readonly maxBytes: number;
  readonly maxAgeMs: number;
  readonly now: (() => number) | undefined;
}

/**
 * One MCP session of the stdio upstream bound to its child process (a 2025 session, or a caller's sessionless
 * child): the POSTs waiting on the child, the session's GET stream, and its resumable event streams. The child's
 * messages that answer none of its requests are routed to them (`routeChildMessage`); when the child ends, the
 * GET stream ends with it (the waiting POSTs are failed by the child).
 */
export class StdioSession implements PooledChild {
  /** Set by the pool right after the session is bound. */
  child: StdioChild = undefined as unknown as StdioChild;
  /** POSTs waiting for an answer from this child, oldest first. */
  readonly waiting = new Set<Exchange>();
  /** The session's GET stream, while one is open. */
  get: Exchange | undefined = undefined;
  /** What readiness learns from this process's start: told when the gateway gives up on its `initialize`. */
  start: StdioStartWatch | undefined = undefined;
  private streams: SessionEventStreams | undefined = undefined;

  constructor(
    readonly sessionId: string,
    private readonly replay: ReplaySettings,
  ) {}

  /** The session's resumable streams, made with its first one; only sessions a client named have them (it must name one to resume). */
  eventStreams(): SessionEventStreams {
    this.streams ??= createSessionEventStreams({
      maxBytes: this.replay.maxBytes,
      maxAgeMs: this.replay.maxAgeMs,
      ...(this.replay.now ? { now: this.replay.now } : {}),
      write: (res, id, data) => holdChildWhileDraining(res, this.child, writeEventWithId(res, id, data)),
    });
    return this.streams;
  }

  /** The resumable streams made so far, if any (a resume of a session without them names no event of it). */
  existingEventStreams(): SessionEventStreams | undefined {
    return this.streams;
  }

  /** Starts this session's child for `auth`; `ended` is the pool's, told when it ends. */
  startChild(launch: ChildLaunch, auth: AuthInfo, ended: () => void): StdioChild {
    const start = launch.stdioStarts?.watch();
    if (start) this.start = start;
    const log = launch.log;
    return startStdioChild({
      command: launch.command,
      args: launch.args,
      ...(launch.cwd !== undefined ? { cwd: launch.cwd } : {}),
      env: launch.identityEnv ? withCallerIdentity(launch.env, auth) : launch.env,
      maxLineBytes: launch.maxLineBytes,
      maxStdinBytes: launch.maxStdinBytes,
      stopTimeoutMs: launch.stopTimeoutMs,
      label: this.sessionId,
      log: (event) => {
        start?.log(event);
        try {
          log(event);
        } catch {
          // Logging must never break serving.
        }
      },
      ...(start ? { onAnswered: () => start.answered() } : {}),
      onMessage: (message) => routeChildMessage(this, message),
      onEnd: () => {
        ended();
        // Waiting POSTs were failed by the child; the GET stream ends with it.
        this.get?.end(502, CHILD_END_MESSAGES.upstream_exited);
      },
    });
  }
}
