/**
 * Whether a Redis the gateway depends on is reachable, as its users last found it: one warning when it is lost and
 * one when it is back, not one per failed command. Shared by every Redis-backed store (the rate limits and DPoP
 * replay cache, the connected accounts' token store), so that each reports an outage the same way.
 */

/** What a {@link RedisHealth} says: the sentence for a loss (given the reason) and the one for a recovery. */
export interface RedisHealthMessages {
  lost(reason: string): string;
  readonly back: string;
}

/**
 * Back is the first command that succeeds, or a reconnection: a timed-out command leaves the connection up, so no
 * reconnection would come, and the flag would hide the next outage.
 *
 * @example
 * const health = new RedisHealth({ lost: (why) => `Redis is unavailable (${why})`, back: 'Redis is back' }, warn);
 * client.on('error', (error) => health.lost(error.message));
 */
export class RedisHealth {
  private down = false;

  constructor(
    private readonly messages: RedisHealthMessages,
    /** Told each change, with the reason of a loss as its second argument. */
    private readonly warn: (message: string, reason?: string) => void,
  ) {}

  /** Whether the last command or connection failed. */
  get unavailable(): boolean {
    return this.down;
  }

  lost(why: string): void {
    if (this.down) return;
    this.down = true;
    this.warn(this.messages.lost(why), why);
  }

  back(): void {
    if (!this.down) return;
    this.down = false;
    this.warn(this.messages.back);
  }
}

/**
 * A short reason for a Redis failure, for logs, readiness and `check`: what happened in a few words, never the
 * client library's own sentence (which names its options) nor an address.
 *
 * @example
 * shortRedisReason('connect ECONNREFUSED 127.0.0.1:6379'); // 'connection refused'
 */
export function shortRedisReason(raw: string): string {
  if (/ECONNREFUSED/.test(raw)) return 'connection refused';
  if (/ENOTFOUND|EAI_AGAIN/.test(raw)) return 'host not found';
  if (/ETIMEDOUT|timed out|timeout|no connection within/i.test(raw)) return 'timed out';
  if (/ECONNRESET|EPIPE/.test(raw)) return 'connection reset';
  if (/\b(WRONGPASS|NOAUTH)\b|invalid password|AUTH failed/i.test(raw)) return 'credentials refused';
  if (/\bNOPERM\b/.test(raw)) return 'command not permitted';
  if (/\bOOM\b/.test(raw)) return 'out of memory';
  if (/\bLOADING\b/.test(raw)) return 'loading its data';
  if (/\bREADONLY\b/.test(raw)) return 'read-only replica';
  if (/writeable|Connection is closed|not connected|not ready/i.test(raw)) return 'not connected';
  return 'command failed';
}
