/**
 * Conditions part (`BENCH_ONLY=conditions`): what policy conditions cost a request through the guard. Three guarded
 * servers in their own processes (`conditions-server.ts`), whose 200 tool rules (and `*`) require scopes only
 * (`scopes`), also share one CEL condition over the token's group and tenant claims (`conditions`: its outcome is
 * computed once per token and reused), or each have a condition of their own with `*` reading `mcp.name`
 * (`distinct`: 200 outcomes per token, and `*` evaluated per item and per call), are loaded in the same rounds, in a
 * balanced order, with one reused token that carries those claims (every condition holds for it):
 * - `call`: a small `tools/call` of a tool with a rule of its own;
 * - `list`: a `tools/list` of 1,000 tools, each item decided by its rule (200 named, the rest by `*`).
 * Reported: each condition variant over scopes-only, req/s median of the per-round ratios, beside the targets.
 */
import type { ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { LoadProcess } from './load-client.js';
import { BENCH_CLAIMS, CONDITION_LIST_TOOLS, CONDITION_VARIANTS, type ConditionVariant } from './conditions-server.js';
import { pinPlacement } from './hop.js';
import { serverCpuUsage, startScript, stopAll, waitFor } from './processes.js';
import { warmUpEach } from './warm-up.js';
import { williamsOrder } from './round-order.js';
import type { RunSummary, ServerReport } from './scenario.js';

/** Settings of {@link runConditionsBench}. */
export interface ConditionsSettings {
  rounds: number;
  durationSeconds: number;
  warmupSeconds: number;
  connections: number;
  /** The compiled library's entry point; default the TypeScript source. */
  entryUrl?: string;
  /** Where each server writes V8 CPU profiles when it stops (in `conditions-<variant>/`, one per thread); none by default. */
  cpuProfileDir?: string;
}

/** The targets of the issue: conditions over scopes-only. */
export const CONDITIONS_TARGETS = { call: 0.95, list: 0.9 } as const;
type Workload = keyof typeof CONDITIONS_TARGETS;
type Variant = ConditionVariant;
/** The variants compared with scopes-only. */
const MEASURED = ['conditions', 'distinct'] as const;

const BODIES: Record<Workload, string> = {
  call: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'tool_150', arguments: {} } }),
  list: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} }),
};

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

async function startServer(variant: Variant, issuer: string, settings: ConditionsSettings, cpu: number | undefined): Promise<{ child: ChildProcess; url: string }> {
  const { entryUrl, cpuProfileDir } = settings;
  // A folder per variant: each thread of the process (tsx's loader runs in one of its own) writes a profile there.
  const execArgv = cpuProfileDir === undefined ? [] : ['--cpu-prof', `--cpu-prof-dir=${join(cpuProfileDir, `conditions-${variant}`)}`];
  const child = startScript('conditions-server.ts', [variant, issuer, ...(entryUrl === undefined ? [] : [entryUrl])], { execArgv, cpu });
  const url = await waitFor<ServerReport, string>(child, `conditions server (${variant})`, (m) => (m.type === 'ready' ? m.url : undefined));
  return { child, url };
}

/** The server's CPU time so far (user and system, every thread), in µs. */
async function cpuMicros(child: ChildProcess): Promise<number> {
  const usage = await serverCpuUsage(child);
  return usage.user + usage.system;
}

/** Checks that both servers serve the workload to the token alike before anything is measured. */
async function checkAnswers(load: LoadProcess, urls: Record<Variant, string>): Promise<void> {
  for (const variant of CONDITION_VARIANTS) {
    const list = await load.probe(urls[variant], { body: BODIES.list, tokenResource: urls[variant] });
    const tools = (JSON.parse(list.body) as { result?: { tools?: unknown[] } }).result?.tools?.length;
    if (list.status !== 200 || tools !== CONDITION_LIST_TOOLS) throw new Error(`${variant}: the list answered ${list.status} with ${String(tools)} tools`);
    const call = await load.probe(urls[variant], { body: BODIES.call, tokenResource: urls[variant] });
    if (call.status !== 200 || !call.body.includes('"result"')) throw new Error(`${variant}: the call answered ${call.status}: ${call.body.slice(0, 200)}`);
  }
}

/** Runs the part; returns the figures for `latest.json` and prints them. */
export async function runConditionsBench(settings: ConditionsSettings): Promise<Record<string, unknown>> {
  // As the gateway parts: the load generator on one CPU, the servers (one loaded at a time) on the other.
  const { loadCpu, serverCpu, note } = pinPlacement();
  console.log(`conditions: ${note}`);
  const { load, issuer } = await LoadProcess.ready(startScript('load.ts', [], { cpu: loadCpu }), settings.connections);
  const urls = {} as Record<Variant, string>;
  const children = {} as Record<Variant, ChildProcess>;
  for (const variant of CONDITION_VARIANTS) ({ url: urls[variant], child: children[variant] } = await startServer(variant, issuer, settings, serverCpu));
  // A filtered list is reused for the same caller under any policy that allows it: each is measured as served.
  try {
    for (const url of Object.values(urls)) await load.token(url, BENCH_CLAIMS);
    await checkAnswers(load, urls);
    const report: Record<string, unknown> = {};
    for (const workload of ['call', 'list'] as const) {
      const measure = (variant: Variant, durationSeconds: number): Promise<RunSummary> =>
        load.run({ url: urls[variant], scenario: 'cached', durationSeconds, body: BODIES[workload], tokenResource: urls[variant] });
      await warmUpEach(CONDITION_VARIANTS, measure, settings.warmupSeconds, `conditions ${workload}`);
      const ratios: Record<(typeof MEASURED)[number], number[]> = { conditions: [], distinct: [] };
      // The server's own CPU per request, scopes-only over the variant: what the conditions cost the server whatever
      // bounds the rate (a 1,000-tool list's answer is parsed by the load process too).
      const cpuRatios: Record<(typeof MEASURED)[number], number[]> = { conditions: [], distinct: [] };
      const rates: Record<Variant, number[]> = { scopes: [], conditions: [], distinct: [] };
      const cpuPerRequest: Record<Variant, number[]> = { scopes: [], conditions: [], distinct: [] };
      for (let round = 0; round < settings.rounds; round++) {
        const own: Partial<Record<Variant, number>> = {};
        const ownCpu: Partial<Record<Variant, number>> = {};
        for (const variant of williamsOrder(CONDITION_VARIANTS, round)) {
          const before = await cpuMicros(children[variant]);
          const summary = await measure(variant, settings.durationSeconds);
          const cpu = (await cpuMicros(children[variant])) - before;
          if (summary.errors > 0 || summary.non2xx > 0) throw new Error(`${workload} ${variant}: ${summary.errors} errors, ${summary.non2xx} non-2xx answers`);
          own[variant] = summary.requestsPerSecond;
          rates[variant].push(summary.requestsPerSecond);
          ownCpu[variant] = cpu / Math.max(1, summary.totalRequests);
          cpuPerRequest[variant].push(ownCpu[variant]!);
        }
        for (const variant of MEASURED) {
          ratios[variant].push(own[variant]! / own.scopes!);
          cpuRatios[variant].push(ownCpu.scopes! / ownCpu[variant]!);
        }
      }
      const rounded = (r: number): number => Math.round(r * 1000) / 1000;
      const ratio = rounded(median(ratios.conditions));
      const distinct = rounded(median(ratios.distinct));
      report[workload] = {
        conditionsOverScopes: ratio,
        distinctOverScopes: distinct,
        target: CONDITIONS_TARGETS[workload],
        perRound: ratios.conditions.map(rounded),
        distinctPerRound: ratios.distinct.map(rounded),
        scopesRequestsPerSecond: Math.round(median(rates.scopes)),
        conditionsRequestsPerSecond: Math.round(median(rates.conditions)),
        distinctRequestsPerSecond: Math.round(median(rates.distinct)),
        cpuMicrosPerRequest: Object.fromEntries(CONDITION_VARIANTS.map((variant) => [variant, Math.round(median(cpuPerRequest[variant]))])),
        cpuConditionsOverScopes: rounded(median(cpuRatios.conditions)),
        cpuDistinctOverScopes: rounded(median(cpuRatios.distinct)),
      };
      const what = workload === 'call' ? 'a tools/call under 200 rules' : `a tools/list of ${CONDITION_LIST_TOOLS} tools`;
      const target = CONDITIONS_TARGETS[workload];
      const verdict = (r: number): string => `ratio ${r.toFixed(3)} (target >= ${target})${r >= target ? '' : '  BELOW TARGET'}`;
      console.log(`conditions: ${what}: ${Math.round(median(rates.scopes))} req/s scopes-only`);
      console.log(`  one shared condition: ${Math.round(median(rates.conditions))} req/s, ${verdict(ratio)}`);
      console.log(`  200 distinct conditions, * reading mcp.name: ${Math.round(median(rates.distinct))} req/s, ${verdict(distinct)}`);
      const micros = (variant: Variant): number => Math.round(median(cpuPerRequest[variant]));
      console.log(
        `  server CPU per request: ${micros('scopes')} µs scopes-only, ${micros('conditions')} µs shared (scopes ÷ shared ${rounded(median(cpuRatios.conditions)).toFixed(3)}), ` +
          `${micros('distinct')} µs distinct (scopes ÷ distinct ${rounded(median(cpuRatios.distinct)).toFixed(3)})`,
      );
    }
    return report;
  } finally {
    await stopAll();
  }
}
