import type { ChildLogEvent } from './stdio-child.js';
import { recordListingFailure } from '../upstream-listing-failure.js';

/**
 * What the gateway last learnt from starting its stdio upstream's program, for readiness (`/readyz`): a program
 * that can be started may still not serve (a misspelt script, a missing module, a bad configuration file of its
 * own), and only a process shows it. No process is started to learn it: the processes the gateway starts anyway
 * (the policy check's listing at start-up and on each reload, and each session's) say how their start went.
 */

/** How the most recent process start that settled went; see {@link StdioStartOutcomes}. */
export type StdioStartOutcome = { readonly ok: true } | { readonly ok: false; readonly reason: string };

/** Follows one process from its start; give it the process's log events and its first answer. */
export interface StdioStartWatch {
  /** Every log event of the process: its exit is read. */
  log(event: ChildLogEvent): void;
  /** The process answered its first request (`initialize`, for a 2025 session and for the listing). */
  answered(): void;
  /**
   * The gateway gave up waiting for the answer to a session's `initialize` after `afterMs` milliseconds. Before
   * the first answer, that settles the start as not ok: a program that starts and never answers does not serve.
   * After it, it changes nothing. Not told of other requests (a caller decides how long a call takes), nor of the
   * policy check's listing (its short timeout would mark a program that is only slow to start).
   */
  timedOut(afterMs: number): void;
}

/** The outcomes of the stdio upstream's process starts; see {@link createStdioStartOutcomes}. */
export interface StdioStartOutcomes {
  /** A watch for one process about to start. */
  watch(): StdioStartWatch;
  /**
   * The newest outcome: not ok once a process exited or could not be started before it answered, ok again once
   * a later one answers; undefined while none has settled yet. A new object for each failure, so a change is seen.
   */
  latest(): StdioStartOutcome | undefined;
}

/**
 * Options of {@link createStdioStartOutcomes}. Kept for callers that passed the processes' environment; the reason
 * no longer quotes a stderr line, so nothing of it can show there.
 */
export interface StdioStartOutcomesOptions {
  /** Unused: once read to hide the program's own credentials from a quoted stderr line. */
  env?: Readonly<Record<string, string>>;
}

const OK: StdioStartOutcome = Object.freeze({ ok: true });

/**
 * Keeps the outcome of the stdio upstream's most recent process start. A process settles its start when it
 * answers its first request (ok), when the gateway gives up waiting for a session's `initialize` (not ok: a
 * program that hangs), or when it ends before that on its own: it exited, could not be started, or wrote a line
 * past the limit (not ok, with its exit as the start-up warning words it, see `recordListingFailure`). A process
 * the gateway stopped before it answered for any other reason (the client left, DELETE, shutdown) says nothing
 * about the program and changes nothing. The reason is meant for `/readyz`, which anyone who reaches the gateway
 * may ask, so it names the exit only and points at the log: a program's stderr may carry anything (its own
 * secrets, a caller's subject), and the log, which operators alone read, has every line.
 *
 * @example
 * const starts = createStdioStartOutcomes();
 * const watch = starts.watch();
 * watch.log({ event: 'upstream_exit', session: 'policy-coverage', reason: 'upstream_exited', exitCode: 2 });
 * starts.latest(); // { ok: false, reason: 'the most recent upstream process exited with code 2 before it answered; …' }
 */
export function createStdioStartOutcomes(_options: StdioStartOutcomesOptions = {}): StdioStartOutcomes {
  let latest: StdioStartOutcome | undefined;
  return {
    watch() {
      const failure = recordListingFailure({ stdio: true, credentials: false });
      let settled = false;
      return {
        log(event: ChildLogEvent) {
          if (settled || event.event !== 'upstream_exit') return;
          failure.childLog(event);
          settled = true;
          if (event.reason === 'upstream_stopped') return;
          const how = event.reason === 'upstream_line_too_large' ? 'was stopped for a message larger than the gateway accepts' : (failure.explain('upstream_exited').exit ?? 'ended');
          latest = { ok: false, reason: `the most recent upstream process ${how} before it answered; its stderr is in the gateway's log (upstream_stderr)` };
        },
        answered() {
          if (settled) return;
          settled = true;
          latest = OK;
        },
        timedOut(afterMs: number) {
          if (settled) return;
          settled = true;
          latest = { ok: false, reason: `the most recent upstream process did not answer its first request within ${afterMs} ms; its stderr is in the gateway's log (upstream_stderr)` };
        },
      };
    },
    latest: () => latest,
  };
}
