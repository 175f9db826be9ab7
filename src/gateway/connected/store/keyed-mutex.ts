/**
 * Mutual exclusion by name within one process: what makes a store's read-then-write steps (compare-and-set, take)
 * atomic when the store itself (a directory) has no such operation.
 */
import { waitBounded } from '../../../core/kernel/bounded-wait.js';

/** Runs work one at a time per name; see {@link createKeyedMutex}. */
export interface KeyedMutex {
  /**
   * Runs `work` once every earlier `run` of `name` has finished, or once `maxWaitMs` milliseconds have passed
   * when given (a holder that overruns its time no longer blocks the next one).
   */
  run<T>(name: string, work: () => Promise<T>, maxWaitMs?: number): Promise<T>;
}

/**
 * Creates the mutex. It keeps one promise per name with work pending or running, so it holds no more than the
 * work under way.
 *
 * @example
 * const mutex = createKeyedMutex();
 * await mutex.run('conn:abc', async () => { const v = await read(); await write(next(v)); });
 */
export function createKeyedMutex(): KeyedMutex {
  const tails = new Map<string, Promise<void>>();
  return {
    async run<T>(name: string, work: () => Promise<T>, maxWaitMs?: number): Promise<T> {
      // Each caller chains after the one before it, so that they go in the order they came.
      const before = tails.get(name) ?? Promise.resolve();
      let release!: () => void;
      const mine = new Promise<void>((resolve) => (release = resolve));
      const tail = before.then(() => mine);
      tails.set(name, tail);
      if (maxWaitMs === undefined) await before;
      else await waitBounded(before, { timeoutMs: maxWaitMs });
      try {
        return await work();
      } finally {
        release();
        if (tails.get(name) === tail) tails.delete(name);
      }
    },
  };
}
