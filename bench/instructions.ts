/**
 * Instructions per request, counted by valgrind: part of `npm run bench` when asked for
 * (`BENCH_ONLY=instructions`; see `run.ts`).
 *
 * Requests per second on a shared machine move with everything else it runs; instructions do not. Each hop
 * (the minimal Node proxy, the gateway, and an earlier build's gateway when `BENCH_BASELINE` names one) runs
 * under `valgrind --tool=cachegrind --cache-sim=no` in front of the benchmark's upstream, and is sent the same
 * warm-up and then `short` or `long` requests, one at a time, in two runs. The difference of the two runs'
 * totals over the difference of their request counts is what one warm request costs in user space, the start-up
 * and the warm-up cancelling out. Kernel work (socket reads and writes) is not counted: the req/s parts carry it.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { gatewayPolicy, HOP_BODIES, type HopReport, type HopWorkload } from './hop-scenario.js';
import { compiledHopScript, prepareHopScripts } from './hop.js';
import { ROOT, which } from './processes.js';
import { REQUEST_HEADERS, TOKEN_SCOPE } from './scenario.js';
import { startTestIssuer, type TestIssuer } from '../test/helpers/fake-issuer.js';

/** Settings of {@link runInstructionsBench}. */
export interface InstructionsSettings {
  /** File URL of the library entry point the gateway is loaded from. */
  entryUrl: string;
  /** File URL of an earlier build's entry point, measured as `gateway-baseline`. */
  baselineEntryUrl?: string;
  /** Where the hop scripts are transpiled to (they run as plain JavaScript, as in the req/s parts). */
  compiledScriptsDir: string;
  workloads: readonly HopWorkload[];
  /** Requests sent before either count starts to differ (JIT warm-up). */
  warmup: number;
  /** Requests of the short and the long run, after the warm-up. */
  short: number;
  long: number;
}

type Target = 'node-proxy' | 'gateway' | 'gateway-baseline';

/** One row of the report: user-space instructions per warm request. */
export interface InstructionsRow {
  workload: HopWorkload;
  target: Target;
  perRequest: number;
}

/** Runs the part and prints its table; `undefined` (saying why) when valgrind is missing. */
export async function runInstructionsBench(settings: InstructionsSettings): Promise<InstructionsRow[] | undefined> {
  const valgrind = which('valgrind');
  if (valgrind === undefined) {
    console.log('bench (instructions): skipped, valgrind is not installed (Debian package valgrind)');
    return undefined;
  }
  prepareHopScripts(settings.compiledScriptsDir);
  const work = mkdtempSync(join(os.tmpdir(), 'bench-instructions-'));
  const policyFile = join(work, 'policy.json');
  writeFileSync(policyFile, JSON.stringify(gatewayPolicy()));
  const issuer = await startTestIssuer();
  const upstream = startHop(undefined, 'upstream.ts', []);
  const rows: InstructionsRow[] = [];
  try {
    const upstreamUrl = await readyUrl(upstream);
    const targets: Array<[Target, string[]]> = [
      ['node-proxy', ['node-proxy.ts', upstreamUrl]],
      ['gateway', ['gateway.ts', settings.entryUrl, upstreamUrl, issuer.issuer, policyFile, 'off']],
    ];
    if (settings.baselineEntryUrl !== undefined) targets.push(['gateway-baseline', ['gateway.ts', settings.baselineEntryUrl, upstreamUrl, issuer.issuer, policyFile, 'off']]);
    console.log(
      `\nbench (instructions): valgrind cachegrind, ${settings.warmup} warm-up requests, then ${settings.short} and ${settings.long} ` +
        'one at a time; instructions per request = difference of totals / difference of requests',
    );
    for (const workload of settings.workloads) {
      for (const [target, [script, ...args]] of targets) {
        const run = (requests: number): Promise<number> => countRun({ valgrind, work, issuer, workload, script: script!, args, warmup: settings.warmup, requests });
        const short = await run(settings.short);
        const long = await run(settings.long);
        const perRequest = Math.round((long - short) / (settings.long - settings.short));
        rows.push({ workload, target, perRequest });
        console.log(`  ${workload.padEnd(10)} ${target.padEnd(17)} ${perRequest.toLocaleString('en-US').padStart(12)} instructions/request`);
      }
      printRatios(rows.filter((r) => r.workload === workload));
    }
  } finally {
    upstream.kill();
    await issuer.close();
    rmSync(work, { recursive: true, force: true });
  }
  return rows;
}

function printRatios(rows: readonly InstructionsRow[]): void {
  const of = (target: Target): number | undefined => rows.find((r) => r.target === target)?.perRequest;
  const gateway = of('gateway');
  const proxy = of('node-proxy');
  const baseline = of('gateway-baseline');
  if (gateway === undefined) return;
  if (proxy !== undefined) console.log(`  ${rows[0]!.workload}: gateway / minimal Node proxy ${(gateway / proxy).toFixed(2)}× the instructions`);
  if (baseline !== undefined) console.log(`  ${rows[0]!.workload}: gateway / baseline build ${(gateway / baseline).toFixed(2)}× the instructions`);
}

interface CountRun {
  valgrind: string;
  work: string;
  issuer: TestIssuer;
  workload: HopWorkload;
  script: string;
  args: string[];
  warmup: number;
  requests: number;
}

/** One hop under valgrind: its total user-space instructions after `warmup + requests` requests and its exit. */
async function countRun(run: CountRun): Promise<number> {
  const out = join(run.work, `cachegrind-${run.workload}-${run.requests}-${Date.now()}`);
  const hop = startHop({ valgrind: run.valgrind, out }, run.script, run.args);
  const url = await readyUrl(hop);
  const headers: Record<string, string> = { ...REQUEST_HEADERS };
  if (run.script === 'gateway.ts') headers.authorization = `Bearer ${await run.issuer.sign({ aud: url, sub: 'bench-user', client_id: 'bench-client', scope: TOKEN_SCOPE })}`;
  for (let i = 0; i < run.warmup + run.requests; i++) {
    const answer = await fetch(url, { method: 'POST', headers, body: HOP_BODIES[run.workload], signal: AbortSignal.timeout(60_000) });
    await answer.arrayBuffer();
    if (answer.status !== 200) throw new Error(`${run.script}: answer ${answer.status} to ${run.workload}`);
  }
  const exited = new Promise((resolve) => hop.once('exit', resolve));
  hop.send({ type: 'stop' });
  await exited;
  const summary = /^summary: (\d+)/m.exec(readFileSync(out, 'utf8'));
  if (summary === null) throw new Error(`no cachegrind summary in ${out}`);
  return Number(summary[1]);
}

/** Starts a hop script (transpiled) with an IPC channel, under valgrind when asked. */
function startHop(under: { valgrind: string; out: string } | undefined, script: string, args: string[]): ChildProcess {
  const file = compiledHopScript(script)!;
  const stdio: ['ignore', 'ignore', 'inherit', 'ipc'] = ['ignore', 'ignore', 'inherit', 'ipc'];
  if (under === undefined) return fork(file, args, { cwd: ROOT, stdio });
  // As with taskset in the req/s parts: valgrind execs node itself, keeping the environment and the IPC descriptor.
  return fork(file, args, {
    cwd: ROOT,
    execPath: under.valgrind,
    execArgv: ['--quiet', '--tool=cachegrind', '--cache-sim=no', `--cachegrind-out-file=${under.out}`, process.execPath],
    stdio: ['ignore', 'ignore', 'ignore', 'ipc'],
  });
}

function readyUrl(child: ChildProcess): Promise<string> {
  return new Promise((resolve, reject) => {
    child.once('message', (report: HopReport) => (report.type === 'ready' ? resolve(report.url) : reject(new Error(report.type === 'error' ? report.message : 'unexpected report'))));
    child.once('exit', (code) => reject(new Error(`exited with ${code} before it was ready`)));
  });
}
