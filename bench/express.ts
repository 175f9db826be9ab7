/**
 * The Express part of `npm run bench` (see `run.ts`): the guard against anchors run side by side, in the same
 * rounds, each server in its own process (`server.ts`) and the load generator in another (`load.ts`).
 *
 * Scenarios (each round runs them in a balanced order, `round-order.ts`): `bare` (Express alone), `cached` (guarded, one reused
 * token), `floor` (bare plus a bare `node:crypto` ES256 signature check, a new token every request), `fresh`
 * (guarded, a new token every request) and `peer` (the SDK's `requireBearerAuth` with jose, a new token every
 * request). Reported: `cached` over `bare`, `fresh` over `floor` and over `peer`, each per round and as the
 * median of the per-round ratios.
 *
 * Two placements, one after the other, each with its own processes: `unpinned` (the OS spreads everything
 * over the machine's CPUs: a server's crypto thread pool may borrow a CPU the event loop does not use), then
 * `pinned` (`taskset`: every server process on CPU 1, its crypto thread pool included, the load generator and
 * this script on CPU 0), where a server has exactly one CPU, as a one-vCPU container has. Unpinned first: the
 * children inherit this process's affinity, which the pinned placement narrows.
 *
 * Then the memory per cached token (`cache-memory.ts`).
 */
import type { ChildProcess } from 'node:child_process';
import os from 'node:os';
import { join } from 'node:path';
import type { CacheMemoryReport, CacheMemoryResult } from './cache-memory.js';
import { LoadProcess } from './load-client.js';
import { askServer, pinning, run, serverCpuUsage, startScript, stopAll, waitFor, which } from './processes.js';
import { williamsOrder } from './round-order.js';
import { EXPRESS_SCENARIOS, usesNewTokens, type RunSummary, type Scenario, type ServerMode, type ServerReport } from './scenario.js';

/** Where the processes run. */
export type Placement = 'pinned' | 'unpinned';

/** Settings of {@link runExpressBench}. */
export interface ExpressSettings {
  rounds: number;
  durationSeconds: number;
  warmupSeconds: number;
  connections: number;
  /** File URL of the compiled library entry point; undefined: the TypeScript source. */
  entryUrl: string | undefined;
  entryNote: string;
  /** Write V8 CPU profiles of the guarded, floor and peer servers under this directory (one folder each). */
  cpuProfileDir?: string;
  placements: readonly Placement[];
  /** Tokens of the memory-per-cached-token figure. */
  cacheMemoryTokens: number;
}

/** Targets, printed next to the figures (information, not assertions). */
export const EXPRESS_TARGETS = { cachedOverBare: 0.95, freshOverFloor: 0.95 } as const;

/** Fresh-token pool: this many times the tokens a run is expected to use (a token is never sent twice). */
const POOL_HEADROOM = 1.6;
/** Tokens per second assumed before any new-token run has been measured. */
const FIRST_RATE_GUESS = 6_000;

/** Which process serves each scenario. */
const SERVER_OF: Record<Scenario, ServerMode> = { bare: 'bare', cached: 'guarded', fresh: 'guarded', floor: 'floor', peer: 'peer' };

const LABEL: Record<Scenario, string> = {
  bare: 'bare Express',
  cached: 'guarded, reused token',
  floor: 'floor: bare + node:crypto ES256',
  fresh: 'guarded, new token/request',
  peer: 'peer: SDK requireBearerAuth+jose',
};

interface Ratio {
  median: number;
  perRound: number[];
  /**
   * The other scenario's server CPU time per request over this one's (median of rounds): the throughput ratio
   * a CPU-bound server would see, steadier than req/s on a machine where other work runs.
   */
  cpu: number;
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

const round3 = (x: number): number => Math.round(x * 1000) / 1000;
const mb = (bytes: number): number => Math.round((bytes / 1048576) * 10) / 10;

/** Which placements can run; says why when pinning cannot. */
export function resolvePlacements(wanted: 'both' | Placement): Placement[] {
  const placements: Placement[] = wanted === 'both' ? ['unpinned', 'pinned'] : [wanted];
  if (!placements.includes('pinned')) return placements;
  const pin = pinning();
  const why = !pin.ok ? pin.why : os.cpus().length < 2 ? `${os.cpus().length} CPU, two are needed` : undefined;
  if (why === undefined) return placements;
  console.log(`bench: the pinned Express figures are skipped: ${why}; unpinned figures only`);
  return ['unpinned'];
}

async function startServer(mode: ServerMode, args: string[], cpu: number | undefined, settings: ExpressSettings, placement: Placement): Promise<{ child: ChildProcess; url: string }> {
  const execArgv = ['--expose-gc'];
  if (settings.cpuProfileDir !== undefined && mode !== 'bare') {
    // A directory per server: the main thread's profile and those of tsx's loader thread land side by side there.
    execArgv.push('--cpu-prof', `--cpu-prof-dir=${join(settings.cpuProfileDir, `express-${placement}-${mode}`)}`);
  }
  const child = startScript('server.ts', [mode, ...args], { execArgv, cpu });
  const url = await waitFor<ServerReport, string>(child, `${mode} server`, (m) => (m.type === 'ready' ? m.url : undefined), 30_000);
  return { child, url };
}

const memoryOf = (child: ChildProcess): Promise<NodeJS.MemoryUsage> => askServer(child, { type: 'memory' }, 'server memory', (m) => (m.type === 'memory' ? m.usage : undefined));
const cpuOf = serverCpuUsage;

function checkRun(summary: RunSummary): void {
  if (summary.non2xx > 0 || summary.errors > 0 || summary.timeouts > 0) {
    throw new Error(
      `${summary.scenario}: ${summary.non2xx} non-2xx answers, ${summary.errors} errors, ${summary.timeouts} timeouts — the measurement is not valid`,
    );
  }
}

/** One placement: its own processes, a warm-up of each scenario, then the rounds. */
async function runPlacement(settings: ExpressSettings, placement: Placement): Promise<Record<string, unknown>> {
  const pinned = placement === 'pinned';
  const loadCpu = pinned ? 0 : undefined;
  const serverCpu = pinned ? 1 : undefined;
  if (pinned) {
    // This script too (every thread), so that its work between runs stays off the servers' CPU.
    run(which('taskset')!, ['--all-tasks', '--pid', '--cpu-list', String(loadCpu), String(process.pid)], 5_000);
  }
  const { load, issuer } = await LoadProcess.ready(startScript('load.ts', [], { cpu: loadCpu }), settings.connections);
  // The guarded server's URL is the resource, hence the tokens' audience, which the peer checks too.
  const guarded = await startServer('guarded', [issuer, ...(settings.entryUrl === undefined ? [] : [settings.entryUrl])], serverCpu, settings, placement);
  const [bare, floor, peer] = await Promise.all([
    startServer('bare', [], serverCpu, settings, placement),
    startServer('floor', [issuer], serverCpu, settings, placement),
    startServer('peer', [issuer, guarded.url], serverCpu, settings, placement),
  ]);
  const servers: Record<ServerMode, { child: ChildProcess; url: string }> = { bare, guarded, floor, peer };

  // Every server answers the same list: the token may see every tool, so the guard's filter removes nothing.
  await load.mint(guarded.url, 0);
  const probes = await Promise.all((['bare', 'guarded', 'floor', 'peer'] as const).map(async (mode) => ({ mode, probe: await load.probe(servers[mode].url) })));
  const reference = probes[0]!.probe;
  for (const { mode, probe } of probes) {
    if (probe.status !== 200 || probe.body !== reference.body) {
      throw new Error(`the servers disagree: bare ${reference.status} ${reference.body}\n${mode} ${probe.status} ${probe.body}`);
    }
  }
  const pinNote = pinned
    ? 'servers pinned to CPU 1 (their crypto thread pool included), load generator to CPU 0'
    : `unpinned: servers and load generator share the ${os.cpus().length} CPUs`;
  console.log('');
  console.log(
    `bench (Express, ${placement}): ${settings.rounds} rounds × (${EXPRESS_SCENARIOS.join(', ')}) × ${settings.durationSeconds} s, ` +
      `${settings.warmupSeconds} s warm-up each, ${settings.connections} connections, pipelining 1; ${pinNote}; ` +
      `load average ${os.loadavg()[0]!.toFixed(2)}; library ${settings.entryNote}`,
  );

  let newTokenRate = 0;
  const measure = async (scenario: Scenario, seconds: number, warmUp: boolean): Promise<RunSummary> => {
    const server = servers[SERVER_OF[scenario]];
    if (usesNewTokens(scenario)) await load.mint(guarded.url, Math.ceil((newTokenRate || FIRST_RATE_GUESS) * seconds * POOL_HEADROOM) + 2_000);
    const before = await cpuOf(server.child);
    const summary = await load.run({ url: server.url, scenario, durationSeconds: seconds });
    const after = await cpuOf(server.child);
    checkRun(summary);
    if (summary.tokensExhausted && !warmUp) throw new Error(`${scenario}: the pool of new tokens ran out; tokens were reused`);
    if (usesNewTokens(scenario)) newTokenRate = Math.max(newTokenRate, (summary.tokensUsed ?? 0) / seconds);
    const micros = after.user - before.user + (after.system - before.system);
    return { ...summary, serverCpuUsPerRequest: summary.totalRequests > 0 ? Math.round((micros / summary.totalRequests) * 10) / 10 : 0 };
  };

  // Warm-up (JIT, JWKS, connection pools): not recorded.
  for (const scenario of EXPRESS_SCENARIOS) await measure(scenario, settings.warmupSeconds, true);

  const rounds: Record<Scenario, RunSummary>[] = [];
  for (let round = 0; round < settings.rounds; round++) {
    const results = {} as Record<Scenario, RunSummary>;
    // Each round in a balanced order (williamsOrder): no scenario always runs right after the same one.
    for (const scenario of williamsOrder(EXPRESS_SCENARIOS, round)) {
      const summary = await measure(scenario, settings.durationSeconds, false);
      results[scenario] = summary;
      console.log(
        `  ${placement} round ${round + 1} ${scenario.padEnd(6)} ${summary.requestsPerSecond.toFixed(0).padStart(7)} req/s  ` +
          `p99 ${String(summary.p99Ms).padStart(4)} ms  server CPU ${summary.serverCpuUsPerRequest} µs/req`,
      );
    }
    rounds.push(results);
  }
  const [bareMemory, guardedMemory] = await Promise.all([memoryOf(bare.child), memoryOf(guarded.child)]);
  await stopAll();

  const ratio = (a: Scenario, b: Scenario): Ratio => {
    const per = rounds.map((r) => r[a].requestsPerSecond / r[b].requestsPerSecond);
    const cpu = rounds.map((r) => (r[b].serverCpuUsPerRequest ?? 0) / (r[a].serverCpuUsPerRequest || 1));
    return { median: round3(median(per)), perRound: per.map(round3), cpu: round3(median(cpu)) };
  };
  const rows = EXPRESS_SCENARIOS.map((scenario) => {
    const own = rounds.map((r) => r[scenario]);
    return {
      scenario,
      requestsPerSecond: Math.round(median(own.map((s) => s.requestsPerSecond))),
      p99Ms: median(own.map((s) => s.p99Ms)),
      ratioToBare: ratio(scenario, 'bare').median,
      serverCpuUsPerRequest: Math.round(median(own.map((s) => s.serverCpuUsPerRequest ?? 0)) * 10) / 10,
      roundRequestsPerSecond: own.map((s) => Math.round(s.requestsPerSecond)),
    };
  });
  const ratios = {
    cachedOverBare: ratio('cached', 'bare'),
    freshOverFloor: ratio('fresh', 'floor'),
    freshOverPeer: ratio('fresh', 'peer'),
    peerOverFloor: ratio('peer', 'floor'),
    floorOverBare: ratio('floor', 'bare'),
  };
  const memory = {
    bare: { rssMB: mb(bareMemory.rss), heapUsedMB: mb(bareMemory.heapUsed) },
    guarded: { rssMB: mb(guardedMemory.rss), heapUsedMB: mb(guardedMemory.heapUsed) },
  };

  console.log('');
  console.log(`Express, ${placement} (${pinNote}):`);
  console.log(`${'scenario'.padEnd(34)}${'req/s'.padStart(8)}${'p99 ms'.padStart(8)}${'/ bare'.padStart(8)}${'CPU µs/req'.padStart(12)}   req/s per round`);
  for (const row of rows) {
    console.log(
      `${LABEL[row.scenario].padEnd(34)}${String(row.requestsPerSecond).padStart(8)}${String(row.p99Ms).padStart(8)}${row.ratioToBare.toFixed(3).padStart(8)}` +
        `${row.serverCpuUsPerRequest.toFixed(1).padStart(12)}   ${row.roundRequestsPerSecond.join(' ')}`,
    );
  }
  const line = (name: string, r: Ratio, target?: number): void => {
    // Both verdicts: req/s swings from round to round when anything else runs on the machine (the load generator's
    // own CPU, the servers' crypto thread pool, other work), while CPU time per request stays put; a req/s verdict the
    // CPU ratio contradicts is the machine's, not the server's.
    const verdict = target === undefined ? '' : ` (target ≥ ${target.toFixed(2)}: ${r.median >= target ? 'MET' : 'BELOW'}; by CPU ${r.cpu >= target ? 'MET' : 'BELOW'})`;
    console.log(`${name.padEnd(34)}${r.median.toFixed(3)}${verdict}   CPU ratio ${r.cpu.toFixed(3)}   per round ${r.perRound.map((x) => x.toFixed(3)).join(' ')}`);
  };
  line('cached / bare', ratios.cachedOverBare, EXPRESS_TARGETS.cachedOverBare);
  line('fresh / floor', ratios.freshOverFloor, EXPRESS_TARGETS.freshOverFloor);
  line('fresh / peer', ratios.freshOverPeer);
  line('peer / floor', ratios.peerOverFloor);
  console.log(
    `memory after the last round (after GC): guarded RSS ${memory.guarded.rssMB} MB, heap ${memory.guarded.heapUsedMB} MB; ` +
      `bare RSS ${memory.bare.rssMB} MB, heap ${memory.bare.heapUsedMB} MB`,
  );
  return { rows, ratios, memory, runs: rounds };
}

/** Memory per cached token, from `cache-memory.ts` in its own process. */
async function runCacheMemory(settings: ExpressSettings): Promise<CacheMemoryResult> {
  const child = startScript('cache-memory.ts', [String(settings.cacheMemoryTokens), ...(settings.entryUrl === undefined ? [] : [settings.entryUrl])], {
    execArgv: ['--expose-gc'],
  });
  const result = await waitFor<CacheMemoryReport, CacheMemoryResult>(child, 'cache memory', (m) => (m.type === 'cache-memory' ? m.result : undefined), 120_000);
  const kb = (bytes: number): string => `${(bytes / 1024).toFixed(1)} KB`;
  console.log('');
  console.log(
    `memory per cached token (${result.tokens} distinct valid tokens of ${kb(result.tokenBytes)}, claims ${kb(result.claimsBytes)} as JSON, after GC): ` +
      `${kb(result.measuredBytesPerToken)} of heap measured; the cache's estimate (tokenCache.maxBytes counts it) ${kb(result.estimatedBytesPerToken)}; ` +
      `measured / estimate ${result.measuredOverEstimate.toFixed(2)}`,
  );
  return result;
}

/** Runs the Express part and prints its report; returns what goes to `latest.json`. */
export async function runExpressBench(settings: ExpressSettings): Promise<Record<string, unknown>> {
  const report: Record<string, unknown> = {
    settings: { ...settings, entryUrl: undefined, cpuProfileDir: undefined, pipelining: 1 },
    targets: EXPRESS_TARGETS,
  };
  for (const placement of settings.placements) report[placement] = await runPlacement(settings, placement);
  const both = settings.placements.map((p) => [p, report[p] as { ratios: Record<string, Ratio> }] as const);
  if (both.length > 1) {
    console.log('');
    console.log('Express, summary (median of per-round req/s ratios; CPU: ratio of server CPU time per request):');
    for (const [placement, r] of both) {
      console.log(
        `  ${placement.padEnd(9)} ` +
          Object.entries(r.ratios)
            .map(([k, v]) => `${k.replace('Over', '/').toLowerCase()} ${v.median.toFixed(3)} (CPU ${v.cpu.toFixed(3)})`)
            .join('  '),
      );
    }
  }
  report.cacheMemory = await runCacheMemory(settings);
  return report;
}
