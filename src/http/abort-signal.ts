import type { ServerResponse } from 'node:http';

/**
 * An AbortSignal that fires when the client goes away before the answer is complete; already aborted when
 * that happened before it was asked for.
 */
export function abortSignalFor(res: ServerResponse): AbortSignal {
  const controller = new AbortController();
  if (res.writableFinished) return controller.signal;
  if (res.closed || res.destroyed) {
    controller.abort();
    return controller.signal;
  }
  res.once('close', () => {
    if (!res.writableFinished) controller.abort();
  });
  return controller.signal;
}
