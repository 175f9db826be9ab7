/** A signal bounded in time, and how to let it go once the work it bounds is done. */
export interface DeadlineSignal {
  /** Aborts when the parent signal does, or with a `TimeoutError` once the time is up. */
  readonly signal: AbortSignal;
  /** Clears the timer and the listener on the parent: call it when the work is over, whatever its outcome. */
  release(): void;
}

/**
 * A signal that aborts when `parent` does or after `ms` milliseconds, for work asked per request (a server's list
 * page). `AbortSignal.any([parent, AbortSignal.timeout(ms)])` does the same, but Node keeps weak references and a
 * finalization registry for every such signal, which a busy gateway pays for in garbage collection; this holds a
 * timer and one listener, both dropped by `release`.
 *
 * @example
 * const deadline = deadlineSignal(request.signal, 10_000);
 * try { await ask(deadline.signal); } finally { deadline.release(); }
 */
export function deadlineSignal(parent: AbortSignal, ms: number): DeadlineSignal {
  const controller = new AbortController();
  if (parent.aborted) {
    controller.abort(parent.reason);
    return { signal: controller.signal, release: () => {} };
  }
  const onParent = (): void => controller.abort(parent.reason);
  const timer = setTimeout(() => controller.abort(new DOMException('The operation was aborted due to timeout', 'TimeoutError')), ms);
  timer.unref();
  parent.addEventListener('abort', onParent, { once: true });
  return {
    signal: controller.signal,
    release: () => {
      clearTimeout(timer);
      parent.removeEventListener('abort', onParent);
    },
  };
}
