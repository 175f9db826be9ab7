/**
 * `npm run bench`: the guard's overhead as a share of a bare Express endpoint, then the gateway hop as a share
 * of an upstream alone (next to nginx and a minimal Node proxy, see `hop.ts`), measured in one script.
 *
 * Express part:
 * Processes (so that no two share an event loop): a bare server, a guarded server (`bench/server.ts`), and a
 * load generator (`bench/load.ts`, autocannon's API, also hosting the test issuer and minting tokens).
 * After a warm-up, rounds alternate bare → guarded with one reused token (`cached`) → guarded with a new
 * token on every request (`fresh`); each guarded result is divided by the bare result of its own round and
 * the medians are reported, with the guarded server's memory after the last `fresh` run against bare's.
 *
 * Settings (environment): BENCH_ROUNDS (9), BENCH_DURATION (seconds per run, 2), BENCH_WARMUP (seconds, 2),
 * BENCH_CONNECTIONS (16), BENCH_CPU_PROF=1 (write V8 CPU profiles of the guarded server and the gateway to
 * `.bench-results/profiles/`), BENCH_FROM_SOURCE=1 (run the library from `src/` through tsx instead of
 * compiling it first), BENCH_LIBRARY=<directory> (benchmark the compiled library in that directory, e.g. a
 * patched copy, instead of compiling `src/`), BENCH_ONLY=express|gateway (run one part), BENCH_WORKLOADS=call,list,list-fresh
 * (the gateway part's workloads), BENCH_TARGETS=nginx,node-proxy,gateway (what it measures in front of the
 * upstream), BENCH_GATEWAY_LOG=stdout|off (the gateway's request log: to stdout, which
 * points at /dev/null, as deployed; or dropped).
 *
 * The library is compiled with `tsc` (the build's settings) into `.bench-results/dist` and the guarded server
 * loads that, as users run the package: tsx's on-the-fly transform keeps function names with a
 * `defineProperty` call on every closure it creates, a per-request cost the published code does not have
 * (and Express, loaded from `node_modules`, never pays). Results also go to `.bench-results/latest.json`. Exits 0 whatever the
 * ratios (they are information, not assertions); 1 if a process failed or a run saw errors. A watchdog stops
 * everything once the run takes half again as long as planned, plus three minutes.
 */
import { execFileSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { HOP_TARGETS, HOP_WORKLOADS, type GatewayLogMode } from './hop-scenario.js';
import { runHopBench } from './hop.js';
import { LoadProcess } from './load-client.js';
import { killAll, ROOT, startScript, stopAll, waitFor } from './processes.js';
import type { RunSummary, Scenario, ServerCommand, ServerMode, ServerReport } from './scenario.js';

const RESULTS_DIR = join(ROOT, '.bench-results');

const ROUNDS = readInt('BENCH_ROUNDS', 9);
const DURATION = readInt('BENCH_DURATION', 2);
const WARMUP = readInt('BENCH_WARMUP', 2);
const CONNECTIONS = readInt('BENCH_CONNECTIONS', 16);
const CPU_PROFILE = process.env.BENCH_CPU_PROF === '1';
const FROM_SOURCE = process.env.BENCH_FROM_SOURCE === '1';
const LIBRARY_DIR = process.env.BENCH_LIBRARY ? resolve(process.env.BENCH_LIBRARY) : undefined;
const ONLY = readChoice('BENCH_ONLY', ['all', 'express', 'gateway'] as const, 'all');
const GATEWAY_LOG: GatewayLogMode = readChoice('BENCH_GATEWAY_LOG', ['stdout', 'off'] as const, 'stdout');
const WORKLOADS = readList('BENCH_WORKLOADS', HOP_WORKLOADS);
const HOP_IN_FRONT = readList('BENCH_TARGETS', HOP_TARGETS.filter((t) => t !== 'upstream'));
/** Seconds of load the settings plan for (the watchdog allows half again as long, plus start-up and installs). */
const PLANNED_SECONDS =
  (ONLY === 'gateway' ? 0 : 3 * WARMUP + ROUNDS * 3 * DURATION) + (ONLY === 'express' ? 0 : WORKLOADS.length * (1 + HOP_IN_FRONT.length) * (WARMUP + ROUNDS * DURATION));
/** The whole script is stopped, children included, if it runs longer than this. */
const WATCHDOG_MS = (PLANNED_SECONDS * 1.5 + 180) * 1000;
/** Fresh-token pool: this many times the tokens the last fresh run used (never reuse a token). */
const POOL_HEADROOM = 1.6;

/** Published shares of bare Express throughput measured for peer libraries (see README, Performance). */
const PEERS = {
  perRequestVerification: { low: 0.38, high: 0.43, note: 'Auth0 express-oauth2-jwt-bearer, MCP SDK requireBearerAuth + jose, mcp-auth' },
  withTokenCache: { value: 0.95 },
};
const TARGETS: Record<'cached' | 'fresh', number> = { cached: 0.95, fresh: PEERS.perRequestVerification.high };

function readChoice<T extends string>(name: string, choices: readonly T[], fallback: T): T {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!(choices as readonly string[]).includes(raw)) throw new Error(`${name} must be one of ${choices.join(', ')}, got "${raw}"`);
  return raw as T;
}

function readList<T extends string>(name: string, choices: readonly T[]): T[] {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return [...choices];
  const picked = raw.split(/[\s,]+/).filter(Boolean);
  for (const p of picked) if (!(choices as readonly string[]).includes(p)) throw new Error(`${name}: "${p}" is not one of ${choices.join(', ')}`);
  return choices.filter((c) => picked.includes(c));
}

function readInt(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 1) throw new Error(`${name} must be a positive integer, got "${raw}"`);
  return value;
}

/** Compiles `src/` as the build does (JavaScript only) and returns the entry point's file URL. */
function buildLibrary(): string {
  if (LIBRARY_DIR !== undefined) {
    if (!existsSync(join(LIBRARY_DIR, 'index.js'))) throw new Error(`BENCH_LIBRARY: no index.js in ${LIBRARY_DIR}`);
    return pathToFileURL(join(LIBRARY_DIR, 'index.js')).href;
  }
  const outDir = join(RESULTS_DIR, 'dist');
  rmSync(outDir, { recursive: true, force: true });
  const tsc = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
  const args = ['-p', 'tsconfig.build.json', '--outDir', outDir, '--declaration', 'false', '--declarationMap', 'false', '--sourceMap', 'false'];
  try {
    execFileSync(process.execPath, [tsc, ...args], { cwd: ROOT, stdio: 'pipe' });
  } catch (error) {
    // tsc still emits on type errors; benchmark what it wrote, but say so.
    if (!existsSync(join(outDir, 'index.js'))) throw error;
    console.warn('bench: tsc reported type errors; benchmarking the JavaScript it emitted anyway');
  }
  return pathToFileURL(join(outDir, 'index.js')).href;
}

async function startServer(mode: ServerMode, issuer: string, library?: string): Promise<{ child: ChildProcess; url: string }> {
  const execArgv = ['--expose-gc'];
  if (CPU_PROFILE && mode === 'guarded') execArgv.push('--cpu-prof', `--cpu-prof-dir=${join(RESULTS_DIR, 'profiles')}`);
  const args = mode === 'guarded' ? [mode, issuer, ...(library === undefined ? [] : [library])] : [mode];
  const child = startScript('server.ts', args, { execArgv });
  const url = await waitFor<ServerReport, string>(child, `${mode} server`, (m) => (m.type === 'ready' ? m.url : undefined), 30_000);
  return { child, url };
}

function memoryOf(child: ChildProcess, what: string): Promise<NodeJS.MemoryUsage> {
  const answer = waitFor<ServerReport, NodeJS.MemoryUsage>(child, what, (m) => (m.type === 'memory' ? m.usage : undefined), 10_000);
  child.send({ type: 'memory' } satisfies ServerCommand);
  return answer;
}

function cpuOf(child: ChildProcess): Promise<NodeJS.CpuUsage> {
  const answer = waitFor<ServerReport, NodeJS.CpuUsage>(child, 'server CPU usage', (m) => (m.type === 'cpu' ? m.usage : undefined), 10_000);
  child.send({ type: 'cpu' } satisfies ServerCommand);
  return answer;
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

function checkRun(summary: RunSummary): void {
  if (summary.non2xx > 0 || summary.errors > 0 || summary.timeouts > 0) {
    throw new Error(
      `${summary.scenario}: ${summary.non2xx} non-2xx answers, ${summary.errors} errors, ${summary.timeouts} timeouts — the measurement is not valid`,
    );
  }
}

async function main(): Promise<void> {
  const watchdog = setTimeout(() => {
    console.error(`bench: still running after ${Math.round(WATCHDOG_MS / 1000)} s; stopping everything`);
    killAll();
    process.exit(1);
  }, WATCHDOG_MS);
  watchdog.unref();
  mkdirSync(RESULTS_DIR, { recursive: true });
  const began = Date.now();
  const library = FROM_SOURCE ? undefined : buildLibrary();
  const libraryNote = FROM_SOURCE ? 'from src/ via tsx' : LIBRARY_DIR !== undefined ? `from BENCH_LIBRARY` : 'compiled by tsc';
  console.log(`bench: about ${Math.round(PLANNED_SECONDS / 60)} min of load planned (watchdog at ${Math.round(WATCHDOG_MS / 1000)} s)`);

  const report: Record<string, unknown> = {
    date: new Date().toISOString(),
    node: process.version,
    cpus: os.cpus().length,
    cpuModel: os.cpus()[0]?.model,
    library: libraryNote,
    loadAverage: os.loadavg(),
  };
  if (ONLY !== 'gateway') Object.assign(report, await expressBench(library, libraryNote));
  if (ONLY !== 'express') {
    report.gatewayHop = await runHopBench({
      rounds: ROUNDS,
      durationSeconds: DURATION,
      warmupSeconds: WARMUP,
      connections: CONNECTIONS,
      entryUrl: library ?? pathToFileURL(join(ROOT, 'src', 'index.ts')).href,
      ...(FROM_SOURCE ? {} : { compiledScriptsDir: join(RESULTS_DIR, 'bench') }),
      ...(CPU_PROFILE ? { cpuProfileDir: join(RESULTS_DIR, 'profiles') } : {}),
      gatewayLog: GATEWAY_LOG,
      workloads: WORKLOADS,
      targets: HOP_IN_FRONT,
    });
  }
  report.elapsedSeconds = Math.round((Date.now() - began) / 1000);
  writeFileSync(join(RESULTS_DIR, 'latest.json'), `${JSON.stringify(report, null, 2)}\n`);
  console.log(`\nwritten .bench-results/latest.json (${report.elapsedSeconds} s)`);
}

/** The Express part: bare Express, guarded with a reused token, guarded with a new token per request. */
async function expressBench(library: string | undefined, libraryNote: string): Promise<Record<string, unknown>> {
  const { load, issuer } = await LoadProcess.ready(startScript('load.ts', []), CONNECTIONS);
  const [bare, guarded] = await Promise.all([startServer('bare', issuer), startServer('guarded', issuer, library)]);
  const urls: Record<Scenario, string> = { bare: bare.url, cached: guarded.url, fresh: guarded.url };
  const serverOf: Record<Scenario, ChildProcess> = { bare: bare.child, cached: guarded.child, fresh: guarded.child };
  const measure = async (scenario: Scenario, seconds: number): Promise<RunSummary> => {
    const before = await cpuOf(serverOf[scenario]);
    const summary = await load.run({ url: urls[scenario], scenario, durationSeconds: seconds });
    const after = await cpuOf(serverOf[scenario]);
    const micros = after.user - before.user + (after.system - before.system);
    checkRun(summary);
    return { ...summary, serverCpuUsPerRequest: summary.totalRequests > 0 ? Math.round((micros / summary.totalRequests) * 10) / 10 : 0 };
  };

  // Both answer the same list: the token may see every tool, so filtering runs but removes nothing.
  let mint = await load.mint(guarded.url, 20_000);
  const [bareProbe, guardedProbe] = await Promise.all([load.probe(bare.url), load.probe(guarded.url)]);
  if (bareProbe.status !== 200 || guardedProbe.status !== 200 || bareProbe.body !== guardedProbe.body) {
    throw new Error(`the servers disagree: bare ${bareProbe.status} ${bareProbe.body}\nguarded ${guardedProbe.status} ${guardedProbe.body}`);
  }
  console.log(
    `bench: ${ROUNDS} rounds × (bare, cached, fresh) × ${DURATION} s, ${WARMUP} s warm-up each, ${CONNECTIONS} connections, ` +
      `pipelining 1; node ${process.version}, ${os.cpus().length} CPUs, load average ${os.loadavg()[0]!.toFixed(1)}; library ${libraryNote}`,
  );

  // Warm-up (JIT, JWKS, connection pools): not recorded. Sizes the fresh-token pool too.
  let freshUsed = 0;
  for (const scenario of ['bare', 'cached', 'fresh'] as const) {
    const warm = await measure(scenario, WARMUP);
    if (scenario === 'fresh') freshUsed = Math.ceil(((warm.tokensUsed ?? 0) * DURATION) / WARMUP);
  }

  const runs: RunSummary[][] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const results: RunSummary[] = [];
    for (const scenario of ['bare', 'cached', 'fresh'] as const) {
      if (scenario === 'fresh') mint = await load.mint(guarded.url, Math.ceil(freshUsed * POOL_HEADROOM) + 2_000);
      const summary = await measure(scenario, DURATION);
      if (summary.tokensExhausted) throw new Error(`fresh: the pool of ${mint.count} tokens ran out; tokens were reused`);
      if (scenario === 'fresh') freshUsed = Math.max(freshUsed, summary.tokensUsed ?? 0);
      results.push(summary);
      console.log(
        `  round ${round + 1} ${scenario.padEnd(6)} ${summary.requestsPerSecond.toFixed(0).padStart(7)} req/s  ` +
          `p99 ${String(summary.p99Ms).padStart(4)} ms  server CPU ${summary.serverCpuUsPerRequest} µs/req`,
      );
    }
    runs.push(results);
  }

  const [bareMemory, guardedMemory] = await Promise.all([memoryOf(bare.child, 'bare memory'), memoryOf(guarded.child, 'guarded memory')]);
  await stopAll();

  const rows = (['bare', 'cached', 'fresh'] as const).map((scenario, i) => {
    const own = runs.map((r) => r[i]!);
    const ratios = runs.map((r) => r[i]!.requestsPerSecond / r[0]!.requestsPerSecond);
    // Bare CPU per request over this scenario's: the throughput ratio a CPU-bound server would see.
    const cpuRatios = runs.map((r) => (r[0]!.serverCpuUsPerRequest ?? 0) / (r[i]!.serverCpuUsPerRequest ?? 1));
    return {
      scenario,
      requestsPerSecond: Math.round(median(own.map((s) => s.requestsPerSecond))),
      p99Ms: median(own.map((s) => s.p99Ms)),
      ratioToBare: Number(median(ratios).toFixed(3)),
      roundRatios: ratios.map((x) => Number(x.toFixed(3))),
      serverCpuUsPerRequest: Math.round(median(own.map((s) => s.serverCpuUsPerRequest ?? 0)) * 10) / 10,
      cpuRatioToBare: Number(median(cpuRatios).toFixed(3)),
      roundRequestsPerSecond: own.map((s) => Math.round(s.requestsPerSecond)),
    };
  });
  const memory = {
    bare: { rssMB: mb(bareMemory.rss), heapUsedMB: mb(bareMemory.heapUsed) },
    guarded: { rssMB: mb(guardedMemory.rss), heapUsedMB: mb(guardedMemory.heapUsed) },
    rssRatio: Number((guardedMemory.rss / bareMemory.rss).toFixed(2)),
    heapUsedRatio: Number((guardedMemory.heapUsed / bareMemory.heapUsed).toFixed(2)),
  };
  const verdicts = (['cached', 'fresh'] as const).map((scenario) => {
    const ratio = rows.find((r) => r.scenario === scenario)!.ratioToBare;
    return { scenario, ratio, target: TARGETS[scenario], pass: ratio >= TARGETS[scenario] };
  });

  const label: Record<Scenario, string> = {
    bare: 'bare Express (baseline)',
    cached: 'guarded, reused token',
    fresh: 'guarded, new token/request',
  };
  console.log('');
  console.log(
    `${'scenario'.padEnd(28)}${'req/s'.padStart(9)}${'p99 ms'.padStart(9)}${'ratio'.padStart(8)}` +
      `${'CPU µs/req'.padStart(12)}${'CPU ratio'.padStart(11)}   ratio per round`,
  );
  for (const row of rows) {
    console.log(
      `${label[row.scenario].padEnd(28)}${String(row.requestsPerSecond).padStart(9)}${String(row.p99Ms).padStart(9)}` +
        `${row.ratioToBare.toFixed(3).padStart(8)}${String(row.serverCpuUsPerRequest).padStart(12)}` +
        `${row.cpuRatioToBare.toFixed(3).padStart(11)}   ${row.roundRatios.map((x) => x.toFixed(3)).join(' ')}`,
    );
  }
  console.log('ratio: req/s over bare req/s of the same round (median); CPU ratio: bare server CPU per request over this one\'s');
  console.log('');
  console.log(`peers, per-request verification: ${PEERS.perRequestVerification.low}–${PEERS.perRequestVerification.high} of bare (${PEERS.perRequestVerification.note})`);
  console.log(`peers, with a verified-token cache: about ${PEERS.withTokenCache.value} of bare`);
  for (const v of verdicts) {
    console.log(`target ${v.scenario.padEnd(6)} ≥ ${v.target.toFixed(2)}: ${v.ratio.toFixed(3)} ${v.pass ? 'PASS' : 'BELOW TARGET'}`);
  }
  console.log(
    `memory after the last fresh run (after GC): guarded RSS ${memory.guarded.rssMB} MB, heap ${memory.guarded.heapUsedMB} MB; ` +
      `bare RSS ${memory.bare.rssMB} MB, heap ${memory.bare.heapUsedMB} MB; ratio RSS ${memory.rssRatio}, heap ${memory.heapUsedRatio}`,
  );

  return {
    settings: { rounds: ROUNDS, durationSeconds: DURATION, warmupSeconds: WARMUP, connections: CONNECTIONS, pipelining: 1 },
    rows,
    runs,
    memory,
    peers: PEERS,
    verdicts,
  };
}

function mb(bytes: number): number {
  return Math.round((bytes / 1048576) * 10) / 10;
}

main().catch(async (error: unknown) => {
  console.error(`bench failed: ${error instanceof Error ? error.message : String(error)}`);
  process.exitCode = 1;
  await stopAll();
});
