/**
 * The gateway hop, measured against the upstream alone: part of `npm run bench` (see `run.ts`).
 *
 * One raw `node:http` upstream MCP server (`upstream.ts`), and in front of it, each in its own process:
 * nginx `proxy_pass` (`nginx.ts`), a minimal Node proxy (`node-proxy.ts`, the floor for any Node gateway) and
 * the mcp-oauth-guard gateway (`gateway.ts`, one reused valid token). Every server process is pinned to one
 * CPU and the load generator (autocannon, `load.ts`, which also hosts the issuer) to the other. For each
 * workload (`call`: a small `tools/call`; `list`: a 1,000-tool `tools/list` the gateway filters to 500), after
 * a warm-up of each target, each round measures the upstream alone, then nginx, the minimal proxy and the gateway
 * in a balanced order (a Williams design: each goes first, and follows each other, equally often); each result is divided
 * by the upstream's result of its own round, and medians are reported, with the gateway over nginx and over
 * the minimal proxy (also per round).
 *
 * Besides req/s, each run records the busy share of the servers' CPU (from `/proc/stat`: a hop that leaves it
 * idle is waiting, not working), CPU time per request of the hop and of the upstream, and the hop's
 * event-loop utilisation (Node processes).
 */
import type { ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import ts from 'typescript';
import { LoadProcess } from './load-client.js';
import { findNginx, startNginx } from './nginx.js';
import { findRedisServer, redisCommandsProcessed, startBenchRedis, type BenchRedis } from './redis.js';
import { pairedLine, pairSeconds, runPairedBlocks, type PairedRatio } from './rate-rounds.js';
import { williamsOrder } from './round-order.js';
import { warmUpEach } from './warm-up.js';
import { cpuTimes, onExit, pinning, processCpuMicros, ROOT, run, startScript, stopAll, waitFor, which } from './processes.js';
import {
  CALL_RESULT,
  HOP_BODIES,
  HOP_TARGETS,
  expectedTools,
  gatewayPolicy,
  isGatewayTarget,
  type GatewayLogMode,
  type HopReport,
  type HopStats,
  type HopTarget,
  type HopWorkload,
} from './hop-scenario.js';
import type { RunSummary } from './scenario.js';

/** Settings every part measuring gateways in front of an upstream takes (`run.ts` reads them from `BENCH_*`). */
export interface BenchPartSettings {
  rounds: number;
  durationSeconds: number;
  warmupSeconds: number;
  connections: number;
  /** File URL of the library entry point the gateway is loaded from (compiled `index.js`, or `src/index.ts`). */
  entryUrl: string;
  /**
   * Run the hop servers as plain JavaScript transpiled into this directory, instead of through tsx (whose
   * transform adds a `defineProperty` call to every closure, a per-request cost of the upstream and the
   * minimal proxy that would flatter the gateway's ratios).
   */
  compiledScriptsDir?: string;
  /** Write V8 CPU profiles of the gateways measured to this directory. */
  cpuProfileDir?: string;
  /** node's own options for every gateway process (`BENCH_GATEWAY_NODE_FLAGS`), e.g. `--heap-growing-percent=0`. */
  gatewayNodeFlags?: readonly string[];
  gatewayLog: GatewayLogMode;
  /**
   * Back-to-back blocks in which a variant whose target is a ratio near 1 (the audit trail's, the three-server
   * call's) is judged against its base after the rounds (`runPairedBlocks`); each run half `durationSeconds`. 0: judged
   * on the rounds.
   */
  pairBlocks: number;
}


/** Settings of {@link runHopBench}. */
export interface HopSettings extends BenchPartSettings {
  workloads: readonly HopWorkload[];
  /** Targets in front of the upstream to measure (the upstream alone always is). */
  targets: readonly HopTarget[];
  /** File URL of another build's entry point, whose gateway is `gateway-baseline` (measured only with one). */
  baselineEntryUrl?: string;
}

/** Targets the gateway is held to, printed next to the figures (information, not assertions). */
export const HOP_TARGET_RATIOS = {
  callOverNodeProxy: 0.95,
  callOverNginxGoal: 0.5,
  listOverNginx: 0.5,
  /** The gateway with the audit trail writing to a file, over the same gateway without it. */
  auditedOverGateway: 0.95,
} as const;

/**
 * The per-caller limit of `gateway-limited` and `gateway-shared-limits`: the highest `MCP_AUTH_RATE_LIMIT` takes,
 * far above what one caller (the benchmark's one reused token) can send in a minute, so nothing is refused and
 * the figure is what counting costs. A run that saw a 429 is not valid.
 */
export const BENCH_RATE_LIMIT = '1000000000/min';

/** The gateway variants counting every request against {@link BENCH_RATE_LIMIT}. */
const RATE_LIMITED_TARGETS: readonly HopTarget[] = ['gateway-limited', 'gateway-shared-limits'];

/** One measured run of one target. */
export interface HopRun {
  target: HopTarget;
  workload: HopWorkload;
  requestsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  totalRequests: number;
  /** Mean bytes received per answer (headers included). */
  bytesPerAnswer: number;
  /** Busy share of the servers' CPU during the run (0–1); undefined unpinned or off Linux. */
  serverCpuBusy?: number;
  /** Busy share of the load generator's CPU (0–1). */
  loadCpuBusy?: number;
  /** CPU time of the hop process per request (µs, every thread); undefined for the upstream alone. */
  hopCpuUsPerRequest?: number;
  /** Event-loop utilisation of the hop process during the run (Node processes only). */
  hopEventLoopUtilization?: number;
  /** CPU time of the upstream per request (µs). */
  upstreamCpuUsPerRequest?: number;
  /** `gateway-shared-limits` only: CPU time of redis-server per request (µs), on the servers' CPU too. */
  redisCpuUsPerRequest?: number;
}

/** A process in front of (or being) the upstream, as the parent sees it. */
export interface Hop<T extends string = HopTarget> {
  target: T;
  child: ChildProcess;
  url: string;
  /** Whether it answers `stats` over IPC (Node processes). */
  ipc: boolean;
}

export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

export const round3 = (x: number): number => Math.round(x * 1000) / 1000;

/** `a`'s req/s over `b`'s in each round, and their median; undefined when either was not measured. */
export function ratioPerRound<T extends string>(
  rounds: ReadonlyArray<ReadonlyArray<{ target: T; requestsPerSecond: number }>>,
  measured: readonly T[],
  a: T,
  b: T,
): { median: number; perRound: number[] } | undefined {
  if (!measured.includes(a) || !measured.includes(b)) return undefined;
  const per = rounds.map((runs) => runs.find((r) => r.target === a)!.requestsPerSecond / runs.find((r) => r.target === b)!.requestsPerSecond);
  return { median: round3(median(per)), perRound: per.map(round3) };
}

/** Median, lowest and highest of `values`, and the values themselves (3 decimals). */
export function spread(values: readonly number[]): { median: number; min: number; max: number; perRound: number[] } {
  return { median: round3(median(values)), min: round3(Math.min(...values)), max: round3(Math.max(...values)), perRound: values.map(round3) };
}

export const round1 = (x: number): number => Math.round(x * 10) / 10;

/** The hop processes' scripts, and what they import (the stdio part's too). */
const HOP_SCRIPTS = ['hop-scenario.ts', 'upstream.ts', 'node-proxy.ts', 'gateway.ts', 'stdio-server.ts', 'stdio-bridge.ts'];

/** Transpiles the hop scripts (types stripped, nothing added) into `outDir`, beside each other. */
function transpileHopScripts(outDir: string): void {
  mkdirSync(outDir, { recursive: true });
  for (const file of HOP_SCRIPTS) {
    const { outputText } = ts.transpileModule(readFileSync(join(ROOT, 'bench', file), 'utf8'), {
      fileName: file,
      compilerOptions: { module: ts.ModuleKind.ES2022, target: ts.ScriptTarget.ES2022, verbatimModuleSyntax: true },
    });
    writeFileSync(join(outDir, file.replace(/\.ts$/, '.js')), outputText);
  }
}

let compiledDir: string | undefined;

/** Runs the hop scripts from `dir`, transpiled there now, or through tsx when undefined. */
export function prepareHopScripts(dir: string | undefined): void {
  compiledDir = dir;
  if (dir !== undefined) transpileHopScripts(dir);
}

/** Where a hop script runs from: its transpiled copy, or undefined (then through tsx). */
export function compiledHopScript(script: string): string | undefined {
  return compiledDir === undefined ? undefined : join(compiledDir, script.replace(/\.ts$/, '.js'));
}

/**
 * Pins this process (every thread) to the load generator's CPU when there are two to pin to, so that its own
 * work between runs stays off the servers' CPU; returns the placement and how to describe it.
 */
export function pinPlacement(): { loadCpu: number | undefined; serverCpu: number | undefined; pinned: boolean; note: string } {
  const pin = pinning();
  const cpus = os.cpus().length;
  const pinned = pin.ok && cpus >= 2;
  if (pinned) {
    try {
      run(which('taskset')!, ['--all-tasks', '--pid', '--cpu-list', '0', String(process.pid)], 5_000);
    } catch {
      // Only noise.
    }
  }
  const note = pinned
    ? 'servers pinned to CPU 1, load generator to CPU 0'
    : `NOT pinned (${pin.ok ? `${cpus} CPU` : pin.why}): servers and load generator share the CPUs, ratios are less telling`;
  return { loadCpu: pinned ? 0 : undefined, serverCpu: pinned ? 1 : undefined, pinned, note };
}

export async function startHop<T extends string>(target: T, script: string, args: string[], cpu: number | undefined, options: { execArgv?: string[]; stdout?: 'inherit' | 'ignore' } = {}): Promise<Hop<T>> {
  const compiled = compiledHopScript(script);
  const child = startScript(script, args, { cpu, ...options, ...(compiled ? { compiled } : {}) });
  const url = await waitFor<HopReport, string>(child, target, (m) => (m.type === 'ready' ? m.url : undefined), 60_000);
  return { target, child, url, ipc: true };
}

/** What `hop` reports of itself now (see `HopStats`). */
export function statsOf(hop: Hop<string>): Promise<HopStats> {
  const answer = waitFor<HopReport, HopStats>(hop.child, `${hop.target} stats`, (m) => (m.type === 'stats' ? m.stats : undefined), 10_000);
  hop.child.send({ type: 'stats' });
  return answer;
}

/** CPU (µs) and, for Node processes, event-loop times of `hop` so far. */
export async function sample(hop: Hop<string>): Promise<{ cpu?: number; active?: number; idle?: number }> {
  if (!hop.ipc) return { cpu: processCpuMicros(hop.child.pid) };
  const stats = await statsOf(hop);
  return { cpu: stats.cpu.user + stats.cpu.system, active: stats.elu.active, idle: stats.elu.idle };
}

function checkAnswer(target: HopTarget, workload: HopWorkload, probe: { status: number; body: string }): void {
  const fail = (why: string): never => {
    throw new Error(`${target} (${workload}) answered wrongly: ${why}: ${probe.status} ${probe.body.slice(0, 300)}`);
  };
  if (probe.status !== 200) fail('status');
  let message: { id?: unknown; result?: { tools?: unknown[] } };
  try {
    message = JSON.parse(probe.body) as typeof message;
  } catch {
    return fail('not JSON');
  }
  if (message.id !== 1) fail('id');
  if (workload === 'call' && JSON.stringify(message.result) !== JSON.stringify(CALL_RESULT)) fail('result');
  if (workload !== 'call' && message.result?.tools?.length !== expectedTools(target)) {
    fail(`${message.result?.tools?.length} tools, expected ${expectedTools(target)}`);
  }
}

/** Runs the gateway-hop benchmark and prints its report; returns what goes to `latest.json`. */
export async function runHopBench(settings: HopSettings): Promise<Record<string, unknown>> {
  const began = Date.now();
  const { loadCpu, serverCpu, pinned, note: pinNote } = pinPlacement();
  prepareHopScripts(settings.compiledScriptsDir);
  const nginx = settings.targets.includes('nginx') ? findNginx((line) => console.log(line)) : { why: 'not in BENCH_TARGETS' };
  if ('why' in nginx) console.log(`bench: the nginx line is skipped: ${nginx.why}`);

  const dir = mkdtempSync(join(os.tmpdir(), 'mcp-bench-gateway-'));
  onExit(() => rmSync(dir, { recursive: true, force: true }));
  const policyFile = join(dir, 'policy.json');
  writeFileSync(policyFile, JSON.stringify(gatewayPolicy()));

  const loadChild = startScript('load.ts', [], { cpu: loadCpu });
  const { load, issuer } = await LoadProcess.ready(loadChild, settings.connections);
  const upstream = await startHop('upstream', 'upstream.ts', [], serverCpu);
  const gatewayArgv = [...(settings.gatewayNodeFlags ?? []), ...(settings.cpuProfileDir ? ['--cpu-prof', `--cpu-prof-dir=${settings.cpuProfileDir}`] : [])];
  const wanted = new Set<HopTarget>(['upstream', ...settings.targets]);
  const [nodeProxy, gateway] = await Promise.all([
    wanted.has('node-proxy') ? startHop('node-proxy', 'node-proxy.ts', [upstream.url], serverCpu) : undefined,
    // Always started: its resource is the audience of the token every target is sent.
    startHop('gateway', 'gateway.ts', [settings.entryUrl, upstream.url, issuer, policyFile, settings.gatewayLog], serverCpu, {
      execArgv: gatewayArgv,
      // Its request log goes where a deployment's would, but not onto the terminal.
      stdout: 'ignore',
    }),
  ]);
  let redisSkipped = !wanted.has('gateway-shared-limits') ? 'not in BENCH_TARGETS' : undefined;
  const redisServer = wanted.has('gateway-shared-limits') ? findRedisServer((line) => console.log(line)) : undefined;
  let redis: BenchRedis | undefined;
  let redisVersion: string | undefined;
  if (redisServer !== undefined && 'why' in redisServer) redisSkipped = redisServer.why;
  else if (redisServer !== undefined) {
    try {
      redis = await startBenchRedis(redisServer.path, serverCpu);
      redisVersion = redisServer.version;
    } catch (error) {
      redisSkipped = error instanceof Error ? error.message : String(error);
    }
  }
  if (wanted.has('gateway-shared-limits') && redis === undefined) console.log(`bench: the gateway-shared-limits line is skipped: ${redisSkipped}`);
  /** What each gateway variant adds to the plain gateway (`gateway.ts`'s trailing arguments). */
  const variantArgs: Partial<Record<HopTarget, string[]>> = {
    'gateway-sealed': ['sealed'],
    'gateway-limited': [`MCP_AUTH_RATE_LIMIT=${BENCH_RATE_LIMIT}`],
    // Closed: were Redis lost, requests would get 503 (and the run fail) instead of being counted per process.
    ...(redis ? { 'gateway-shared-limits': [`MCP_AUTH_RATE_LIMIT=${BENCH_RATE_LIMIT}`, `MCP_AUTH_REDIS_URL=${redis.url}`, 'MCP_AUTH_REDIS_FAIL=closed'] } : {}),
  };
  // The audit file of `gateway-audited`, in a folder of its own that goes with the run.
  const auditDir = wanted.has('gateway-audited') ? mkdtempSync(join(os.tmpdir(), 'bench-audit-')) : undefined;
  if (auditDir !== undefined) variantArgs['gateway-audited'] = [`MCP_AUTH_AUDIT=${join(auditDir, 'audit.jsonl')}`];
  const variants: Hop[] = [];
  if (settings.baselineEntryUrl !== undefined) variantArgs['gateway-baseline'] = [];
  for (const target of HOP_TARGETS) {
    const args = variantArgs[target];
    const entryUrl = target === 'gateway-baseline' ? settings.baselineEntryUrl! : settings.entryUrl;
    // One after the other, as each start-up (issuer discovery included) runs on the servers' CPU.
    if (args !== undefined && wanted.has(target)) {
      variants.push(await startHop(target, 'gateway.ts', [entryUrl, upstream.url, issuer, policyFile, settings.gatewayLog, ...args], serverCpu, { execArgv: [...(settings.gatewayNodeFlags ?? [])], stdout: 'ignore' }));
    }
  }
  if (wanted.has('gateway-baseline') && settings.baselineEntryUrl === undefined) console.log('bench: the gateway-baseline line is skipped: no BENCH_BASELINE');
  const hops: Hop[] = [upstream, ...(nodeProxy ? [nodeProxy] : []), ...(wanted.has('gateway') ? [gateway] : []), ...variants];
  let nginxSkipped = !wanted.has('nginx') ? 'not in BENCH_TARGETS' : 'why' in nginx ? nginx.why : undefined;
  if (wanted.has('nginx') && !('why' in nginx)) {
    try {
      const started = await startNginx(nginx.path, upstream.url, serverCpu);
      hops.push({ target: 'nginx', child: started.child, url: started.url, ipc: false });
    } catch (error) {
      nginxSkipped = error instanceof Error ? error.message : String(error);
      console.log(`bench: the nginx line is skipped: ${nginxSkipped}`);
    }
  }
  const byTarget = new Map(hops.map((h) => [h.target, h]));
  const targets = HOP_TARGETS.filter((t) => byTarget.has(t));
  /** The resource each target's token is for: a gateway's own; the plain gateway's for the others (which ignore it). */
  const resourceOf = (target: HopTarget): string => (isGatewayTarget(target) ? byTarget.get(target)?.url : undefined) ?? gateway.url;
  await load.token(gateway.url);
  for (const target of targets) {
    // A sealed session per connection, each with a token of its own; one reused token for each other variant.
    if (target === 'gateway-sealed') await load.sessions(resourceOf(target), settings.connections, resourceOf(target));
    else if (isGatewayTarget(target) && target !== 'gateway') await load.token(resourceOf(target));
  }
  /** How a target is sent its requests: the sealed gateway in the sessions it issued, the others with a reused token. */
  const sending = (target: HopTarget): { tokenResource: string; session?: boolean } =>
    target === 'gateway-sealed' ? { tokenResource: resourceOf(target), session: true } : { tokenResource: resourceOf(target) };
  for (const workload of settings.workloads) {
    for (const target of targets) {
      // Twice: a second answer must be the same as the first (e.g. if anything along the way caches).
      const options = { body: HOP_BODIES[workload], ...sending(target) };
      const [first, second] = [await load.probe(byTarget.get(target)!.url, options), await load.probe(byTarget.get(target)!.url, options)];
      checkAnswer(target, workload, first);
      // list-fresh answers differ by design, in their nextCursor only.
      const same = (body: string): string => (workload === 'list-fresh' ? body.replace(/"nextCursor":"c\d+"/, '') : body);
      if (second.status !== first.status || same(second.body) !== same(first.body)) throw new Error(`${target} (${workload}): a second answer differs from the first`);
    }
  }

  console.log('');
  console.log(
    `bench (gateway hop): ${settings.rounds} rounds × (${targets.join(', ')}) × ${settings.durationSeconds} s per workload ` +
      `(${settings.workloads.join(', ')}), ${settings.warmupSeconds} s warm-up each, ${settings.connections} connections; ${pinNote}; ` +
      `gateway log ${settings.gatewayLog}${settings.gatewayNodeFlags?.length ? `; gateway node flags ${settings.gatewayNodeFlags.join(' ')}` : ''}${'why' in nginx ? '' : `; nginx ${nginx.version}`}` +
      `${redisVersion ? `; redis-server ${redisVersion}` : ''}` +
      `${targets.some((t) => RATE_LIMITED_TARGETS.includes(t)) ? `; rate limit ${BENCH_RATE_LIMIT} per caller` : ''}`,
  );

  /** Requests the rate-limited gateways answered, all runs and warm-ups (each run fails on a 429). */
  const limitedRequests: Partial<Record<HopTarget, number>> = {};
  const measure = async (target: HopTarget, workload: HopWorkload, seconds: number): Promise<HopRun> => {
    const hop = byTarget.get(target)!;
    const inFront = target === 'upstream' ? undefined : hop;
    // Outside the CPU samples: one short connection to Redis.
    const redisBefore = target === 'gateway-shared-limits' ? await redisCommandsProcessed(redis!.url) : undefined;
    const coreBefore = serverCpu === undefined ? undefined : cpuTimes(serverCpu);
    const loadBefore = loadCpu === undefined ? undefined : cpuTimes(loadCpu);
    const [upBefore, hopBefore] = await Promise.all([sample(upstream), inFront ? sample(inFront) : undefined]);
    const redisCpuBefore = redisBefore === undefined ? undefined : redis!.cpuMicros();
    const { session, ...token } = sending(target);
    const summary: RunSummary = await load.run({ url: hop.url, scenario: target, durationSeconds: seconds, body: HOP_BODIES[workload], ...token, ...(session ? { sessions: true } : {}) });
    const [upAfter, hopAfter] = await Promise.all([sample(upstream), inFront ? sample(inFront) : undefined]);
    const redisCpuAfter = redisBefore === undefined ? undefined : redis!.cpuMicros();
    const coreAfter = serverCpu === undefined ? undefined : cpuTimes(serverCpu);
    const loadAfter = loadCpu === undefined ? undefined : cpuTimes(loadCpu);
    if (summary.non2xx > 0 || summary.errors > 0 || summary.timeouts > 0) {
      const statuses = Object.entries(summary.statusCodes).filter(([status]) => !status.startsWith('2')).map(([status, n]) => `${n}× ${status}`).join(', ');
      const limited = summary.statusCodes['429'] ? `; a 429 means the rate limit (${BENCH_RATE_LIMIT}) refused requests, so the figure is not what counting costs` : '';
      throw new Error(`${target} (${workload}): ${summary.non2xx} non-2xx answers (${statuses}), ${summary.errors} errors, ${summary.timeouts} timeouts — the measurement is not valid${limited}`);
    }
    if (redisBefore !== undefined) {
      // Every request must have reached Redis, or the limit was not the shared one.
      const processed = (await redisCommandsProcessed(redis!.url)) - redisBefore;
      if (processed < summary.totalRequests) {
        throw new Error(`${target} (${workload}): Redis processed ${processed} commands for ${summary.totalRequests} requests — the limit was not kept there, the measurement is not valid`);
      }
    }
    if (RATE_LIMITED_TARGETS.includes(target)) limitedRequests[target] = (limitedRequests[target] ?? 0) + summary.totalRequests;
    const n = summary.totalRequests || 1;
    const perRequest = (a?: { cpu?: number }, b?: { cpu?: number }): number | undefined =>
      a?.cpu !== undefined && b?.cpu !== undefined ? round1((b.cpu - a.cpu) / n) : undefined;
    const busy = (a?: { busy: number; total: number }, b?: { busy: number; total: number }): number | undefined =>
      a && b && b.total > a.total ? round3((b.busy - a.busy) / (b.total - a.total)) : undefined;
    const elu =
      hopBefore?.active !== undefined && hopAfter?.active !== undefined
        ? round3((hopAfter.active - hopBefore.active) / (hopAfter.active - hopBefore.active + (hopAfter.idle! - hopBefore.idle!)))
        : undefined;
    return {
      target,
      workload,
      requestsPerSecond: summary.requestsPerSecond,
      p50Ms: summary.p50Ms,
      p99Ms: summary.p99Ms,
      totalRequests: summary.totalRequests,
      bytesPerAnswer: summary.requestsPerSecond > 0 ? Math.round(summary.bytesPerSecond / summary.requestsPerSecond) : 0,
      serverCpuBusy: busy(coreBefore, coreAfter),
      loadCpuBusy: busy(loadBefore, loadAfter),
      hopCpuUsPerRequest: inFront ? perRequest(hopBefore, hopAfter) : undefined,
      hopEventLoopUtilization: elu,
      upstreamCpuUsPerRequest: perRequest(upBefore, upAfter),
      ...(redisCpuBefore !== undefined ? { redisCpuUsPerRequest: perRequest({ cpu: redisCpuBefore }, { cpu: redisCpuAfter }) } : {}),
    };
  };

  const results: Record<string, HopRun[][]> = {};
  let auditedPairs: PairedRatio | undefined;
  const targetWidth = Math.max(...targets.map((t) => t.length));
  for (const workload of settings.workloads) {
    await warmUpEach(targets, (target, seconds) => measure(target, workload, seconds), settings.warmupSeconds, workload);
    const rounds: HopRun[][] = [];
    // The upstream alone opens every round (each share is over it); the targets in front of it follow in a balanced
    // order (williamsOrder), so that none always follows the same one: a process that ran just before, on the same
    // CPU, can leave caches and the upstream's connections in a state that favours or burdens whoever comes next.
    // (So `runs` in latest.json are in the order measured; every figure finds its run by target.)
    const inFront = targets.filter((t) => t !== 'upstream');
    for (let round = 0; round < settings.rounds; round++) {
      const runs: HopRun[] = [];
      for (const target of ['upstream' as const, ...williamsOrder(inFront, round)]) {
        const r = await measure(target, workload, settings.durationSeconds);
        runs.push(r);
        console.log(
          `  ${workload} round ${round + 1} ${target.padEnd(targetWidth)} ${r.requestsPerSecond.toFixed(0).padStart(7)} req/s  p99 ${String(r.p99Ms).padStart(4)} ms  ` +
            `server CPU busy ${fmtPct(r.serverCpuBusy)}  load CPU busy ${fmtPct(r.loadCpuBusy)}` +
            (r.hopCpuUsPerRequest !== undefined ? `  hop ${r.hopCpuUsPerRequest} µs/req` : '') +
            (r.hopEventLoopUtilization !== undefined && target !== 'upstream' ? ` ELU ${r.hopEventLoopUtilization.toFixed(2)}` : '') +
            `  upstream ${r.upstreamCpuUsPerRequest ?? '?'} µs/req` +
            (r.redisCpuUsPerRequest !== undefined ? `  redis ${r.redisCpuUsPerRequest} µs/req` : ''),
        );
      }
      rounds.push(runs);
    }
    results[workload] = rounds;
    // The audit trail's target is a ratio near 1: judged in back-to-back blocks (see runPairedBlocks).
    if (workload === 'call' && settings.pairBlocks > 0 && targets.includes('gateway-audited') && targets.includes('gateway')) {
      auditedPairs = await runPairedBlocks<HopTarget, HopRun>({ workload, variant: 'gateway-audited', base: 'gateway', blocks: settings.pairBlocks, seconds: pairSeconds(settings), measure: (target, seconds) => measure(target, workload, seconds) });
    }
  }
  await stopAll();
  if (redis) rmSync(redis.dir, { recursive: true, force: true });
  if (auditDir !== undefined) rmSync(auditDir, { recursive: true, force: true });

  const ratioOf = (rounds: HopRun[][], a: HopTarget, b: HopTarget): { median: number; perRound: number[] } | undefined => ratioPerRound(rounds, targets, a, b);
  const label: Record<HopTarget, string> = {
    upstream: 'upstream alone',
    nginx: 'nginx proxy_pass',
    'node-proxy': 'minimal Node proxy',
    gateway: 'mcp-oauth-guard gateway',
    'gateway-sealed': 'gateway, sealed sessions',
    'gateway-limited': 'gateway, rate limit',
    'gateway-shared-limits': 'gateway, limit in Redis',
    'gateway-audited': 'gateway, audit to a file',
    'gateway-baseline': 'gateway, BENCH_BASELINE',
  };
  const title: Record<HopWorkload, string> = {
    call: 'small tools/call',
    list: 'tools/list, 1,000 tools (~150 KB), gateway filters to 500',
    'list-fresh': 'tools/list, 1,000 tools, a new nextCursor in every answer (nothing reusable), gateway filters to 500',
  };
  const report: Record<string, unknown> = {};
  for (const workload of settings.workloads) {
    const rounds = results[workload]!;
    const rows = targets.map((target) => {
      const own = rounds.map((runs) => runs.find((r) => r.target === target)!);
      const pick = (f: (r: HopRun) => number | undefined): number | undefined => {
        const values = own.map(f).filter((v): v is number => v !== undefined);
        return values.length ? median(values) : undefined;
      };
      return {
        target,
        requestsPerSecond: Math.round(median(own.map((r) => r.requestsPerSecond))),
        p99Ms: median(own.map((r) => r.p99Ms)),
        shareOfUpstream: ratioOf(rounds, target, 'upstream')!,
        serverCpuBusy: pick((r) => r.serverCpuBusy),
        loadCpuBusy: pick((r) => r.loadCpuBusy),
        hopCpuUsPerRequest: pick((r) => r.hopCpuUsPerRequest),
        hopEventLoopUtilization: target === 'upstream' ? undefined : pick((r) => r.hopEventLoopUtilization),
        upstreamCpuUsPerRequest: pick((r) => r.upstreamCpuUsPerRequest),
        bytesPerAnswer: Math.round(median(own.map((r) => r.bytesPerAnswer))),
      };
    });
    const overNginx = ratioOf(rounds, 'gateway', 'nginx');
    const overNodeProxy = ratioOf(rounds, 'gateway', 'node-proxy');
    const sealedOverGateway = ratioOf(rounds, 'gateway-sealed', 'gateway');
    const limitedOverGateway = ratioOf(rounds, 'gateway-limited', 'gateway');
    const sharedLimitsOverGateway = ratioOf(rounds, 'gateway-shared-limits', 'gateway');
    const auditedOverGateway = ratioOf(rounds, 'gateway-audited', 'gateway');
    const baselineOverNodeProxy = ratioOf(rounds, 'gateway-baseline', 'node-proxy');
    const baselineOverNginx = ratioOf(rounds, 'gateway-baseline', 'nginx');
    const gatewayOverBaseline = ratioOf(rounds, 'gateway', 'gateway-baseline');
    console.log('');
    console.log(`gateway hop, ${title[workload]}:`);
    console.log(
      `${'target'.padEnd(26)}${'req/s'.padStart(8)}${'p99 ms'.padStart(8)}${'share'.padStart(7)}${'srv CPU'.padStart(9)}${'load CPU'.padStart(10)}` +
        `${'hop µs/req'.padStart(12)}${'hop ELU'.padStart(9)}${'up µs/req'.padStart(11)}${'B/answer'.padStart(10)}   share per round`,
    );
    for (const row of rows) {
      console.log(
        `${label[row.target].padEnd(26)}${String(row.requestsPerSecond).padStart(8)}${String(row.p99Ms).padStart(8)}${row.shareOfUpstream.median.toFixed(3).padStart(7)}` +
          `${fmtPct(row.serverCpuBusy).padStart(9)}${fmtPct(row.loadCpuBusy).padStart(10)}${(row.hopCpuUsPerRequest?.toFixed(1) ?? '-').padStart(12)}` +
          `${(row.hopEventLoopUtilization?.toFixed(2) ?? '-').padStart(9)}${(row.upstreamCpuUsPerRequest?.toFixed(1) ?? '-').padStart(11)}` +
          `${String(row.bytesPerAnswer).padStart(10)}   ${row.shareOfUpstream.perRound.map((x) => x.toFixed(2)).join(' ')}`,
      );
    }
    const line = (name: string, r: { median: number; perRound: number[] } | undefined, target?: number, note = ''): void => {
      if (r === undefined) {
        const why = name.includes('nginx') && nginxSkipped ? ` (nginx skipped: ${nginxSkipped})` : name.includes('Redis') && redisSkipped ? ` (redis-server skipped: ${redisSkipped})` : '';
        console.log(`${name}: not measured${why}`);
        return;
      }
      const verdict = target === undefined ? '' : ` (target ≥ ${target.toFixed(2)}: ${r.median >= target ? 'MET' : 'BELOW'})`;
      console.log(`${name}: ${r.median.toFixed(3)}${verdict}${note}   per round ${r.perRound.map((x) => x.toFixed(2)).join(' ')}`);
    };
    if (workload === 'call') {
      line('gateway / minimal Node proxy', overNodeProxy, HOP_TARGET_RATIOS.callOverNodeProxy);
      line('gateway / nginx', overNginx, undefined, ` (longer-term goal ≥ ${HOP_TARGET_RATIOS.callOverNginxGoal.toFixed(2)}: ${overNginx && overNginx.median >= HOP_TARGET_RATIOS.callOverNginxGoal ? 'MET' : 'not yet'})`);
    } else if (workload === 'list') {
      line('gateway / nginx', overNginx, HOP_TARGET_RATIOS.listOverNginx);
      line('gateway / minimal Node proxy', overNodeProxy);
    } else {
      // Every answer parsed and filtered: what the list costs when the memo cannot help. No target.
      line('gateway / nginx', overNginx);
      line('gateway / minimal Node proxy', overNodeProxy);
    }
    // What sealed session ids cost: opening each request's id (decrypted once, then remembered) and sealing the
    // ids in the answers, against the same gateway sent no session.
    if (sealedOverGateway !== undefined) line('gateway with sealed sessions / gateway', sealedOverGateway);
    // What counting each request against the caller's limit costs: in a Map of the process, or in Redis (a
    // round trip to a server on the same CPU, which a fleet pays on the network instead).
    if (wanted.has('gateway-limited')) line('gateway with a per-process rate limit / gateway', limitedOverGateway);
    const redisCpu = rounds.flatMap((runs) => runs.flatMap((r) => (r.redisCpuUsPerRequest === undefined ? [] : [r.redisCpuUsPerRequest])));
    const redisNote = redisCpu.length > 0 ? ` (and redis-server ${round1(median(redisCpu))} µs of CPU per request)` : '';
    if (wanted.has('gateway-shared-limits')) line('gateway with the rate limit in Redis / gateway', sharedLimitsOverGateway, undefined, redisNote);
    // What a record per request costs: built when the answer ends, written to a file in batches off the request path.
    // Judged on the back-to-back blocks (the call's), the rounds' figure printed besides.
    const pairedAudit = workload === 'call' ? auditedPairs : undefined;
    if (wanted.has('gateway-audited')) line(`gateway with the audit trail to a file / gateway${pairedAudit ? ' in the rounds' : ''}`, auditedOverGateway, workload === 'call' && !pairedAudit ? HOP_TARGET_RATIOS.auditedOverGateway : undefined);
    if (pairedAudit) console.log(pairedLine('gateway with the audit trail to a file / gateway', pairedAudit, HOP_TARGET_RATIOS.auditedOverGateway));
    // The same figures for the build given as BENCH_BASELINE, and this build over it, round by round.
    if (gatewayOverBaseline !== undefined) {
      line('BENCH_BASELINE gateway / minimal Node proxy', baselineOverNodeProxy);
      line('BENCH_BASELINE gateway / nginx', baselineOverNginx);
      line('gateway / BENCH_BASELINE gateway', gatewayOverBaseline);
    }
    report[workload] = { rows, gatewayOverNginx: overNginx, gatewayOverNodeProxy: overNodeProxy, sealedOverGateway, limitedOverGateway, sharedLimitsOverGateway, auditedOverGateway, ...(pairedAudit ? { auditedOverGatewayPaired: pairedAudit } : {}), baselineOverNodeProxy, baselineOverNginx, gatewayOverBaseline, runs: rounds };
  }
  const limitedSummary = Object.entries(limitedRequests).map(([target, n]) => `${n} to ${target}`);
  if (limitedSummary.length > 0) {
    console.log(`rate limit ${BENCH_RATE_LIMIT} per caller: no request refused (429) in ${limitedSummary.join(', ')}${limitedRequests['gateway-shared-limits'] ? '; Redis processed at least one command per request' : ''}`);
  }
  console.log(
    'share: req/s over the upstream-alone req/s of the same round (median); srv CPU / load CPU: busy share of the CPU the servers / ' +
      'the load generator are pinned to; hop µs/req: CPU time of the process in front of the upstream per request; ELU: its event-loop utilisation',
  );
  return {
    settings: {
      ...settings,
      entryUrl: undefined,
      compiledScriptsDir: undefined,
      pinned,
      nginx: 'why' in nginx ? undefined : nginx.version,
      nginxSkipped,
      redis: redisVersion,
      redisSkipped: redis ? undefined : redisSkipped,
      rateLimit: BENCH_RATE_LIMIT,
      requestsToRateLimitedGateways: limitedRequests,
    },
    targets: HOP_TARGET_RATIOS,
    ...report,
    elapsedSeconds: Math.round((Date.now() - began) / 1000),
  };
}

export function fmtPct(x: number | undefined): string {
  return x === undefined ? '-' : `${Math.round(x * 100)}%`;
}
