import { waitBounded } from '../../core/kernel/bounded-wait.js';

/** One exchange in flight and the requests waiting for it. */
interface Shared<T> {
  readonly work: Promise<T>;
  readonly stop: AbortController;
  waiters: number;
}

/**
 * Identical requests in flight at once share one exchange with the server, as HTTP caches collapse identical
 * requests ("request coalescing"): the first starts it, those that arrive before it ends wait for the same answer.
 * Nothing outlives the exchange: a request arriving after it ended starts a new one, so no answer is older than
 * the request it serves. Only for requests whose answers cannot differ (the same server, method, parameters and
 * passed-on headers, no session, and a server not told who asks). Held entries are exactly the exchanges in flight,
 * each one a request the server would have had anyway.
 *
 * @example
 * const shared = new SharedExchanges<Part>();
 * const part = await shared.join(key, request.signal, (signal) => fetchPage(signal), () => ({ member, failure: 'upstream_timeout' }));
 */
export class SharedExchanges<T> {
  private readonly inFlight = new Map<string, Shared<T>>();

  /** Exchanges in flight now. */
  get size(): number {
    return this.inFlight.size;
  }

  /**
   * The answer of the exchange in flight under `key`, or of one started now with `start`. `start`'s signal aborts
   * once every request waiting for it has left. A request whose `signal` aborts stops waiting and gets `left()`.
   */
  async join(key: string, signal: AbortSignal, start: (signal: AbortSignal) => Promise<T>, left: () => T): Promise<T> {
    let shared = this.inFlight.get(key);
    if (shared === undefined) {
      const stop = new AbortController();
      const started: Shared<T> = { work: start(stop.signal).finally(() => this.drop(key, started)), stop, waiters: 0 };
      shared = started;
      this.inFlight.set(key, shared);
    }
    shared.waiters += 1;
    const end = await waitBounded(shared.work, { signal });
    shared.waiters -= 1;
    if (end.ended === 'settled') return end.value;
    if (shared.waiters === 0) {
      // Nobody waits any more: the server sees its client leave, and no later request joins an ending exchange.
      this.drop(key, shared);
      shared.stop.abort(signal.reason);
    }
    return left();
  }

  private drop(key: string, shared: Shared<T>): void {
    if (this.inFlight.get(key) === shared) this.inFlight.delete(key);
  }
}
