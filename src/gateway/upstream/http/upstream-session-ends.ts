/**
 * Ends, at the upstream, sessions the gateway opened there for a session of its own that it then forgot (idle
 * expiry, eviction at a bound, the client's DELETE while the opening was in progress, shutdown): a `DELETE` naming the
 * upstream's `Mcp-Session-Id`, so that the upstream frees what the session holds at once rather than keeping it until
 * its own expiry (MCP 2025-11-25, Streamable HTTP, "Session Management": clients that no longer need a session SHOULD
 * send a DELETE). Best effort, in the background.
 */
import type { AuthInfo } from '../../../core/kernel/auth-info.js';
import { waitBounded } from '../../../core/kernel/bounded-wait.js';
import type { UpstreamCredentials } from '../../upstream-auth/upstream-credentials.js';
import { forwardedHeaders } from './forwarded-headers.js';
import type { HttpUpstreamSettings } from './http-exchange.js';

/** Most `DELETE`s in flight at once per upstream; more wait in a queue. */
export const MAX_SESSION_ENDS_IN_FLIGHT = 8;

/**
 * Most `DELETE`s waiting for a slot per upstream; one more is dropped and counted ({@link UpstreamSessionEnds.dropped}),
 * and the upstream expires that session itself. A few hundred bytes each.
 */
export const MAX_SESSION_ENDS_QUEUED = 1_024;

/** Longest time one `DELETE` may take once its credentials are known, in milliseconds (or the connect timeout if shorter). */
export const SESSION_END_TIMEOUT_MS = 5_000;

/** Longest time shutdown waits for the `DELETE`s queued and in flight, in all, in milliseconds; the rest are abandoned. */
export const SHUTDOWN_SESSION_ENDS_TIMEOUT_MS = 5_000;

/** One upstream session to end: its id there, the revision it was opened with, and the user it was opened for. */
export interface UpstreamSessionToEnd {
  readonly upstreamId: string;
  readonly protocolVersion: string;
  /** The user's verified identity, as their requests present it to the credentials. */
  readonly caller: AuthInfo;
}

/** What {@link UpstreamSessionEnds} needs of the upstream's settings. */
export type UpstreamSessionEndSettings = Pick<HttpUpstreamSettings, 'dispatcher' | 'origin' | 'path' | 'connectTimeoutMs' | 'identity'>;

/** Bounds of {@link UpstreamSessionEnds}. */
export interface UpstreamSessionEndBounds {
  /** Most `DELETE`s in flight at once. Default {@link MAX_SESSION_ENDS_IN_FLIGHT}. */
  readonly maxInFlight?: number;
  /** Most waiting for a slot. Default {@link MAX_SESSION_ENDS_QUEUED}. */
  readonly maxQueued?: number;
}

/**
 * Sends the `DELETE`s of one upstream: with the user's credentials (the same `credentials.authorization` every request
 * of theirs asks), the identity headers and `MCP-Protocol-Version`; at most `maxInFlight` at once, the rest waiting in
 * a queue of at most `maxQueued` (first in, first out; past it a session is dropped and counted, and left for the
 * upstream to expire), so that a mass eviction neither floods the upstream nor grows without bound. Each `DELETE` is
 * bounded by {@link SESSION_END_TIMEOUT_MS} from the moment it leaves the queue, its credentials included. One refused
 * with 401 is sent once more with renewed credentials (`credentials.renew`, a refresh for connected accounts), never
 * more. Never blocks a request; every failure (no connection any more, a refusal, a timeout) is ignored, and nothing
 * is logged.
 *
 * @example
 * const ends = new UpstreamSessionEnds(settings, credentials);
 * ends.end({ upstreamId, protocolVersion: '2025-11-25', caller });
 * await ends.close(); // at shutdown: what is waiting is sent, within SHUTDOWN_SESSION_ENDS_TIMEOUT_MS in all
 */
export class UpstreamSessionEnds {
  private inFlight = 0;
  private readonly queue: UpstreamSessionToEnd[] = [];
  private droppedCount = 0;
  private closed = false;
  /** Aborts every `DELETE` in flight once shutdown's time is up. */
  private readonly stop = new AbortController();
  /** Set while shutdown waits: called once nothing is queued or in flight. */
  private drained: (() => void) | undefined;
  private readonly maxInFlight: number;
  private readonly maxQueued: number;

  constructor(
    private readonly settings: UpstreamSessionEndSettings,
    private readonly credentials: UpstreamCredentials,
    bounds: UpstreamSessionEndBounds = {},
  ) {
    this.maxInFlight = bounds.maxInFlight ?? MAX_SESSION_ENDS_IN_FLIGHT;
    this.maxQueued = bounds.maxQueued ?? MAX_SESSION_ENDS_QUEUED;
  }

  /** Requests in flight now. */
  get pending(): number {
    return this.inFlight;
  }

  /** Sessions waiting for a slot now. */
  get queued(): number {
    return this.queue.length;
  }

  /** Sessions dropped since start because the queue was full. */
  get dropped(): number {
    return this.droppedCount;
  }

  /** Sends the `DELETE` for `session` in the background, or queues it while `maxInFlight` are in flight; unless closed. */
  end(session: UpstreamSessionToEnd): void {
    if (this.closed) return;
    if (this.inFlight < this.maxInFlight) this.start(session);
    else if (this.queue.length < this.maxQueued) this.queue.push(session);
    else this.droppedCount++;
  }

  /**
   * Shutdown: resolves once every `DELETE` queued, in flight or handed over meanwhile has ended, or after `timeoutMs`
   * in all (default {@link SHUTDOWN_SESSION_ENDS_TIMEOUT_MS}), when those in flight are aborted and the queue dropped.
   * Nothing is sent afterwards. Never rejects.
   */
  async close(timeoutMs = SHUTDOWN_SESSION_ENDS_TIMEOUT_MS): Promise<void> {
    if (this.closed) return;
    if (this.inFlight > 0) await waitBounded(new Promise<void>((resolve) => (this.drained = resolve)), { timeoutMs });
    this.closed = true;
    this.queue.length = 0;
    this.stop.abort();
  }

  private start(session: UpstreamSessionToEnd): void {
    this.inFlight++;
    void this.send(session)
      .catch(() => undefined)
      .finally(() => {
        this.inFlight--;
        const next = this.closed ? undefined : this.queue.shift();
        if (next) this.start(next);
        else if (this.inFlight === 0) this.drained?.();
      });
  }

  private async send(session: UpstreamSessionToEnd): Promise<void> {
    // One deadline for the whole end, the credentials and a renewal included: a renewal they start may take longer,
    // and goes on without holding this slot. Shutdown's own deadline aborts it too.
    const signal = AbortSignal.any([AbortSignal.timeout(Math.min(this.settings.connectTimeoutMs, SESSION_END_TIMEOUT_MS)), this.stop.signal]);
    const authorization = await untilAborted(this.credentials.authorization(session.caller), signal);
    if ((await this.sendDelete(session, authorization, signal)) !== 401) return;
    // Refused: the token may have expired or been revoked early. Renewed once; a second refusal is left alone.
    const renewed = await untilAborted(this.credentials.renew(session.caller, authorization), signal);
    if (renewed !== undefined && renewed !== authorization) await this.sendDelete(session, renewed, signal);
  }

  /** One `DELETE` with `authorization`; its status, or undefined when closed meanwhile (nothing sent). */
  private async sendDelete(session: UpstreamSessionToEnd, authorization: string, signal: AbortSignal): Promise<number | undefined> {
    if (this.closed) return undefined;
    const { dispatcher, origin, path, identity } = this.settings;
    const headers = { ...forwardedHeaders({}, identity, session.caller, session.upstreamId, false), 'mcp-protocol-version': session.protocolVersion, authorization };
    const answer = await dispatcher.request({ origin, path, method: 'DELETE', headers: headers as Record<string, string>, signal });
    // Only the status mattered: the body is dropped so the connection is reused.
    await answer.body.dump({ limit: 64 * 1024 });
    return answer.statusCode;
  }
}

/** `work`, or a rejection once `signal` aborts (the work itself goes on, unawaited). */
async function untilAborted<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  const end = await waitBounded(work, { signal });
  if (end.ended !== 'settled') throw signal.reason;
  return end.value;
}
