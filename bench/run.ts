/**
 * `npm run bench`: the guard's overhead as a share of a bare Express endpoint, then the gateway hop as a share
 * of an upstream alone (next to nginx and a minimal Node proxy, see `hop.ts`), measured in one script.
 *
 * Express part (`express.ts`): each server in its own process (`server.ts`: bare Express, guarded, the
 * `node:crypto` signature-check floor, the SDK's `requireBearerAuth` peer) and a load generator (`load.ts`,
 * autocannon's API, also hosting the test issuer and minting tokens). After a warm-up, each round runs
 * bare, cached (guarded, one reused token), floor, fresh (guarded, a new token on every request) and peer in a
 * balanced order (`round-order.ts`);
 * ratios are taken within each round (cached / bare, fresh / floor, fresh / peer) and their medians reported,
 * unpinned and then pinned with `taskset`. Then the memory per cached token (`cache-memory.ts`).
 *
 * Stdio part (`hop-stdio.ts`): one small stdio MCP server behind the bare per-session bridge (the anchor),
 * supergateway and mcp-proxy (npm, no authentication) and the gateway (authentication and policy on every
 * call), one session (one stdio process) per load-generator connection, pinned as the gateway part is; a small
 * `tools/call`, req/s as a share of the bridge's, and the gateway over each npm bridge.
 *
 * Servers part (`hop-servers.ts`): a three-server endpoint (a configuration file, three upstream processes, a
 * policy per server) against a single-server gateway in front of the same upstreams, in the same rounds: a small
 * `tools/call`, a merged and filtered `tools/list` of 3 × 300 tools, and a new session's first merged list while
 * one server answers its list 200 ms late.
 *
 * Connected-accounts part (`hop-connected.ts`): a small `tools/call` through a gateway sending each user's own stored
 * upstream token (`MCP_AUTH_UPSTREAM_AUTH=connected`, the user's connection sealed in a token store directory)
 * against the same gateway sending a static upstream token, in the same rounds, both in front of one upstream that
 * checks which token it was sent; then the first request of freshly started gateways of both kinds.
 *
 * Conditions part (`conditions.ts`): a guarded server whose 200 tool rules have CEL conditions over the token's group
 * and tenant claims against the same server with scopes-only rules, in the same rounds: a small `tools/call`, and a
 * `tools/list` of 1,000 tools filtered by those rules; req/s with conditions over scopes-only.
 *
 * Settings (environment): BENCH_ROUNDS (9), BENCH_DURATION (seconds per run, 2), BENCH_WARMUP (seconds of each target's first warm-up run, 2; the gateway, servers and connected parts then run 1 s more at a time until two runs agree within 5 %, at most 8),
 * BENCH_CONNECTIONS (16), BENCH_PAIR_BLOCKS (6: the back-to-back blocks in which the audit trail's call and the three-server call are judged against their base after the rounds, each block eight runs of half BENCH_DURATION, at least 1 s; 0 judges them on the rounds), BENCH_PIN=both|pinned|unpinned (the Express part's placements; pinned is skipped,
 * saying so, without `taskset` or a second CPU), BENCH_CACHE_TOKENS (tokens of the memory-per-cached-token
 * figure, 5000), BENCH_CPU_PROF=1 (write V8 CPU profiles of the Express part's guarded, floor and peer servers
 * and of the gateway and the conditions part's servers to `.bench-results/profiles/`), BENCH_FROM_SOURCE=1 (run the library from `src/` through tsx instead of
 * compiling it first), BENCH_LIBRARY=<directory> (benchmark the compiled library in that directory, e.g. a
 * patched copy, instead of compiling `src/`), BENCH_ONLY=express|gateway|servers|connected|stdio|conditions|instructions (run one part; `instructions`, user-space instructions per
 * request counted under valgrind (`instructions.ts`, about half an hour), runs only when named; BENCH_INSTRUCTION_REQUESTS=warm-up,short,long, default
 * 2000,1000,3000), BENCH_WORKLOADS=call,list,list-fresh
 * (the gateway part's workloads), BENCH_SERVERS_WORKLOADS=call,list,slow-list (the servers part's), BENCH_TARGETS=nginx,node-proxy,gateway,gateway-sealed,gateway-limited,gateway-shared-limits,gateway-audited
 * (what it measures in front of the upstream: `gateway-sealed` with a session secret, `gateway-audited` with the audit trail
 * writing to a file (target ≥ 0.95 of the plain gateway on a call), `gateway-limited` with a per-caller
 * rate limit counted in the process, `gateway-shared-limits` with that limit kept in a redis-server the bench starts,
 * installs when missing as it does nginx, or skips saying why; each is reported over the plain gateway of its round;
 * a limit high enough never to refuse, and a run that saw a 429 fails), BENCH_STDIO_TARGETS=supergateway,mcp-proxy,gateway (what the stdio part measures besides its
 * anchor; a bridge that cannot run is skipped, saying why), BENCH_GATEWAY_LOG=stdout|off (the gateway's request log: to stdout, which
 * points at /dev/null, as deployed; or dropped), BENCH_GATEWAY_NODE_FLAGS (node's own options for the gateway's processes,
 * space-separated, e.g. `--heap-growing-percent=0` to leave V8's heap growing factor to V8), BENCH_BASELINE=<directory> (a
 * compiled build, e.g. an earlier version's `dist/`, whose gateway the gateway part also measures, as `gateway-baseline`,
 * in the same rounds: a change judged within one run).
 *
 * The library is compiled with `tsc` (the build's settings) into `.bench-results/dist` and the guarded server
 * loads that, as users run the package: tsx's on-the-fly transform keeps function names with a
 * `defineProperty` call on every closure it creates, a per-request cost the published code does not have
 * (and Express, loaded from `node_modules`, never pays). Results also go to `.bench-results/latest.json`. Exits 0 whatever the
 * ratios (they are information, not assertions); 1 if a process failed or a run saw errors. A watchdog stops
 * everything once the run takes half again as long as planned, plus three minutes.
 */
import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { resolvePlacements, runExpressBench } from './express.js';
import { HOP_TARGETS, HOP_WORKLOADS, STDIO_TARGETS, type GatewayLogMode } from './hop-scenario.js';
import { runHopBench } from './hop.js';
import { pairSeconds } from './rate-rounds.js';
import { RESTART_SAMPLES_PER_ROUND, runConnectedBench } from './hop-connected.js';
import { runServersBench, SERVERS_WORKLOADS } from './hop-servers.js';
import { runStdioHopBench } from './hop-stdio.js';
import { runInstructionsBench } from './instructions.js';
import { MAX_SETTLE_SECONDS } from './warm-up.js';
import { runConditionsBench } from './conditions.js';
import { killAll, ROOT, stopAll } from './processes.js';
import { EXPRESS_SCENARIOS } from './scenario.js';

const RESULTS_DIR = join(ROOT, '.bench-results');

const ROUNDS = readInt('BENCH_ROUNDS', 9);
const DURATION = readInt('BENCH_DURATION', 2);
const WARMUP = readInt('BENCH_WARMUP', 2);
const CONNECTIONS = readInt('BENCH_CONNECTIONS', 16);
const PAIR_BLOCKS = readInt('BENCH_PAIR_BLOCKS', 6, 0);
/** Seconds of a back-to-back block: eight runs. */
const PAIR_BLOCK_SECONDS = 8 * pairSeconds({ durationSeconds: DURATION });
const CPU_PROFILE = process.env.BENCH_CPU_PROF === '1';
const FROM_SOURCE = process.env.BENCH_FROM_SOURCE === '1';
const LIBRARY_DIR = process.env.BENCH_LIBRARY ? resolve(process.env.BENCH_LIBRARY) : undefined;
const ONLY = readChoice('BENCH_ONLY', ['all', 'express', 'gateway', 'servers', 'connected', 'stdio', 'conditions', 'instructions'] as const, 'all');
const PIN = readChoice('BENCH_PIN', ['both', 'pinned', 'unpinned'] as const, 'both');
const CACHE_TOKENS = readInt('BENCH_CACHE_TOKENS', 5_000);
const GATEWAY_LOG: GatewayLogMode = readChoice('BENCH_GATEWAY_LOG', ['stdout', 'off'] as const, 'stdout');
const GATEWAY_NODE_FLAGS = (process.env.BENCH_GATEWAY_NODE_FLAGS ?? '').split(/\s+/).filter((flag) => flag !== '');
const WORKLOADS = readList('BENCH_WORKLOADS', HOP_WORKLOADS);
const SERVERS_WORKLOADS_CHOSEN = readList('BENCH_SERVERS_WORKLOADS', SERVERS_WORKLOADS);
const BASELINE_DIR = process.env.BENCH_BASELINE ? resolve(process.env.BENCH_BASELINE) : undefined;
const HOP_IN_FRONT = readList('BENCH_TARGETS', HOP_TARGETS.filter((t) => t !== 'upstream' && (t !== 'gateway-baseline' || BASELINE_DIR !== undefined)));
const STDIO_IN_FRONT = readList('BENCH_STDIO_TARGETS', STDIO_TARGETS.filter((t) => t !== 'bridge'));
/** Seconds of load the settings plan for (the watchdog allows half again as long, plus start-up and installs). */
// The instructions part measures the call and the cached list unless BENCH_WORKLOADS names others.
const INSTRUCTION_WORKLOADS = process.env.BENCH_WORKLOADS ? WORKLOADS : WORKLOADS.filter((w) => w !== 'list-fresh');
const INSTRUCTION_REQUESTS = readInstructionRequests();
/** The longest warm-up of a part that warms up until steady (`warm-up.ts`). */
const SETTLED_WARMUP = WARMUP + MAX_SETTLE_SECONDS;
const PLANNED_SECONDS =
  (ONLY !== 'all' && ONLY !== 'express' ? 0 : (PIN === 'both' ? 2 : 1) * EXPRESS_SCENARIOS.length * (WARMUP + ROUNDS * DURATION)) +
  (ONLY !== 'all' && ONLY !== 'gateway' ? 0 : WORKLOADS.length * (1 + HOP_IN_FRONT.length) * (SETTLED_WARMUP + ROUNDS * DURATION)) +
  // The audit trail's call is judged again in back-to-back blocks.
  (ONLY !== 'all' && ONLY !== 'gateway' ? 0 : WORKLOADS.includes('call') && HOP_IN_FRONT.includes('gateway-audited') ? PAIR_BLOCKS * PAIR_BLOCK_SECONDS : 0) +
  (ONLY !== 'all' && ONLY !== 'servers' ? 0 : SERVERS_WORKLOADS_CHOSEN.includes('call') ? PAIR_BLOCKS * PAIR_BLOCK_SECONDS : 0) +
  // Three targets per request-rate workload; the slow list takes a few seconds a round.
  (ONLY !== 'all' && ONLY !== 'servers' ? 0 : SERVERS_WORKLOADS_CHOSEN.reduce((sum, w) => sum + (w === 'slow-list' ? ROUNDS * 3 : 3 * (SETTLED_WARMUP + ROUNDS * DURATION)), 0)) +
  // Three targets of the call; then two gateways started afresh, a few seconds each, for every restart sample.
  (ONLY !== 'all' && ONLY !== 'connected' ? 0 : 3 * (SETTLED_WARMUP + ROUNDS * DURATION) + (ROUNDS + 1) * RESTART_SAMPLES_PER_ROUND * 2 * 4) +
  (ONLY !== 'all' && ONLY !== 'stdio' ? 0 : (1 + STDIO_IN_FRONT.length) * (WARMUP + ROUNDS * DURATION + CONNECTIONS)) +
  // Two workloads, two servers each.
  (ONLY !== 'all' && ONLY !== 'conditions' ? 0 : 2 * 2 * (WARMUP + ROUNDS * DURATION)) +
  // Under valgrind a run of a few thousand requests takes minutes: about five per target and workload.
  (ONLY !== 'instructions' ? 0 : INSTRUCTION_WORKLOADS.length * (BASELINE_DIR === undefined ? 2 : 3) * 300);
/** The whole script is stopped, children included, if it runs longer than this. */
const WATCHDOG_MS = (PLANNED_SECONDS * 1.5 + 180) * 1000;

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

/** `BENCH_INSTRUCTION_REQUESTS=warm-up,short,long` (default 2000,1000,3000). */
function readInstructionRequests(): { warmup: number; short: number; long: number } {
  const raw = process.env.BENCH_INSTRUCTION_REQUESTS ?? '2000,1000,3000';
  const [warmup, short, long] = raw.split(',').map(Number);
  if (![warmup, short, long].every((n) => Number.isInteger(n) && n! >= 1) || long! <= short!) {
    throw new Error(`BENCH_INSTRUCTION_REQUESTS must be warm-up,short,long (positive integers, long > short), got "${raw}"`);
  }
  return { warmup: warmup!, short: short!, long: long! };
}

function readInt(name: string, fallback: number, least = 1): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < least) throw new Error(`${name} must be an integer of at least ${least}, got "${raw}"`);
  return value;
}

/** The entry point's file URL of the compiled library in `dir` (named by setting `name`). */
function libraryEntry(dir: string, name: string): string {
  if (!existsSync(join(dir, 'index.js'))) throw new Error(`${name}: no index.js in ${dir}`);
  return pathToFileURL(join(dir, 'index.js')).href;
}

/** Compiles `src/` as the build does (JavaScript only) and returns the entry point's file URL. */
function buildLibrary(): string {
  if (LIBRARY_DIR !== undefined) return libraryEntry(LIBRARY_DIR, 'BENCH_LIBRARY');
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
  // Beside the output as beside `dist/`: the gateway reads its version from the package.json two folders above its modules.
  copyFileSync(join(ROOT, 'package.json'), join(RESULTS_DIR, 'package.json'));
  return pathToFileURL(join(outDir, 'index.js')).href;
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
  if (ONLY === 'all' || ONLY === 'express') {
    report.express = await runExpressBench({
      rounds: ROUNDS,
      durationSeconds: DURATION,
      warmupSeconds: WARMUP,
      connections: CONNECTIONS,
      entryUrl: library,
      entryNote: libraryNote,
      ...(CPU_PROFILE ? { cpuProfileDir: join(RESULTS_DIR, 'profiles') } : {}),
      placements: resolvePlacements(PIN),
      cacheMemoryTokens: CACHE_TOKENS,
    });
  }
  // What the gateway part and its stdio part share.
  const hopCommon = {
    rounds: ROUNDS,
    durationSeconds: DURATION,
    warmupSeconds: WARMUP,
    connections: CONNECTIONS,
    entryUrl: library ?? pathToFileURL(join(ROOT, 'src', 'index.ts')).href,
    ...(FROM_SOURCE ? {} : { compiledScriptsDir: join(RESULTS_DIR, 'bench') }),
    gatewayLog: GATEWAY_LOG,
    gatewayNodeFlags: GATEWAY_NODE_FLAGS,
    pairBlocks: PAIR_BLOCKS,
  };
  if (ONLY === 'all' || ONLY === 'gateway') {
    report.gatewayHop = await runHopBench({
      ...hopCommon,
      ...(CPU_PROFILE ? { cpuProfileDir: join(RESULTS_DIR, 'profiles') } : {}),
      workloads: WORKLOADS,
      targets: HOP_IN_FRONT,
      ...(BASELINE_DIR !== undefined ? { baselineEntryUrl: libraryEntry(BASELINE_DIR, 'BENCH_BASELINE') } : {}),
    });
  }
  if (ONLY === 'all' || ONLY === 'servers') {
    report.servers = await runServersBench({
      ...hopCommon,
      ...(CPU_PROFILE ? { cpuProfileDir: join(RESULTS_DIR, 'profiles') } : {}),
      workloads: SERVERS_WORKLOADS_CHOSEN,
    });
  }
  if (ONLY === 'all' || ONLY === 'connected') {
    report.connected = await runConnectedBench({ ...hopCommon, ...(CPU_PROFILE ? { cpuProfileDir: join(RESULTS_DIR, 'profiles') } : {}) });
  }
  if (ONLY === 'all' || ONLY === 'stdio') {
    report.stdio = await runStdioHopBench({ ...hopCommon, targets: STDIO_IN_FRONT });
    printUpstreamKinds(report);
  }
  if (ONLY === 'all' || ONLY === 'conditions') {
    report.conditions = await runConditionsBench({ rounds: ROUNDS, durationSeconds: DURATION, warmupSeconds: WARMUP, connections: CONNECTIONS, ...(library === undefined ? {} : { entryUrl: library }), ...(CPU_PROFILE ? { cpuProfileDir: join(RESULTS_DIR, 'profiles') } : {}) });
  }
  if (ONLY === 'instructions') {
    report.instructions = await runInstructionsBench({
      entryUrl: hopCommon.entryUrl,
      ...(BASELINE_DIR !== undefined ? { baselineEntryUrl: libraryEntry(BASELINE_DIR, 'BENCH_BASELINE') } : {}),
      compiledScriptsDir: join(RESULTS_DIR, 'bench'),
      workloads: INSTRUCTION_WORKLOADS,
      ...INSTRUCTION_REQUESTS,
    });
  }
  report.elapsedSeconds = Math.round((Date.now() - began) / 1000);
  writeFileSync(join(RESULTS_DIR, 'latest.json'), `${JSON.stringify(report, null, 2)}\n`);
  console.log(`\nwritten .bench-results/latest.json (${report.elapsedSeconds} s)`);
}

/** The gateway's share of its anchor with an HTTP upstream and with a stdio one, side by side, when both parts ran. */
function printUpstreamKinds(report: Record<string, unknown>): void {
  const http = (report.gatewayHop as { call?: { rows?: Array<{ target: string; shareOfUpstream: { median: number } }> } } | undefined)?.call?.rows?.find((r) => r.target === 'gateway');
  const stdio = (report.stdio as { rows?: Array<{ target: string; shareOfBridge: { median: number } }> } | undefined)?.rows?.find((r) => r.target === 'gateway');
  if (http === undefined || stdio === undefined) return;
  console.log(
    `\ngateway, small tools/call: ${http.shareOfUpstream.median.toFixed(3)} of an HTTP upstream alone; ` +
      `${stdio.shareOfBridge.median.toFixed(3)} of the bare bridge in front of a stdio upstream`,
  );
}

main().catch(async (error: unknown) => {
  console.error(`bench failed: ${error instanceof Error ? error.message : String(error)}`);
  process.exitCode = 1;
  await stopAll();
});
