/**
 * How often one warning is repeated while its cause lasts: a warning per key at most once an interval, sooner when
 * its problem changes. Bounded in keys, so that keys an attacker can choose (rule paths, file names) cannot grow it.
 */

/** Default interval between two warnings of one key, in milliseconds: one minute. */
export const DEFAULT_WARNING_INTERVAL_MS = 60_000;
/** Default number of keys whose last warning is remembered; past it, the one warned longest ago is forgotten. */
export const DEFAULT_MAX_WARNING_KEYS = 1000;

/**
 * Decides whether a warning is due. A key is warned about at once the first time, at most once every `intervalMs`
 * while its problem stays the same, and at once again when its problem changes.
 *
 * @example
 * const limiter = new WarningLimiter();
 * if (limiter.due('policy.tools.refund')) emitWarning(warn, 'a policy rule could not be decided', { rule: 'policy.tools.refund' });
 */
export class WarningLimiter {
  private readonly last = new Map<string, { readonly at: number; readonly problem: string }>();

  /**
   * @param intervalMs - Least time between two warnings of one key with the same problem. Default one minute.
   * @param maxKeys - Most keys remembered. Default 1000.
   * @param now - The clock, in milliseconds (tests give their own).
   */
  constructor(
    private readonly intervalMs: number = DEFAULT_WARNING_INTERVAL_MS,
    private readonly maxKeys: number = DEFAULT_MAX_WARNING_KEYS,
    private readonly now: () => number = Date.now,
  ) {}

  /** Whether a warning about `key` (with `problem`, when its text matters) is due now; when it is, it is counted as given. */
  due(key: string, problem = ''): boolean {
    const at = this.now();
    const last = this.last.get(key);
    if (last !== undefined && last.problem === problem && at - last.at < this.intervalMs) return false;
    // Deleted first, so that the map's order is the order of warnings: the first key is the one warned longest ago.
    this.last.delete(key);
    if (this.last.size >= this.maxKeys) this.last.delete(this.last.keys().next().value as string);
    this.last.set(key, { at, problem });
    return true;
  }

  /** Forgets `key` (its problem is over); whether a warning about it had been given and is now ended. */
  clear(key: string): boolean {
    return this.last.delete(key);
  }
}
