/**
 * The gateway's start-up comparison of each upstream with the pins, while it is in progress. In `enforce` the
 * gateway serves as soon as it is built, but its start-up listing may take a while: until a server's listing has
 * been compared with the pins, what the pins know of it is only what was accepted, not what it serves now. Calls to
 * that server's tools and its `tools/list` wait for the comparison (see `withStartupComparison`), so that a tool
 * changed while the gateway was down is never called, nor listed, unchecked.
 */
import { waitBounded } from '../../core/kernel/bounded-wait.js';

/** One server's comparison in progress: settled when it ends, whether the listing succeeded or not. */
interface Pending {
  readonly done: Promise<void>;
  readonly end: () => void;
}

/** See the module's description. */
export class StartupComparisons {
  private readonly pending = new Map<string, Pending>();
  /** Servers whose start-up comparison has ended: it is begun once per server and process. */
  private readonly ended = new Set<string>();

  /**
   * Marks the comparison of each of `servers` as begun, unless it has begun or ended already. Returns the servers
   * whose comparison this call began: the listing that began one ends it (see {@link end}), and no other may.
   */
  begin(servers: Iterable<string>): string[] {
    const begun: string[] = [];
    for (const server of servers) {
      if (this.ended.has(server) || this.pending.has(server)) continue;
      let end!: () => void;
      const done = new Promise<void>((resolve) => (end = resolve));
      this.pending.set(server, { done, end });
      begun.push(server);
    }
    return begun;
  }

  /** Ends the comparison of `server` (its listing compared, or failed): calls waiting for it go on. */
  end(server: string): void {
    const pending = this.pending.get(server);
    this.ended.add(server);
    if (pending === undefined) return;
    this.pending.delete(server);
    pending.end();
  }

  /** Ends every comparison still in progress (the gateway stops). */
  endAll(): void {
    for (const server of [...this.pending.keys()]) this.end(server);
  }

  /** Whether no comparison is in progress: what waits for them has nothing more to ask. */
  get idle(): boolean {
    return this.pending.size === 0;
  }

  /** Whether the comparison of `server` is in progress. */
  inProgress(server: string): boolean {
    return this.pending.has(server);
  }

  /** The servers whose comparison is in progress. */
  servers(): string[] {
    return [...this.pending.keys()];
  }

  /**
   * Waits until the comparison of every server in `servers` has ended, at most `timeoutMs` milliseconds, and no
   * longer than `signal` stays unaborted (the client left: nothing is kept for it). Resolves to the servers still in
   * progress then (empty when none).
   */
  async wait(servers: readonly string[], timeoutMs: number, signal?: AbortSignal): Promise<string[]> {
    const waiting = servers.map((server) => this.pending.get(server)?.done).filter((done) => done !== undefined);
    if (waiting.length === 0 || signal?.aborted) return servers.filter((server) => this.pending.has(server));
    // Neither a timer nor a listener on the signal outlives the wait.
    await waitBounded(Promise.all(waiting), { timeoutMs, signal });
    return servers.filter((server) => this.pending.has(server));
  }
}
