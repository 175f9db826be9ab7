/**
 * Balanced rounds of request-rate runs, and what is taken from them: shared by the parts that measure a few targets
 * in front of one upstream (`hop-connected.ts`, `hop-servers.ts`), so that every part orders, prints and summarises
 * its rounds alike; and the back-to-back blocks in which a variant is judged against its base (those parts and
 * `hop.ts`).
 *
 * Each round opens with the upstream alone (each share is over it) and then runs the targets in front of it in a
 * balanced order (`round-order.ts`): none always follows the same one, as a process that ran just before on the
 * same CPU can leave caches and the upstream's connections in a state that favours or burdens whoever comes next.
 * Ratios are taken within each round; medians and the spread of the rounds are reported.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { fmtPct, median, pinPlacement, prepareHopScripts, ratioPerRound, round1, round3, spread } from './hop.js';
import { cpuTimes, onExit } from './processes.js';
import { williamsOrder } from './round-order.js';
import { warmUpEach } from './warm-up.js';
import type { RunSummary } from './scenario.js';

/** One load run of one target, the figures every rate part records. */
export interface RateRun<T extends string = string> {
  target: T;
  requestsPerSecond: number;
  p99Ms: number;
  totalRequests: number;
  /** Busy share of the servers' CPU during the run (0–1); undefined unpinned or off Linux. */
  serverCpuBusy?: number;
  /** Busy share of the load generator's CPU (0–1). */
  loadCpuBusy?: number;
  /** CPU time of the hop per request (µs); absent for the upstream alone. */
  hopCpuUsPerRequest?: number;
  /** Event-loop utilisation of the hop during the run (0–1). */
  hopEventLoopUtilization?: number;
  /** CPU time of the upstream (or every upstream behind the target, together) per request (µs). */
  upstreamCpuUsPerRequest?: number;
}

/** The CPUs a part pinned its processes to: the servers' and the load generator's (absent unpinned). */
export interface RateCpus {
  serverCpu?: number;
  loadCpu?: number;
}

/** A reading of one CPU's counters (`/proc/stat`); undefined unpinned or off Linux. */
type CpuReading = ReturnType<typeof cpuTimes>;

/** Busy share (0–1, 3 decimals) of a CPU between two readings; undefined without both, or with no time between. */
export function busyBetween(a: CpuReading, b: CpuReading): number | undefined {
  return a && b && b.total > a.total ? round3((b.busy - a.busy) / (b.total - a.total)) : undefined;
}

/**
 * Reads the pinned CPUs now; the function it returns reads them again and gives each one's busy share since.
 *
 * @example
 * const since = cpuBusySince(cpus);
 * await load.run(...);
 * const { serverCpuBusy, loadCpuBusy } = since();
 */
export function cpuBusySince(cpus: RateCpus): () => { serverCpuBusy: number | undefined; loadCpuBusy: number | undefined } {
  const read = (cpu: number | undefined): CpuReading => (cpu === undefined ? undefined : cpuTimes(cpu));
  const [server, load] = [read(cpus.serverCpu), read(cpus.loadCpu)];
  return () => {
    const [serverAfter, loadAfter] = [read(cpus.serverCpu), read(cpus.loadCpu)];
    return { serverCpuBusy: busyBetween(server, serverAfter), loadCpuBusy: busyBetween(load, loadAfter) };
  };
}

/** A hop's own counters (`sample` in `hop.ts`): CPU time (µs) and event-loop active and idle time (Node processes). */
interface HopSample {
  cpu?: number;
  active?: number;
  idle?: number;
}

/** The hop's CPU per request (µs) and event-loop utilisation between two samples, each only when both had it. */
export function hopFigures(before: HopSample | undefined, after: HopSample | undefined, requests: number): Pick<RateRun, 'hopCpuUsPerRequest' | 'hopEventLoopUtilization'> {
  return {
    ...(before?.cpu !== undefined && after?.cpu !== undefined ? { hopCpuUsPerRequest: round1((after.cpu - before.cpu) / requests) } : {}),
    ...(before?.active !== undefined && after?.active !== undefined
      ? { hopEventLoopUtilization: round3((after.active - before.active) / (after.active - before.active + (after.idle! - before.idle!))) }
      : {}),
  };
}

/** Fails unless every request of a run was answered with a 2xx: a run with a refusal or an error measures nothing. */
export function assertAllAnswered(what: string, summary: RunSummary): void {
  if (summary.non2xx > 0 || summary.errors > 0 || summary.timeouts > 0) {
    throw new Error(`${what}: ${summary.non2xx} non-2xx answers (${JSON.stringify(summary.statusCodes)}), ${summary.errors} errors, ${summary.timeouts} timeouts — the measurement is not valid`);
  }
}

/** How {@link runBalancedRounds} runs and prints a workload's rounds. */
export interface BalancedRounds<T extends string, R extends RateRun<T>> {
  /** The workload's name, at the start of each printed line. */
  workload: string;
  rounds: number;
  /** Seconds of each measured run, and of the first warm-up run of each target before the first round (`warm-up.ts`). */
  durationSeconds: number;
  warmupSeconds: number;
  /** The upstream alone, first in every round. */
  upstream: T;
  /** The targets in front of it, in the order of round 0. */
  inFront: readonly T[];
  /** One load run of `target` for `seconds`. */
  measure: (target: T, seconds: number) => Promise<R>;
  /** How the line names the upstream CPU figure: `upstream`, or `upstreams` when several are behind a target. */
  upstreamLabel: string;
  /** More of a run's line, after the upstream CPU figure (e.g. a credential check). */
  lineSuffix?: (run: R) => string;
}

/** One run's progress line. */
function roundLine<T extends string, R extends RateRun<T>>(options: BalancedRounds<T, R>, round: number, width: number, r: R): string {
  return (
    `  ${options.workload} round ${round + 1} ${r.target.padEnd(width)} ${r.requestsPerSecond.toFixed(0).padStart(7)} req/s  p99 ${String(r.p99Ms).padStart(4)} ms  ` +
    `server CPU busy ${fmtPct(r.serverCpuBusy)}  load CPU busy ${fmtPct(r.loadCpuBusy)}` +
    (r.hopCpuUsPerRequest !== undefined ? `  hop ${r.hopCpuUsPerRequest} µs/req ELU ${r.hopEventLoopUtilization?.toFixed(2) ?? '?'}` : '') +
    `  ${options.upstreamLabel} ${r.upstreamCpuUsPerRequest ?? '?'} µs/req` +
    (options.lineSuffix?.(r) ?? '')
  );
}

/**
 * Warms every target up (until steady: `warm-up.ts`), then runs `rounds` rounds (the upstream first, then the others in a balanced order),
 * printing a line per run; returns each round's runs in the order measured (every figure finds its run by target).
 *
 * @example
 * const rounds = await runBalancedRounds({ workload: 'call', rounds: 5, durationSeconds: 10, warmupSeconds: 3,
 *   upstream: 'upstream', inFront: ['a', 'b'], measure, upstreamLabel: 'upstream' });
 */
export async function runBalancedRounds<T extends string, R extends RateRun<T>>(options: BalancedRounds<T, R>): Promise<R[][]> {
  const all = [options.upstream, ...options.inFront];
  await warmUpEach(all, options.measure, options.warmupSeconds, options.workload);
  const width = Math.max(...all.map((t) => t.length));
  const rounds: R[][] = [];
  for (let round = 0; round < options.rounds; round++) {
    const runs: R[] = [];
    for (const target of [options.upstream, ...williamsOrder(options.inFront, round)]) {
      const r = await options.measure(target, options.durationSeconds);
      runs.push(r);
      console.log(roundLine(options, round, width, r));
    }
    rounds.push(runs);
  }
  return rounds;
}

/** One target's figures over the rounds: medians, and its share of the upstream alone's req/s round by round. */
export interface RateRow {
  requestsPerSecond: number;
  p99Ms: number;
  shareOfUpstream: ReturnType<typeof spread>;
  serverCpuBusy?: number;
  loadCpuBusy?: number;
  hopCpuUsPerRequest?: number;
  hopEventLoopUtilization?: number;
  upstreamCpuUsPerRequest?: number;
}

const runOf = <T extends string, R extends RateRun<T>>(runs: readonly R[], target: T): R => runs.find((r) => r.target === target)!;

/** `a`'s req/s over `b`'s in each round: median, lowest, highest and each round's (3 decimals). */
export function rateRatio<T extends string>(rounds: ReadonlyArray<ReadonlyArray<RateRun<T>>>, a: T, b: T): ReturnType<typeof spread> {
  const { median: mid, perRound } = ratioPerRound(rounds, [a, b], a, b)!;
  return { median: mid, min: Math.min(...perRound), max: Math.max(...perRound), perRound };
}

/**
 * `a`'s CPU per request over `b`'s, in the rounds that measured both; undefined when none did. Of two hops, the
 * req/s ratio each would reach with a CPU to itself, its upstreams elsewhere (as deployed).
 */
export function cpuRatio<T extends string>(rounds: ReadonlyArray<ReadonlyArray<RateRun<T>>>, a: T, b: T): ReturnType<typeof spread> | undefined {
  const both = rounds.filter((runs) => runOf(runs, a).hopCpuUsPerRequest && runOf(runs, b).hopCpuUsPerRequest);
  return both.length > 0 ? spread(both.map((runs) => runOf(runs, a).hopCpuUsPerRequest! / runOf(runs, b).hopCpuUsPerRequest!)) : undefined;
}

/** `target`'s {@link RateRow} over `rounds`, its share taken over `upstream`'s run of the same round. */
export function rateRow<T extends string>(rounds: ReadonlyArray<ReadonlyArray<RateRun<T>>>, target: T, upstream: T): RateRow {
  const own = rounds.map((runs) => runOf(runs, target));
  const pick = (f: (r: RateRun<T>) => number | undefined): number | undefined => {
    const values = own.map(f).filter((v): v is number => v !== undefined);
    return values.length ? median(values) : undefined;
  };
  return {
    requestsPerSecond: Math.round(median(own.map((r) => r.requestsPerSecond))),
    p99Ms: median(own.map((r) => r.p99Ms)),
    shareOfUpstream: rateRatio(rounds, target, upstream),
    serverCpuBusy: pick((r) => r.serverCpuBusy),
    loadCpuBusy: pick((r) => r.loadCpuBusy),
    hopCpuUsPerRequest: pick((r) => r.hopCpuUsPerRequest),
    hopEventLoopUtilization: pick((r) => r.hopEventLoopUtilization),
    upstreamCpuUsPerRequest: pick((r) => r.upstreamCpuUsPerRequest),
  };
}

/** Prints the columns of a rate table (its heading line and one line per row); the part prints its title and ratios. */
export function printRateRows(rows: ReadonlyArray<RateRow & { label: string }>): void {
  console.log(`${'target'.padEnd(34)}${'req/s'.padStart(8)}${'p99 ms'.padStart(8)}${'share'.padStart(7)}${'srv CPU'.padStart(9)}${'load CPU'.padStart(10)}${'hop µs/req'.padStart(12)}${'hop ELU'.padStart(9)}${'up µs/req'.padStart(11)}`);
  for (const row of rows) {
    console.log(
      `${row.label.padEnd(34)}${String(row.requestsPerSecond).padStart(8)}${String(row.p99Ms).padStart(8)}${row.shareOfUpstream.median.toFixed(3).padStart(7)}` +
        `${fmtPct(row.serverCpuBusy).padStart(9)}${fmtPct(row.loadCpuBusy).padStart(10)}${(row.hopCpuUsPerRequest?.toFixed(1) ?? '-').padStart(12)}` +
        `${(row.hopEventLoopUtilization?.toFixed(2) ?? '-').padStart(9)}${(row.upstreamCpuUsPerRequest?.toFixed(1) ?? '-').padStart(11)}`,
    );
  }
}

/** Busy share of each CPU over `ms`, before anything of the benchmark starts: what else the machine runs. */
export async function backgroundBusy(ms: number): Promise<number[]> {
  const cpus = os.cpus().length;
  const before = Array.from({ length: cpus }, (_, i) => cpuTimes(i));
  await new Promise((resolve) => setTimeout(resolve, ms));
  return before.map((a, i) => busyBetween(a, cpuTimes(i)) ?? NaN);
}

/** What every rate part starts from: the machine's own load, the CPU placement, the scripts and a work directory. */
export interface BenchPartStart {
  readonly began: number;
  readonly background: number[];
  readonly loadAverageBefore: number[];
  readonly loadCpu: number | undefined;
  readonly serverCpu: number | undefined;
  readonly pinned: boolean;
  readonly note: string;
  /** A directory of the part's own, removed when the bench exits. */
  readonly dir: string;
}

/** Starts a part: measures what else the machine runs, places the CPUs, prepares the scripts, makes its directory. */
export async function startBenchPart(compiledScriptsDir: string | undefined, name: string): Promise<BenchPartStart> {
  const began = Date.now();
  const background = await backgroundBusy(2_000);
  const loadAverageBefore = os.loadavg().map((x) => Math.round(x * 100) / 100);
  const { loadCpu, serverCpu, pinned, note } = pinPlacement();
  prepareHopScripts(compiledScriptsDir);
  const dir = mkdtempSync(join(os.tmpdir(), `mcp-bench-${name}-`));
  onExit(() => rmSync(dir, { recursive: true, force: true }));
  return { began, background, loadAverageBefore, loadCpu, serverCpu, pinned, note, dir };
}

/** How {@link runPairedBlocks} compares a variant with its base. */
export interface PairedBlocks<T extends string, R extends RateRun<T>> {
  /** The workload's name, at the start of each printed line. */
  workload: string;
  /** The variant, and the base it is judged against. */
  variant: T;
  base: T;
  blocks: number;
  /** Seconds of each of a block's eight runs. */
  seconds: number;
  measure: (target: T, seconds: number) => Promise<R>;
}

/** The variant over its base in back-to-back blocks: the ratio of each block, and the CPU ratio where both had it. */
export interface PairedRatio {
  /** Median, lowest, highest and each block's variant req/s over base req/s. */
  requests: ReturnType<typeof spread>;
  /** Each block's base CPU per request over the variant's (the req/s ratio with the CPU to the hop alone). */
  cpu?: ReturnType<typeof spread>;
  blocks: number;
  secondsPerRun: number;
}

/** Seconds of each run of a back-to-back block: half a round's run, at least one. */
export function pairSeconds(settings: { durationSeconds: number }): number {
  return Math.max(1, Math.round(settings.durationSeconds / 2));
}

/**
 * The order of a block's eight runs, `true` for the variant: A B B A B A A B (the Thue–Morse sequence), or its
 * mirror in every other block. Each target runs four times, three of them right after the other target and once
 * after itself, and the positions of each sum alike, as do their squares: a drift of the machine's speed that is
 * steady, or steadily quickening, over the block weighs on both alike.
 */
const BLOCK_ORDER = [true, false, false, true, false, true, true, false] as const;

/**
 * A variant judged against its base in back-to-back blocks, after the rounds: each block runs them eight times in
 * the order {@link BLOCK_ORDER} (or its mirror, block by block), and its ratio is the variant's runs over the
 * base's. A shared machine's speed drifts, and two processes a round apart (the rounds measure every target,
 * seconds apart) can see different machines; within a block both see the same drift. Reported: the median over
 * the blocks. None (`blocks` 0): the part judges on its rounds.
 *
 * @example
 * const paired = await runPairedBlocks({ workload: 'call', variant: 'gateway-audited', base: 'gateway', blocks: 6, seconds: 1, measure });
 */
export async function runPairedBlocks<T extends string, R extends RateRun<T>>(options: PairedBlocks<T, R>): Promise<PairedRatio> {
  const requests: number[] = [];
  const cpu: number[] = [];
  for (let block = 0; block < options.blocks; block++) {
    const runs: R[] = [];
    for (const variantFirst of BLOCK_ORDER) runs.push(await options.measure(variantFirst === (block % 2 === 0) ? options.variant : options.base, options.seconds));
    const of = (target: T): R[] => runs.filter((r) => r.target === target);
    const rate = (target: T): number => of(target).reduce((sum, r) => sum + r.requestsPerSecond, 0);
    const cpuOf = (target: T): number | undefined => {
      const own = of(target);
      return own.every((r) => r.hopCpuUsPerRequest !== undefined) ? own.reduce((sum, r) => sum + r.hopCpuUsPerRequest! * r.totalRequests, 0) / own.reduce((sum, r) => sum + r.totalRequests, 0) : undefined;
    };
    requests.push(rate(options.variant) / rate(options.base));
    const [variantCpu, baseCpu] = [cpuOf(options.variant), cpuOf(options.base)];
    if (variantCpu !== undefined && baseCpu !== undefined) cpu.push(baseCpu / variantCpu);
    console.log(
      `  ${options.workload} block ${block + 1} ${runs.map((r) => `${r.target} ${r.requestsPerSecond.toFixed(0)}`).join(', ')} req/s: ${options.variant} / ${options.base} ${round3(requests.at(-1)!).toFixed(3)}` +
        (variantCpu !== undefined && baseCpu !== undefined ? ` (CPU per request ${round1(baseCpu)} ÷ ${round1(variantCpu)} µs)` : ''),
    );
  }
  return { requests: spread(requests), ...(cpu.length === options.blocks ? { cpu: spread(cpu) } : {}), blocks: options.blocks, secondsPerRun: options.seconds };
}

/** One line of a {@link PairedRatio}, with its target when it has one. */
export function pairedLine(name: string, paired: PairedRatio, target?: number): string {
  const verdict = target === undefined ? '' : ` (target ≥ ${target.toFixed(2)}: ${paired.requests.median >= target ? 'MET' : 'BELOW'})`;
  return (
    `${name}, in ${paired.blocks} back-to-back blocks of ${paired.secondsPerRun} s runs: ${paired.requests.median.toFixed(3)}${verdict}, ` +
    `blocks ${paired.requests.min.toFixed(2)}–${paired.requests.max.toFixed(2)}: ${paired.requests.perRound.map((x) => x.toFixed(2)).join(' ')}` +
    (paired.cpu ? `; CPU per request, base ÷ variant: ${paired.cpu.median.toFixed(3)}` : '')
  );
}
