// One exchange for identical requests in flight: waiters share its answer, the exchange's signal aborts only once
// every waiter has left, and nothing is kept once it ends.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { SharedExchanges } from '../../../src/gateway/multiplex/shared-exchanges.js';

/** Work that ends when told, seeing its signal. */
function heldWork(): { start: (signal: AbortSignal) => Promise<string>; finish: (value: string) => void; signals: AbortSignal[] } {
  const signals: AbortSignal[] = [];
  let finish: (value: string) => void = () => {};
  return {
    signals,
    finish: (value) => finish(value),
    start: (signal) => {
      signals.push(signal);
      return new Promise<string>((resolve) => (finish = resolve));
    },
  };
}

describe('SharedExchanges', () => {
  it('starts one exchange for every request under one key while it is in flight, and a new one after', async () => {
    const shared = new SharedExchanges<string>();
    const work = heldWork();
    const waiting = [1, 2, 3].map(() => shared.join('k', new AbortController().signal, work.start, () => 'left'));
    assert.equal(work.signals.length, 1);
    assert.equal(shared.size, 1);
    work.finish('answer');
    assert.deepEqual(await Promise.all(waiting), ['answer', 'answer', 'answer']);
    assert.equal(shared.size, 0, 'nothing is kept once the exchange ended');
    const again = shared.join('k', new AbortController().signal, work.start, () => 'left');
    assert.equal(work.signals.length, 2, 'a request after the end starts a new exchange');
    work.finish('second');
    assert.equal(await again, 'second');
  });

  it('keeps different keys apart', async () => {
    const shared = new SharedExchanges<string>();
    const a = heldWork();
    const b = heldWork();
    const first = shared.join('a', new AbortController().signal, a.start, () => 'left');
    const second = shared.join('b', new AbortController().signal, b.start, () => 'left');
    a.finish('A');
    b.finish('B');
    assert.deepEqual(await Promise.all([first, second]), ['A', 'B']);
  });

  it('aborts the exchange only when every waiter has left, and a later request does not join the ending one', async () => {
    const shared = new SharedExchanges<string>();
    const work = heldWork();
    const one = new AbortController();
    const two = new AbortController();
    const first = shared.join('k', one.signal, work.start, () => 'left');
    const second = shared.join('k', two.signal, work.start, () => 'left');
    one.abort();
    assert.equal(await first, 'left');
    assert.equal(work.signals[0]!.aborted, false, 'one waiter stays');
    two.abort();
    assert.equal(await second, 'left');
    assert.equal(work.signals[0]!.aborted, true, 'nobody waits: the exchange is ended');
    assert.equal(shared.size, 0);
    const later = shared.join('k', new AbortController().signal, work.start, () => 'left');
    assert.equal(work.signals.length, 2, 'a new exchange, not the ending one');
    work.finish('fresh');
    assert.equal(await later, 'fresh');
  });

  it('passes a failure of the exchange to every waiter', async () => {
    const shared = new SharedExchanges<string>();
    let fail: (error: Error) => void = () => {};
    const start = (): Promise<string> => new Promise<string>((_resolve, reject) => (fail = reject));
    const waiting = [1, 2].map(() => shared.join('k', new AbortController().signal, start, () => 'left'));
    fail(new Error('broken'));
    for (const result of await Promise.allSettled(waiting)) assert.equal(result.status, 'rejected');
    assert.equal(shared.size, 0);
  });
});
