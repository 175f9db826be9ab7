/** How a {@link waitBounded} ended: the work settled first (its value), the time ran out, or the signal aborted. */
export type WaitEnd<T> = { readonly ended: 'settled'; readonly value: T } | { readonly ended: 'timeout' } | { readonly ended: 'aborted' };

/** The bounds of {@link waitBounded}; with neither, the wait is the work's own. */
export interface WaitBounds {
  /** Longest wait, in milliseconds. Default none. */
  readonly timeoutMs?: number | undefined;
  /** Ends the wait when it aborts (a client that left). Default none. */
  readonly signal?: AbortSignal | undefined;
  /** Whether the timer lets the process exit while it runs (a probe nobody else waits for). Default false. */
  readonly unrefTimer?: boolean;
}

/**
 * Waits for `work`, at most `timeoutMs` and no longer than `signal` stays unaborted. When a bound ends the wait
 * first, the work goes on unawaited (its later rejection is not reported as unhandled); when the work rejects
 * first, so does the wait. Neither the timer nor the signal's listener outlives the wait.
 *
 * @example
 * const end = await waitBounded(guard.ready(), { timeoutMs: 2_000 });
 * if (end.ended !== 'settled') throw new Error('the authorization server metadata did not load in time');
 */
export function waitBounded<T>(work: Promise<T>, bounds: WaitBounds): Promise<WaitEnd<T>> {
  const { timeoutMs, signal } = bounds;
  if (signal?.aborted) {
    work.catch(ignore);
    return Promise.resolve({ ended: 'aborted' });
  }
  return new Promise<WaitEnd<T>>((resolve, reject) => {
    let timer: NodeJS.Timeout | undefined;
    const finish = (): void => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
    };
    const onAbort = (): void => {
      finish();
      work.catch(ignore);
      resolve({ ended: 'aborted' });
    };
    if (timeoutMs !== undefined) {
      timer = setTimeout(() => {
        finish();
        work.catch(ignore);
        resolve({ ended: 'timeout' });
      }, timeoutMs);
      if (bounds.unrefTimer === true) timer.unref();
    }
    signal?.addEventListener('abort', onAbort, { once: true });
    work.then(
      (value) => {
        finish();
        resolve({ ended: 'settled', value });
      },
      (error: unknown) => {
        finish();
        reject(error);
      },
    );
  });
}

function ignore(): void {}
