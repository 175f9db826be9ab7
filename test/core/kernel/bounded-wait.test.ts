import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { waitBounded } from '../../../src/core/kernel/bounded-wait.js';

/** A promise and the functions that settle it. */
function deferred<T>(): { promise: Promise<T>; resolve: (value: T) => void; reject: (error: unknown) => void } {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

describe('waitBounded', () => {
  it('gives the work its value when it settles first', async () => {
    const end = await waitBounded(Promise.resolve(42), { timeoutMs: 1_000 });
    assert.deepEqual(end, { ended: 'settled', value: 42 });
  });

  it('rejects as the work does when it rejects first', async () => {
    await assert.rejects(waitBounded(Promise.reject(new Error('boom')), { timeoutMs: 1_000 }), /boom/);
  });

  it('ends at the timeout, leaving the work going on and its later rejection handled', async () => {
    const work = deferred<number>();
    const started = performance.now();
    const end = await waitBounded(work.promise, { timeoutMs: 30 });
    assert.deepEqual(end, { ended: 'timeout' });
    assert.ok(performance.now() - started >= 25, 'waited about the timeout');
    let unhandled = false;
    const onUnhandled = (): void => void (unhandled = true);
    process.once('unhandledRejection', onUnhandled);
    work.reject(new Error('late'));
    await new Promise((resolve) => setTimeout(resolve, 20));
    process.off('unhandledRejection', onUnhandled);
    assert.equal(unhandled, false);
  });

  it('ends when the signal aborts, and removes its listener from the signal', async () => {
    const work = deferred<void>();
    const controller = new AbortController();
    let listeners = 0;
    const signal = controller.signal;
    const add = signal.addEventListener.bind(signal);
    const remove = signal.removeEventListener.bind(signal);
    signal.addEventListener = ((...args: Parameters<AbortSignal['addEventListener']>) => {
      listeners++;
      add(...args);
    }) as AbortSignal['addEventListener'];
    signal.removeEventListener = ((...args: Parameters<AbortSignal['removeEventListener']>) => {
      listeners--;
      remove(...args);
    }) as AbortSignal['removeEventListener'];
    const waiting = waitBounded(work.promise, { timeoutMs: 10_000, signal });
    assert.equal(listeners, 1);
    controller.abort();
    assert.deepEqual(await waiting, { ended: 'aborted' });
    assert.equal(listeners, 0);
  });

  it('ends at once for a signal already aborted', async () => {
    const end = await waitBounded(new Promise<void>(() => {}), { signal: AbortSignal.abort() });
    assert.deepEqual(end, { ended: 'aborted' });
  });

  it('clears its timer and listener when the work settles first', async () => {
    const controller = new AbortController();
    const end = await waitBounded(Promise.resolve('done'), { timeoutMs: 60_000, signal: controller.signal });
    assert.deepEqual(end, { ended: 'settled', value: 'done' });
    // A timer left running would hold this test file's process for a minute; an abort now must change nothing.
    controller.abort();
  });
});
