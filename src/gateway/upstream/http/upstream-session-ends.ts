/**
 * Ends, at the upstream, sessions the gateway opened there for a session of its own that it then forgot (idle
 * expiry, eviction at a bound): a `DELETE` naming the upstream's `Mcp-Session-Id`, so that the upstream frees what
 * the session holds at once rather than keeping it until its own expiry (MCP 2025-11-25, Streamable HTTP, "Session
 * Management": clients that no longer need a session SHOULD send a DELETE). Best effort, in the background.
 */
import type { AuthInfo } from '../../../core/kernel/auth-info.js';
import type { UpstreamCredentials } from '../../upstream-auth/upstream-credentials.js';
import { forwardedHeaders } from './forwarded-headers.js';
import type { HttpUpstreamSettings } from './http-exchange.js';

/** Most `DELETE`s in flight at once per upstream; one more is skipped (the upstream expires that session itself). */
export const MAX_SESSION_ENDS_IN_FLIGHT = 8;

/** Longest time one `DELETE` may take once its credentials are known, in milliseconds (or the connect timeout if shorter). */
export const SESSION_END_TIMEOUT_MS = 5_000;

/** One upstream session to end: its id there, the revision it was opened with, and the user it was opened for. */
export interface UpstreamSessionToEnd {
  readonly upstreamId: string;
  readonly protocolVersion: string;
  /** The user's verified identity, as their requests present it to the credentials. */
  readonly caller: AuthInfo;
}

/** What {@link UpstreamSessionEnds} needs of the upstream's settings. */
export type UpstreamSessionEndSettings = Pick<HttpUpstreamSettings, 'dispatcher' | 'origin' | 'path' | 'connectTimeoutMs' | 'identity'>;

/**
 * Sends the `DELETE`s of one upstream: with the user's credentials (the same `credentials.authorization` every request
 * of theirs asks), the identity headers and `MCP-Protocol-Version`; at most `maxInFlight` at once (a mass eviction
 * does not flood the upstream: beyond that, a session is left for the upstream to expire); each bounded by
 * {@link SESSION_END_TIMEOUT_MS}. Never blocks a request; every failure (no connection any more, a refusal, a timeout)
 * is ignored, and nothing is logged.
 *
 * @example
 * const ends = new UpstreamSessionEnds(settings, credentials);
 * ends.end({ upstreamId, protocolVersion: '2025-11-25', caller });
 * ends.close(); // at shutdown: nothing more is sent
 */
export class UpstreamSessionEnds {
  private inFlight = 0;
  private closed = false;

  constructor(
    private readonly settings: UpstreamSessionEndSettings,
    private readonly credentials: UpstreamCredentials,
    private readonly maxInFlight = MAX_SESSION_ENDS_IN_FLIGHT,
  ) {}

  /** Requests in flight now. */
  get pending(): number {
    return this.inFlight;
  }

  /** Sends the `DELETE` for `session` in the background, unless closed or `maxInFlight` are in flight already. */
  end(session: UpstreamSessionToEnd): void {
    if (this.closed || this.inFlight >= this.maxInFlight) return;
    this.inFlight++;
    void this.send(session)
      .catch(() => undefined)
      .finally(() => this.inFlight--);
  }

  /** Sends nothing more (the pool is about to close); those in flight end with it. */
  close(): void {
    this.closed = true;
  }

  private async send(session: UpstreamSessionToEnd): Promise<void> {
    const { dispatcher, origin, path, connectTimeoutMs, identity } = this.settings;
    // One deadline for the whole end, the credentials included: a renewal they start may take longer, and goes on
    // without holding this slot.
    const signal = AbortSignal.timeout(Math.min(connectTimeoutMs, SESSION_END_TIMEOUT_MS));
    const authorization = await untilAborted(this.credentials.authorization(session.caller), signal);
    if (this.closed) return;
    const headers = { ...forwardedHeaders({}, identity, session.caller, session.upstreamId, false), 'mcp-protocol-version': session.protocolVersion, authorization };
    const answer = await dispatcher.request({
      origin,
      path,
      method: 'DELETE',
      headers: headers as Record<string, string>,
      signal,
    });
    // Only the status mattered, and nothing is done with it: the body is dropped so the connection is reused.
    await answer.body.dump({ limit: 64 * 1024 });
  }
}

/** `work`, or a rejection once `signal` aborts (the work itself goes on, unawaited). */
function untilAborted<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const stop = (): void => reject(signal.reason);
    if (signal.aborted) return stop();
    signal.addEventListener('abort', stop, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener('abort', stop));
  });
}
