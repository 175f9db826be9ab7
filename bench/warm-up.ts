/**
 * The warm-up before a part's rounds: long enough that the first round measures the served path, not its compilation.
 */

/** Seconds of each warm-up run after the first. */
const SETTLE_RUN_SECONDS = 1;
/** Warm-up runs after the first, at most. */
const MAX_SETTLE_RUNS = 8;
/** Seconds of load a warm-up may add after its first run, at most. */
export const MAX_SETTLE_SECONDS = MAX_SETTLE_RUNS * SETTLE_RUN_SECONDS;
/** How close two warm-up runs in a row must come in req/s (as a share of the higher) for a target to count as warm. */
const SETTLED_WITHIN = 0.05;

/**
 * Warms one target up: a run of `seconds`, then runs of {@link SETTLE_RUN_SECONDS} until two in a row agree on req/s
 * within {@link SETTLED_WITHIN} (at most {@link MAX_SETTLE_RUNS}). A process serving large answers (lists of hundreds
 * of tools) is still compiling its hot paths after a couple of seconds: its first rounds then measured the warm-up,
 * at two to three times the CPU per request of the later ones. Returns the seconds of load it took.
 *
 * @example
 * const seconds = await warmUp((s) => measure('gateway', s), 2);
 */
export async function warmUp(measure: (seconds: number) => Promise<{ requestsPerSecond: number }>, seconds: number): Promise<number> {
  let last = (await measure(seconds)).requestsPerSecond;
  let total = seconds;
  for (let run = 0; run < MAX_SETTLE_RUNS; run++) {
    const rate = (await measure(SETTLE_RUN_SECONDS)).requestsPerSecond;
    total += SETTLE_RUN_SECONDS;
    if (Math.abs(rate - last) <= SETTLED_WITHIN * Math.max(rate, last)) break;
    last = rate;
  }
  return total;
}

/** Warms each target up in turn ({@link warmUp}) and prints how long each took. */
export async function warmUpEach<T extends string>(targets: readonly T[], measure: (target: T, seconds: number) => Promise<{ requestsPerSecond: number }>, seconds: number, label: string): Promise<void> {
  const took: string[] = [];
  for (const target of targets) took.push(`${target} ${await warmUp((s) => measure(target, s), seconds)} s`);
  console.log(`  ${label} warm-up until two runs in a row agree within ${SETTLED_WITHIN * 100} %: ${took.join(', ')}`);
}
