import { randomUUID } from 'node:crypto';
import type { AuthInfo } from '../../../core/kernel/auth-info.js';
import { callerKey } from '../../../core/kernel/caller-key.js';
import { createSessionRegistry, type BoundSession, type SessionRefusalReason } from '../../../core/session/session-registry.js';
import type { StdioChild } from './stdio-child.js';

/** Why no child could be had: a bound was reached, or the token names nobody a process could belong to. */
export type ChildRefusal = 'process_limit' | 'caller_process_limit' | 'no_identity';

/** What the pool keeps per child: at least the child; the stdio upstream adds its client streams. */
export interface PooledChild {
  /** Set by `start`, right after the slot is bound. */
  child: StdioChild;
}

/** Options of {@link createChildProcessPool}. */
export interface ChildProcessPoolOptions<T extends PooledChild> {
  /** Most children running at once, counting those being stopped. */
  maxProcesses: number;
  /** Most children one caller (issuer, subject, client; see `callerKey`) holds. */
  maxProcessesPerCaller: number;
  /** A child with no request or stream in progress for this long is stopped, in milliseconds. */
  idleTimeoutMs: number;
  /** Clock, in milliseconds, e.g. a fake one in tests. Default `Date.now`. */
  now?: () => number;
  /** Makes the slot for a new session (nothing started yet). */
  createSlot(sessionId: string, auth: AuthInfo): T;
  /**
   * Starts the child for a slot just bound. `ended` must be called when it ends (the pool then forgets its
   * session, so requests naming it get 404).
   */
  startChild(slot: T, sessionId: string, auth: AuthInfo, ended: () => void): StdioChild;
}

/**
 * Stdio children by MCP session, one user's each. See {@link createChildProcessPool}.
 */
export interface ChildProcessPool<T extends PooledChild> {
  /** Children running, counting those being stopped. */
  readonly running: number;
  /**
   * A new session with its own child, for a 2025 client's `initialize`; the session id is the gateway's: `sessionId`
   * when given (one chosen beforehand, e.g. to seal it), else a new random UUID.
   */
  open(auth: AuthInfo, sessionId?: string): { session: BoundSession<T> } | { refused: ChildRefusal };
  /** The caller's child for requests that carry no session (2026-07-28), started on first use. */
  forCaller(auth: AuthInfo): { session: BoundSession<T> } | { refused: ChildRefusal };
  /** The session named by a client, if it is the caller's (see `SessionRegistry.lookup`). */
  lookup(sessionId: string, auth: AuthInfo): { session: BoundSession<T> } | { refused: SessionRefusalReason };
  /** Ends a session and stops its child. */
  end(sessionId: string): void;
  /** Stops every child and resolves once all of them exited. Later calls to `open` are refused. */
  close(): Promise<void>;
}

/** Prefix of the ids of callers' sessionless children: never issued to a client, so never named by one. */
const CALLER_SESSION_PREFIX = 'caller:';

/**
 * The stdio upstream's processes, kept in the project's one session registry (`createSessionRegistry`),
 * so a child is bound to its caller exactly as an HTTP upstream's session is, and one user's process never
 * serves another. Bounds are refusals, never evictions (`evict: false`): a process holds someone's live
 * state, so past `maxProcesses` or `maxProcessesPerCaller` the new one is refused and nobody loses theirs.
 * Idle children are stopped after `idleTimeoutMs` by a periodic sweep (an open GET stream or request keeps
 * a child in use).
 */
export function createChildProcessPool<T extends PooledChild>(options: ChildProcessPoolOptions<T>): ChildProcessPool<T> {
  const running = new Set<StdioChild>();
  const callerSessions = new Map<string, string>();
  let closed = false;
  const registry = createSessionRegistry<T>({
    maxSessions: options.maxProcesses,
    maxSessionsPerCaller: options.maxProcessesPerCaller,
    idleTimeoutMs: options.idleTimeoutMs,
    evict: false,
    ...(options.now ? { now: options.now } : {}),
    onForget: (session) => {
      // Expired, ended or cleared: the process goes with its session.
      void session.value.child?.stop();
    },
  });
  // Expiry is lazy in the registry; a child holds a process, so idle ones are looked for on a timer too.
  const sweepTimer = setInterval(() => registry.sweep(), Math.max(50, Math.min(60_000, Math.floor(options.idleTimeoutMs / 4))));
  sweepTimer.unref();

  function start(sessionId: string, auth: AuthInfo, onForgotten?: () => void): { session: BoundSession<T> } | { refused: ChildRefusal } {
    if (closed || running.size >= options.maxProcesses) {
      // Stopping children still count, and idle ones may have expired: sweep, then look again.
      registry.sweep();
      if (closed || running.size >= options.maxProcesses) return { refused: 'process_limit' };
    }
    const slot = options.createSlot(sessionId, auth);
    const bound = registry.bindInUse(sessionId, auth, slot);
    if ('refused' in bound) {
      if (bound.refused === 'no_identity') return { refused: 'no_identity' };
      if (bound.refused === 'caller_full') return { refused: 'caller_process_limit' };
      return { refused: 'process_limit' };
    }
    let child: StdioChild;
    try {
      child = options.startChild(slot, sessionId, auth, () => {
        running.delete(child);
        registry.forget(sessionId, false);
        onForgotten?.();
      });
    } catch (error) {
      // Held in use since it was bound: a session whose child never started must not keep its slot for ever.
      registry.forget(sessionId, false);
      throw error;
    }
    slot.child = child;
    running.add(child);
    void child.ended.then(() => running.delete(child));
    // Handed back as `lookup` would, released (its user acquires it before anything awaits), not looked up: with an
    // idle timeout of a few ms, the process just started could be found expired already and stopped.
    bound.session.release();
    return bound;
  }

  return {
    get running() {
      return running.size;
    },
    open(auth, sessionId) {
      return start(sessionId ?? randomUUID(), auth);
    },
    forCaller(auth) {
      const key = callerKey(auth);
      if (key === undefined) return { refused: 'no_identity' };
      const known = callerSessions.get(key);
      if (known !== undefined) {
        const found = registry.lookup(known, auth);
        if ('session' in found && found.session.value.child.alive) return found;
        callerSessions.delete(key);
      }
      const sessionId = `${CALLER_SESSION_PREFIX}${randomUUID()}`;
      const started = start(sessionId, auth, () => {
        if (callerSessions.get(key) === sessionId) callerSessions.delete(key);
      });
      if ('session' in started) callerSessions.set(key, sessionId);
      return started;
    },
    lookup(sessionId, auth) {
      if (sessionId.startsWith(CALLER_SESSION_PREFIX)) return { refused: 'session_unknown' };
      return registry.lookup(sessionId, auth);
    },
    end(sessionId) {
      registry.forget(sessionId);
    },
    async close() {
      closed = true;
      clearInterval(sweepTimer);
      registry.clear();
      callerSessions.clear();
      const children = [...running];
      await Promise.all(children.map((child) => child.stop()));
    },
  };
}
