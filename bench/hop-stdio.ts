/**
 * The stdio part of the gateway benchmark (`npm run bench`, see `run.ts`): what it costs to publish a stdio
 * MCP server over Streamable HTTP, next to the bridges people use for that today.
 *
 * One small, fast stdio MCP server (`stdio-server.ts`) behind each of, every one in its own process pinned to
 * one CPU (their stdio children inherit the pinning), with the load generator (autocannon, `load.ts`) on the
 * other: the bare per-session bridge (`stdio-bridge.ts`, the anchor: spawn, pipe, match ids, nothing else),
 * `supergateway` (stateful Streamable HTTP mode) and `mcp-proxy` (npm, its Streamable HTTP endpoint), both
 * without authentication, and the mcp-oauth-guard gateway with a stdio upstream, verifying a token and
 * applying the policy on every call. The bare bridge, supergateway and the gateway run one child process
 * per MCP session; mcp-proxy runs one for all its sessions (as it is built: one client connected at
 * start-up), which the report says. Every load-generator connection has a session (and a token) of its
 * own, opened before the runs. The workload is
 * the hop part's small `tools/call`. After a warm-up of each target, each round measures the bridge, then
 * supergateway, mcp-proxy and the gateway in a balanced order (`round-order.ts`); each result is divided by the
 * bridge's result of its own round, and medians are reported, with the gateway over each npm bridge and the npm
 * bridges over each other (also per round).
 *
 * A bridge that cannot run here is left out, and why is printed and written to the report.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { compiledHopScript, fmtPct, median, pinPlacement, prepareHopScripts, ratioPerRound, round1, round3, sample, startHop, type Hop, type HopSettings } from './hop.js';
import { CALL_RESULT, HOP_BODIES, STDIO_TARGETS, gatewayPolicy, type StdioTarget } from './hop-scenario.js';
import { LoadProcess } from './load-client.js';
import { freePort } from '../test/helpers/free-port.js';
import { cpuTimes, onExit, processCpuMicros, ROOT, startProgram, startScript, stopAll } from './processes.js';
import { williamsOrder } from './round-order.js';
import type { RunSummary } from './scenario.js';
import { eventStreamData } from '../src/core/wire/event-stream.js';

/** Settings of {@link runStdioHopBench}: the hop part's, where each connection has an MCP session (a stdio process) of its own. */
export interface StdioHopSettings extends Omit<HopSettings, 'workloads' | 'targets' | 'cpuProfileDir'> {
  /** Bridges to measure besides the anchor, which always is. */
  targets: readonly StdioTarget[];
}

/**
 * Target of the gateway, with authentication and policy on every call, over each npm bridge without: ahead of
 * both, so its ratio must exceed this (a tie is not ahead).
 */
export const STDIO_TARGET_RATIO = 1;

/** One measured run of one target. */
export interface StdioRun {
  target: StdioTarget;
  requestsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  totalRequests: number;
  serverCpuBusy?: number;
  loadCpuBusy?: number;
  /** CPU time of the bridge process per request (µs, every thread), its stdio children not included. */
  bridgeCpuUsPerRequest?: number;
}

/** The npm bridges: the package, its bin's script as installed, and how it maps sessions to processes. */
const NPM_BRIDGES = {
  supergateway: { bin: 'node_modules/supergateway/dist/index.js', processes: 'one stdio process per session (--stateful)' },
  // Its one MCP client is connected at start-up and shared by every session's server.
  'mcp-proxy': { bin: 'node_modules/mcp-proxy/dist/bin/mcp-proxy.mjs', processes: 'ONE stdio process shared by all sessions (it starts one at start-up): every user reaches the same process' },
} as const;

/** Waits until `url` answers anything over HTTP, or throws after `ms`. */
async function waitForHttp(url: string, ms: number, exited: () => string | undefined): Promise<void> {
  const deadline = Date.now() + ms;
  for (;;) {
    const gone = exited();
    if (gone !== undefined) throw new Error(gone);
    try {
      const response = await fetch(url, { method: 'GET', signal: AbortSignal.timeout(2_000) });
      await response.body?.cancel();
      return;
    } catch {
      if (Date.now() > deadline) throw new Error(`no answer at ${url} after ${ms} ms`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

/** The JSON-RPC message of a probe's answer: the JSON body, or the last message event of an event stream (the project's one SSE parser). */
function answerMessage(body: string): { id?: unknown; result?: unknown } | undefined {
  try {
    return JSON.parse(body) as { id?: unknown; result?: unknown };
  } catch {
    const data = eventStreamData(body).filter((d) => d !== '');
    if (data.length === 0) return undefined;
    try {
      return JSON.parse(data[data.length - 1]!) as { id?: unknown; result?: unknown };
    } catch {
      return undefined;
    }
  }
}

/** Runs the stdio part and prints its report; returns what goes to `latest.json`. */
export async function runStdioHopBench(settings: StdioHopSettings): Promise<Record<string, unknown>> {
  const began = Date.now();
  const { loadCpu, serverCpu, pinned, note: pinNote } = pinPlacement();
  prepareHopScripts(settings.compiledScriptsDir);
  const serverScript = compiledHopScript('stdio-server.ts');
  // The one stdio server every bridge starts, as an argument list and as the command line the npm bridges and the gateway take.
  const serverArgv = serverScript !== undefined ? [process.execPath, serverScript] : [process.execPath, '--import', 'tsx', join(ROOT, 'bench', 'stdio-server.ts')];
  const serverCommand = serverArgv.map((word) => (/^[\w./:=+-]+$/.test(word) ? word : `'${word.replaceAll("'", `'\\''`)}'`)).join(' ');

  const dir = mkdtempSync(join(os.tmpdir(), 'mcp-bench-stdio-'));
  onExit(() => rmSync(dir, { recursive: true, force: true }));
  const policyFile = join(dir, 'policy.json');
  // The hop part's policy, for the one tool the stdio server has: authorised by the token's scope hierarchy.
  writeFileSync(policyFile, JSON.stringify({ ...gatewayPolicy(), tools: { '*': ['notes:read'] } }));

  const loadChild = startScript('load.ts', [], { cpu: loadCpu });
  const { load, issuer } = await LoadProcess.ready(loadChild, settings.connections);
  const wanted = new Set<StdioTarget>(['bridge', ...settings.targets]);
  const hops = new Map<StdioTarget, Hop<StdioTarget>>();
  const skipped: Partial<Record<StdioTarget, string>> = {};
  hops.set('bridge', await startHop<StdioTarget>('bridge', 'stdio-bridge.ts', serverArgv, serverCpu));
  // Always started: its resource is the audience of every session's token (the npm bridges ignore the header).
  const gateway = await startHop<StdioTarget>('gateway', 'gateway.ts', [settings.entryUrl, `stdio:${serverCommand}`, issuer, policyFile, settings.gatewayLog], serverCpu, { execArgv: [...(settings.gatewayNodeFlags ?? [])], stdout: 'ignore' });
  if (wanted.has('gateway')) hops.set('gateway', gateway);
  const npmArgs: Record<keyof typeof NPM_BRIDGES, (port: number) => string[]> = {
    // Stateful: a child process per session, as the other bridges; JSON answers are not offered in this mode.
    supergateway: (port) => ['--stdio', serverCommand, '--outputTransport', 'streamableHttp', '--stateful', '--port', String(port), '--streamableHttpPath', '/mcp', '--logLevel', 'none'],
    'mcp-proxy': (port) => ['--host', '127.0.0.1', '--port', String(port), '--server', 'stream', '--streamEndpoint', '/mcp', '--', ...serverArgv],
  };
  // supergateway listens on every interface; this preload makes a listen without a host take 127.0.0.1.
  const loopbackPreload = join(ROOT, 'test', 'helpers', 'everything-loopback-preload.mjs');
  for (const name of ['supergateway', 'mcp-proxy'] as const) {
    if (!wanted.has(name)) continue;
    const bin = join(ROOT, NPM_BRIDGES[name].bin);
    if (!existsSync(bin)) {
      skipped[name] = `${NPM_BRIDGES[name].bin} is missing (npm install)`;
      continue;
    }
    try {
      const port = await freePort();
      const child = startProgram(process.execPath, ['--import', loopbackPreload, bin, ...npmArgs[name](port)], serverCpu, { stdio: ['ignore', 'ignore', 'pipe'] });
      let stderr = '';
      child.stderr?.on('data', (chunk: Buffer) => void (stderr = (stderr + chunk.toString('utf8')).slice(-2_000)));
      const url = `http://127.0.0.1:${port}/mcp`;
      await waitForHttp(url, 30_000, () => (child.exitCode !== null || child.signalCode !== null ? `it exited (${child.signalCode ?? child.exitCode}): ${stderr.trim().slice(-500)}` : undefined));
      hops.set(name, { target: name, child, url, ipc: false });
    } catch (error) {
      skipped[name] = error instanceof Error ? error.message : String(error);
    }
  }
  for (const [name, why] of Object.entries(skipped)) console.log(`bench (stdio): the ${name} line is skipped: ${why}`);
  const targets = STDIO_TARGETS.filter((t) => hops.has(t));

  // One session per connection, opened before any run, and a correct answer from each target.
  for (const target of [...targets]) {
    const hop = hops.get(target)!;
    try {
      await load.sessions(hop.url, settings.connections, gateway.url);
      for (let i = 0; i < 2; i++) {
        const probe = await load.probe(hop.url, { body: HOP_BODIES.call, session: true });
        const message = answerMessage(probe.body);
        if (probe.status !== 200 || message?.id !== 1 || JSON.stringify(message.result) !== JSON.stringify(CALL_RESULT)) {
          throw new Error(`answered wrongly: ${probe.status} ${probe.body.slice(0, 300)}`);
        }
      }
    } catch (error) {
      if (target === 'bridge' || target === 'gateway') throw new Error(`${target}: ${error instanceof Error ? error.message : String(error)}`);
      skipped[target] = error instanceof Error ? error.message : String(error);
      console.log(`bench (stdio): the ${target} line is skipped: ${skipped[target]}`);
      targets.splice(targets.indexOf(target), 1);
    }
  }

  console.log('');
  console.log(
    `bench (stdio): ${settings.rounds} rounds × (${targets.join(', ')}) × ${settings.durationSeconds} s, small tools/call, ` +
      `${settings.warmupSeconds} s warm-up each, ${settings.connections} connections with a session (a stdio process) each; ${pinNote}; gateway log ${settings.gatewayLog}`,
  );

  const measure = async (target: StdioTarget, seconds: number): Promise<StdioRun> => {
    const hop = hops.get(target)!;
    const coreBefore = serverCpu === undefined ? undefined : cpuTimes(serverCpu);
    const loadBefore = loadCpu === undefined ? undefined : cpuTimes(loadCpu);
    const before = hop.ipc ? await sample(hop) : { cpu: processCpuMicros(hop.child.pid) };
    const summary: RunSummary = await load.run({ url: hop.url, scenario: target, durationSeconds: seconds, body: HOP_BODIES.call, sessions: true });
    const after = hop.ipc ? await sample(hop) : { cpu: processCpuMicros(hop.child.pid) };
    const coreAfter = serverCpu === undefined ? undefined : cpuTimes(serverCpu);
    const loadAfter = loadCpu === undefined ? undefined : cpuTimes(loadCpu);
    if (summary.non2xx > 0 || summary.errors > 0 || summary.timeouts > 0) {
      throw new Error(`${target} (stdio): ${summary.non2xx} non-2xx answers, ${summary.errors} errors, ${summary.timeouts} timeouts — the measurement is not valid`);
    }
    const busy = (a?: { busy: number; total: number }, b?: { busy: number; total: number }): number | undefined =>
      a && b && b.total > a.total ? round3((b.busy - a.busy) / (b.total - a.total)) : undefined;
    return {
      target,
      requestsPerSecond: summary.requestsPerSecond,
      p50Ms: summary.p50Ms,
      p99Ms: summary.p99Ms,
      totalRequests: summary.totalRequests,
      serverCpuBusy: busy(coreBefore, coreAfter),
      loadCpuBusy: busy(loadBefore, loadAfter),
      bridgeCpuUsPerRequest: before.cpu !== undefined && after.cpu !== undefined ? round1((after.cpu - before.cpu) / (summary.totalRequests || 1)) : undefined,
    };
  };

  for (const target of targets) await measure(target, settings.warmupSeconds);
  const rounds: StdioRun[][] = [];
  for (let round = 0; round < settings.rounds; round++) {
    const runs: StdioRun[] = [];
    // The bare bridge opens every round (each share is over it); the bridges in front follow a balanced order.
    for (const target of ['bridge' as const, ...williamsOrder(targets.filter((t) => t !== 'bridge'), round)]) {
      const r = await measure(target, settings.durationSeconds);
      runs.push(r);
      console.log(
        `  stdio round ${round + 1} ${target.padEnd(12)} ${r.requestsPerSecond.toFixed(0).padStart(7)} req/s  p99 ${String(r.p99Ms).padStart(4)} ms  ` +
          `server CPU busy ${fmtPct(r.serverCpuBusy)}  load CPU busy ${fmtPct(r.loadCpuBusy)}  bridge ${r.bridgeCpuUsPerRequest ?? '?'} µs/req`,
      );
    }
    rounds.push(runs);
  }
  for (const target of targets) await load.closeSessions(hops.get(target)!.url);
  await stopAll();

  const ratioOf = (a: StdioTarget, b: StdioTarget): { median: number; perRound: number[] } | undefined => ratioPerRound(rounds, targets, a, b);
  const label: Record<StdioTarget, string> = {
    bridge: 'bare per-session bridge',
    supergateway: 'supergateway',
    'mcp-proxy': 'mcp-proxy',
    gateway: 'mcp-oauth-guard gateway',
  };
  const pick = (own: StdioRun[], f: (r: StdioRun) => number | undefined): number | undefined => {
    const values = own.map(f).filter((v): v is number => v !== undefined);
    return values.length ? median(values) : undefined;
  };
  const rows = targets.map((target) => {
    const own = rounds.map((runs) => runs.find((r) => r.target === target)!);
    return {
      target,
      requestsPerSecond: Math.round(median(own.map((r) => r.requestsPerSecond))),
      p99Ms: median(own.map((r) => r.p99Ms)),
      shareOfBridge: ratioOf(target, 'bridge')!,
      serverCpuBusy: pick(own, (r) => r.serverCpuBusy),
      loadCpuBusy: pick(own, (r) => r.loadCpuBusy),
      bridgeCpuUsPerRequest: pick(own, (r) => r.bridgeCpuUsPerRequest),
    };
  });
  console.log('');
  console.log('stdio upstream, small tools/call, one session per connection:');
  console.log(`${'target'.padEnd(26)}${'req/s'.padStart(8)}${'p99 ms'.padStart(8)}${'share'.padStart(7)}${'srv CPU'.padStart(9)}${'load CPU'.padStart(10)}${'µs/req'.padStart(9)}   share per round`);
  for (const row of rows) {
    console.log(
      `${label[row.target].padEnd(26)}${String(row.requestsPerSecond).padStart(8)}${String(row.p99Ms).padStart(8)}${row.shareOfBridge.median.toFixed(3).padStart(7)}` +
        `${fmtPct(row.serverCpuBusy).padStart(9)}${fmtPct(row.loadCpuBusy).padStart(10)}${(row.bridgeCpuUsPerRequest?.toFixed(1) ?? '-').padStart(9)}` +
        `   ${row.shareOfBridge.perRound.map((x) => x.toFixed(2)).join(' ')}`,
    );
  }
  for (const name of STDIO_TARGETS) if (skipped[name] !== undefined) console.log(`${label[name]}: not measured (${skipped[name]})`);
  for (const name of ['supergateway', 'mcp-proxy'] as const) if (targets.includes(name)) console.log(`${label[name]}: ${NPM_BRIDGES[name].processes}`);
  const comparisons = {
    gatewayOverSupergateway: ratioOf('gateway', 'supergateway'),
    gatewayOverMcpProxy: ratioOf('gateway', 'mcp-proxy'),
    mcpProxyOverSupergateway: ratioOf('mcp-proxy', 'supergateway'),
  };
  const line = (name: string, r: { median: number; perRound: number[] } | undefined, target?: number): void => {
    if (r === undefined) return void console.log(`${name}: not measured`);
    const verdict = target === undefined ? '' : ` (target > ${target.toFixed(2)}: ${r.median > target ? 'MET' : 'BELOW'})`;
    console.log(`${name}: ${r.median.toFixed(3)}${verdict}   per round ${r.perRound.map((x) => x.toFixed(2)).join(' ')}`);
  };
  line('gateway / supergateway', comparisons.gatewayOverSupergateway, STDIO_TARGET_RATIO);
  line('gateway / mcp-proxy', comparisons.gatewayOverMcpProxy, STDIO_TARGET_RATIO);
  line('mcp-proxy / supergateway', comparisons.mcpProxyOverSupergateway);
  console.log('share: req/s over the bare bridge\'s req/s of the same round (median); µs/req: CPU time of the bridge process per request, its stdio children not included');
  return {
    settings: { ...settings, entryUrl: undefined, compiledScriptsDir: undefined, pinned },
    versions: npmVersions(),
    skipped,
    rows,
    ...comparisons,
    runs: rounds,
    elapsedSeconds: Math.round((Date.now() - began) / 1000),
  };
}

/** The installed versions of the npm bridges, for the report. */
function npmVersions(): Record<string, string | undefined> {
  const out: Record<string, string | undefined> = {};
  for (const name of Object.keys(NPM_BRIDGES)) {
    try {
      out[name] = (JSON.parse(readFileSync(join(ROOT, 'node_modules', name, 'package.json'), 'utf8')) as { version?: string }).version;
    } catch {
      out[name] = undefined;
    }
  }
  return out;
}
