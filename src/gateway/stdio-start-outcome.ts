import { BASE_CHILD_ENV_NAMES } from './child-environment.js';
import type { ChildLogEvent } from './stdio-child.js';
import { recordListingFailure } from './upstream-listing-failure.js';

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
  /** Every log event of the process: its stderr lines and its exit are read. */
  log(event: ChildLogEvent): void;
  /** The process answered its first request (`initialize`, for a 2025 session and for the listing). */
  answered(): void;
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

/** Options of {@link createStdioStartOutcomes}. */
export interface StdioStartOutcomesOptions {
  /**
   * The processes' environment (`StdioUpstreamOptions.env`). The values it carries beyond `PATH`, `HOME` and
   * `LANG` (the program's own credentials, which a failing program may print) are hidden in a reason's stderr
   * line, as `[hidden]`; values shorter than 4 characters are left, since hiding them would garble the line.
   */
  env?: Readonly<Record<string, string>>;
}

const OK: StdioStartOutcome = Object.freeze({ ok: true });
/** Shortest value of the processes' environment hidden in a stderr line. */
const MIN_HIDDEN_LENGTH = 4;

/**
 * Keeps the outcome of the stdio upstream's most recent process start. A process settles its start when it
 * answers its first request (ok), or when it ends before that on its own: it exited, could not be started, or
 * wrote a line past the limit (not ok, with its exit and last stderr line as the start-up warning words them,
 * see `recordListingFailure`). A process the gateway stopped before it answered (the client left, DELETE,
 * shutdown, a listing's timeout) says nothing about the program and changes nothing. Later events of a process
 * that settled are ignored, but for stderr lines read after its exit, which complete its reason. The reason is
 * meant for `/readyz`, which anyone who reaches the gateway may ask: see `env` for what it never shows.
 *
 * @example
 * const starts = createStdioStartOutcomes();
 * const watch = starts.watch();
 * watch.log({ event: 'upstream_stderr', session: 'policy-coverage', line: "can't open file 'serve.py'" });
 * watch.log({ event: 'upstream_exit', session: 'policy-coverage', reason: 'upstream_exited', exitCode: 2 });
 * starts.latest(); // { ok: false, reason: 'the most recent upstream process exited with code 2 before it answered; …' }
 */
export function createStdioStartOutcomes(options: StdioStartOutcomesOptions = {}): StdioStartOutcomes {
  const hidden = Object.entries(options.env ?? {})
    .filter(([name, value]) => !BASE_CHILD_ENV_NAMES.includes(name) && value.length >= MIN_HIDDEN_LENGTH)
    .map(([, value]) => value)
    // Longest first, so that a value containing another is hidden whole.
    .sort((a, b) => b.length - a.length);
  const hide = (line: string): string => hidden.reduce((text, value) => text.replaceAll(value, '[hidden]'), line);
  let latest: StdioStartOutcome | undefined;
  return {
    watch() {
      const failure = recordListingFailure({ stdio: true, credentials: false });
      let settled = false;
      let mine: StdioStartOutcome | undefined;
      let tooLarge = false;
      const fail = (): void => {
        const { exit, stderr } = failure.explain('upstream_exited');
        const line = stderr.at(-1);
        const how = tooLarge ? 'was stopped for a message larger than the gateway accepts' : (exit ?? 'ended');
        latest = mine = {
          ok: false,
          reason: `the most recent upstream process ${how} before it answered${line !== undefined ? `; its last stderr line: ${JSON.stringify(line)}` : ''}`,
        };
      };
      return {
        log(given: ChildLogEvent) {
          // Hidden before the recorder clips the line, so that no part of a value is left.
          const event = given.event === 'upstream_stderr' && given.line !== undefined ? { ...given, line: hide(given.line) } : given;
          if (settled) {
            // A process's stderr may still be read after its exit: its last line belongs to its reason.
            if (event.event === 'upstream_stderr' && mine !== undefined && latest === mine) {
              failure.childLog(event);
              fail();
            }
            return;
          }
          failure.childLog(event);
          if (event.event !== 'upstream_exit') return;
          settled = true;
          tooLarge = event.reason === 'upstream_line_too_large';
          if (event.reason !== 'upstream_stopped') fail();
        },
        answered() {
          if (settled) return;
          settled = true;
          latest = OK;
        },
      };
    },
    latest: () => latest,
  };
}
