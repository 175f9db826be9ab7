/**
 * How long a store lock is held at most: longer than all the work under it can take, so that a waiter (another
 * replica) never goes ahead while the holder still works, and short enough that a holder that died does not block
 * the others for long.
 */

/**
 * The longest hold of a lock under which `steps` operations run one after another, each bounded by `stepTimeoutMs`
 * milliseconds: every one of them timing out, plus `marginMs` for the rest (sealing, the event loop).
 *
 * @example lockTtlMs(8, 5_000, 5_000); // 45 000: eight requests of 5 s at most, and 5 s more
 */
export function lockTtlMs(steps: number, stepTimeoutMs: number, marginMs: number): number {
  return steps * stepTimeoutMs + marginMs;
}
