/**
 * Several servers behind one endpoint, measured against a single-server gateway in front of the same upstream
 * processes: part of `npm run bench` (`BENCH_ONLY=servers`; see `run.ts`).
 *
 * Three upstreams (`upstream.ts`, each listing 300 tools of its own: `tool_0000`–`tool_0299`, `tool_0300`–…, …)
 * behind one gateway started from a configuration file naming three servers (`alpha`, `beta`, `gamma`), each
 * with its own scopes-only policy; beside it, single-server gateways started as `gateway.ts` starts one, with the
 * same rules in one policy. Workloads:
 * - `call`: a small `tools/call` of `alpha__tool_0000` through the three-server endpoint, and of `tool_0000`
 *   through a single-server gateway in front of the same `alpha` upstream process;
 * - `list`: the merged `tools/list` of 3 × 300 tools, filtered (every odd-numbered tool needs a scope the token
 *   lacks, a rule that each server's policy holds for its own tools), against a single-server gateway in front of a
 *   fourth upstream listing the same 900 tools under one policy holding every rule;
 * - `list-public`: the same lists asked in the stateless revision (2026-07-28), whose upstreams mark their list
 *   `cacheScope: "public"` with a `ttlMs`, as the revision advises for lists identical for every user: the
 *   three-server endpoint may then serve each server's page again until it is stale, while the single-server
 *   gateway passes every request on, as a proxy does (see `reused-pages.ts`);
 * - `slow-list`: one server answers its list 200 ms late (a fifth upstream, in place of `alpha`), the others at
 *   once; a new client session's first merged list (nothing kept per session, and no merge to reuse) is timed,
 *   beside that slow upstream's own first list.
 *
 * Pinned as the gateway part is (servers on one CPU, the load generator on the other); each round opens with the
 * upstream alone and then runs the two gateways in a balanced order (`round-order.ts`). Ratios are taken within
 * each round; medians and the spread of the rounds are reported.
 */
import { writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import type { PolicyDefinition } from '../src/index.js';
import { CALL_RESULT, HIDDEN_SCOPE, toolName } from './hop-scenario.js';
import { fmtPct, median, round1, sample, spread, startHop, type BenchPartSettings, type Hop } from './hop.js';
import { LoadProcess } from './load-client.js';
import { startScript, stopAll } from './processes.js';
import { assertAllAnswered, startBenchPart, cpuBusySince, cpuRatio, hopFigures, pairedLine, pairSeconds, printRateRows, rateRatio, rateRow, runBalancedRounds, runPairedBlocks, type PairedRatio, type RateCpus, type RateRow, type RateRun } from './rate-rounds.js';
import { williamsOrder } from './round-order.js';

/** The workloads of the servers part (`BENCH_SERVERS_WORKLOADS`). */
export const SERVERS_WORKLOADS = ['call', 'list', 'list-public', 'slow-list'] as const;
export type ServersWorkload = (typeof SERVERS_WORKLOADS)[number];

/** Targets, printed next to the figures (information, not assertions). */
export const SERVERS_TARGET_RATIOS = {
  /** Three-server endpoint ÷ single-server gateway, small `tools/call`, req/s. */
  callOverSingle: 0.95,
  /** Three-server merged list ÷ single-server list of the same 900 tools, req/s. */
  listOverSingle: 0.8,
  /** First merged list ÷ the slow server's delay, in time: at most. */
  slowListOverDelay: 1.2,
} as const;

/** The servers of the configuration file, in its order. */
export const SERVER_NAMES = ['alpha', 'beta', 'gamma'] as const;
/** Tools each upstream of the set lists. */
export const TOOLS_PER_SERVER = 300;
/** How late the slow server answers its list, in milliseconds. */
export const SLOW_LIST_DELAY_MS = 200;
/** New sessions timed per round of `slow-list`, for each of its two targets. */
const SLOW_SAMPLES_PER_ROUND = 3;

/** Settings of {@link runServersBench}. */
export interface ServersSettings extends BenchPartSettings {
  workloads: readonly ServersWorkload[];
}

/** What each round measures: the upstream alone, a single-server gateway, the three-server endpoint. */
type ServersTarget = 'upstream' | 'gateway' | 'servers';

/** One load run of one target; its upstream CPU is that of every upstream the target sends to, together. */
type ServersRun = RateRun<ServersTarget>;

/** A scopes-only policy's tool rules: every tool readable with `notes:read`, odd-numbered ones in `[first, first + count)` needing {@link HIDDEN_SCOPE}. */
function toolRules(first: number, count: number): Record<string, string[]> {
  const tools: Record<string, string[]> = { '*': ['notes:read'] };
  for (let i = first; i < first + count; i++) if (i % 2 === 1) tools[toolName(i)] = [HIDDEN_SCOPE];
  return tools;
}

const HIERARCHY = { 'notes:admin': ['notes:write'], 'notes:write': ['notes:read'] };

/** The single-server gateways' policy: the base scope and the rules of all 900 tools. */
export function singleServerPolicy(): PolicyDefinition {
  return { requiredScopes: ['mcp'], tools: toolRules(0, TOOLS_PER_SERVER * SERVER_NAMES.length), scopeHierarchy: HIERARCHY };
}

/** The three-server endpoint's own policy: the base scope; each server's policy holds the rules of its tools. */
export function endpointPolicy(): PolicyDefinition {
  return { requiredScopes: ['mcp'] };
}

/** The configuration file of a three-server endpoint in front of `urls` (in {@link SERVER_NAMES} order). */
export function serversConfigFile(urls: readonly string[]): object {
  const servers: Record<string, object> = {};
  SERVER_NAMES.forEach((name, i) => {
    servers[name] = { url: urls[i], policy: { tools: toolRules(i * TOOLS_PER_SERVER, TOOLS_PER_SERVER), scopeHierarchy: HIERARCHY } };
  });
  return { servers };
}

const callBody = (tool: string): string => JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: tool, arguments: { query: 'notes' } } });
const LIST_BODY = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} });
/** `list-public`: the list request of the stateless revision, with the headers it requires. */
const STATELESS_LIST_BODY = JSON.stringify({
  jsonrpc: '2.0',
  id: 1,
  method: 'tools/list',
  params: { _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} } },
});
const STATELESS_LIST_HEADERS = { 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/list' };
/** Tools the token sees of the 900: the even-numbered ones. */
const VISIBLE_TOOLS = (TOOLS_PER_SERVER * SERVER_NAMES.length) / 2;

/** The processes of the part, started for the workloads asked for. */
interface ServersProcesses {
  load: LoadProcess;
  /** The workloads asked for. */
  workloads: readonly ServersWorkload[];
  /** The set's three upstreams, in {@link SERVER_NAMES} order. */
  members: Hop<string>[];
  /** The upstream listing all 900 tools (`list`). */
  whole?: Hop<string>;
  /** The slow upstream, in place of the first member (`slow-list`). */
  slow?: Hop<string>;
  /** The three-server endpoint. */
  servers: Hop<string>;
  /** The same with the slow upstream first (`slow-list`). */
  slowServers?: Hop<string>;
  /** Single-server gateways in front of the first member (`call`) and of the whole list (`list`). */
  singleCall?: Hop<string>;
  singleList?: Hop<string>;
}

async function startProcesses(settings: ServersSettings, dir: string, serverCpu: number | undefined, loadCpu: number | undefined): Promise<ServersProcesses> {
  const wants = (w: ServersWorkload): boolean => settings.workloads.includes(w);
  const loadChild = startScript('load.ts', [], { cpu: loadCpu });
  const { load, issuer } = await LoadProcess.ready(loadChild, settings.connections);
  const upstream = (name: string, args: string[]): Promise<Hop<string>> => startHop(name, 'upstream.ts', args, serverCpu);
  const members = await Promise.all(SERVER_NAMES.map((name, i) => upstream(`upstream ${name}`, [`tools=${TOOLS_PER_SERVER}`, `first=${i * TOOLS_PER_SERVER}`])));
  const whole = wants('list') || wants('list-public') ? await upstream('upstream of 900', [`tools=${TOOLS_PER_SERVER * SERVER_NAMES.length}`]) : undefined;
  const slow = wants('slow-list') ? await upstream('slow upstream', [`tools=${TOOLS_PER_SERVER}`, `list-delay-ms=${SLOW_LIST_DELAY_MS}`]) : undefined;
  const write = (name: string, content: object): string => {
    const file = join(dir, name);
    writeFileSync(file, JSON.stringify(content));
    return file;
  };
  const singlePolicyFile = write('single-policy.json', singleServerPolicy());
  const endpointPolicyFile = write('endpoint-policy.json', endpointPolicy());
  const profiled = [...(settings.gatewayNodeFlags ?? []), ...(settings.cpuProfileDir ? ['--cpu-prof', `--cpu-prof-dir=${settings.cpuProfileDir}`] : [])];
  // One after the other, as each start-up (issuer discovery, the servers' listing) runs on the servers' CPU.
  const gateway = (name: string, upstreamArg: string, policyFile: string, execArgv: string[]): Promise<Hop<string>> =>
    startHop(name, 'gateway.ts', [settings.entryUrl, upstreamArg, issuer, policyFile, settings.gatewayLog], serverCpu, { execArgv, stdout: 'ignore' });
  const servers = await gateway('three-server gateway', `config:${write('servers.json', serversConfigFile(members.map((m) => m.url)))}`, endpointPolicyFile, profiled);
  const singleCall = wants('call') ? await gateway('single-server gateway (call)', members[0]!.url, singlePolicyFile, profiled) : undefined;
  const singleList = whole ? await gateway('single-server gateway (list)', whole.url, singlePolicyFile, profiled) : undefined;
  const slowConfig = slow ? write('slow-servers.json', serversConfigFile([slow.url, ...members.slice(1).map((m) => m.url)])) : undefined;
  const slowServers = slowConfig ? await gateway('three-server gateway, one slow', `config:${slowConfig}`, endpointPolicyFile, [...(settings.gatewayNodeFlags ?? [])]) : undefined;
  for (const hop of [servers, singleCall, singleList, slowServers]) if (hop) await load.token(hop.url);
  return { load, workloads: settings.workloads, members, servers, ...(whole ? { whole } : {}), ...(slow ? { slow } : {}), ...(slowServers ? { slowServers } : {}), ...(singleCall ? { singleCall } : {}), ...(singleList ? { singleList } : {}) };
}

/** Fails unless `body` is the answer a target must give: the call's result, or the list with its expected tool names. */
function checkAnswer(what: string, probe: { status: number; body: string }, expect: { result?: unknown; tools?: readonly string[] }): void {
  const fail = (why: string): never => {
    throw new Error(`${what} answered wrongly: ${why}: ${probe.status} ${probe.body.slice(0, 300)}`);
  };
  if (probe.status !== 200) fail('status');
  let message: { id?: unknown; result?: { tools?: Array<{ name?: unknown }>; _meta?: unknown } };
  try {
    message = JSON.parse(probe.body) as typeof message;
  } catch {
    return fail('not JSON');
  }
  if (message.id !== 1) fail('id');
  if (expect.result !== undefined && JSON.stringify(message.result) !== JSON.stringify(expect.result)) fail('result');
  if (expect.tools !== undefined) {
    const names = message.result?.tools?.map((t) => t.name) ?? [];
    if (names.length !== expect.tools.length || names.some((name, i) => name !== expect.tools![i])) fail(`${names.length} tools, expected ${expect.tools.length} (${expect.tools[0]} …)`);
    if (message.result?._meta !== undefined) fail('a server was left out');
  }
}

/** The tools the token sees: even-numbered, `<server>__`-prefixed behind the three-server endpoint. */
function visibleTools(prefixed: boolean, count = VISIBLE_TOOLS * 2): string[] {
  const names: string[] = [];
  for (let i = 0; i < count; i += 2) names.push(prefixed ? `${SERVER_NAMES[Math.floor(i / TOOLS_PER_SERVER)]}__${toolName(i)}` : toolName(i));
  return names;
}

/** One request-rate workload: its targets, each with the body it is sent and the upstreams behind it. */
interface RateWorkload {
  name: 'call' | 'list' | 'list-public';
  /** `tokenResource`: whose reused token is sent (the upstream alone ignores it). */
  targets: Array<{ target: ServersTarget; hop: Hop<string>; body: string; headers?: Record<string, string>; behind: Hop<string>[]; tokenResource: string }>;
}

function rateWorkloads(p: ServersProcesses): RateWorkload[] {
  const workloads: RateWorkload[] = [];
  if (p.singleCall) {
    workloads.push({
      name: 'call',
      targets: [
        { target: 'upstream', hop: p.members[0]!, body: callBody(toolName(0)), behind: [p.members[0]!], tokenResource: p.singleCall.url },
        { target: 'gateway', hop: p.singleCall, body: callBody(toolName(0)), behind: [p.members[0]!], tokenResource: p.singleCall.url },
        { target: 'servers', hop: p.servers, body: callBody(`${SERVER_NAMES[0]}__${toolName(0)}`), behind: p.members, tokenResource: p.servers.url },
      ],
    });
  }
  const lists: Array<['list' | 'list-public', string, Record<string, string> | undefined]> = [
    ['list', LIST_BODY, undefined],
    ['list-public', STATELESS_LIST_BODY, STATELESS_LIST_HEADERS],
  ];
  for (const [name, body, headers] of lists) {
    if (!p.singleList || !p.whole || !p.workloads.includes(name)) continue;
    const h = headers ? { headers } : {};
    workloads.push({
      name,
      targets: [
        { target: 'upstream', hop: p.whole, body, ...h, behind: [p.whole], tokenResource: p.singleList.url },
        { target: 'gateway', hop: p.singleList, body, ...h, behind: [p.whole], tokenResource: p.singleList.url },
        { target: 'servers', hop: p.servers, body, ...h, behind: p.members, tokenResource: p.servers.url },
      ],
    });
  }
  return workloads;
}

async function checkRateWorkload(load: LoadProcess, workload: RateWorkload): Promise<void> {
  for (const { target, hop, body, headers, tokenResource } of workload.targets) {
    const expect =
      workload.name === 'call'
        ? { result: CALL_RESULT }
        : { tools: target === 'upstream' ? Array.from({ length: VISIBLE_TOOLS * 2 }, (_, i) => toolName(i)) : visibleTools(target === 'servers') };
    // Twice: the second answer (perhaps a reused merge or filter) must be the first.
    const probe = { body, tokenResource, ...(headers ? { headers } : {}) };
    const [first, second] = [await load.probe(hop.url, probe), await load.probe(hop.url, probe)];
    checkAnswer(`${hop.target} (${workload.name})`, first, expect);
    if (second.body !== first.body) throw new Error(`${hop.target} (${workload.name}): a second answer differs from the first`);
  }
}

/** One load run of `t`, with the CPU of the gateway and of every upstream behind it. */
async function measure(load: LoadProcess, t: RateWorkload['targets'][number], seconds: number, cpus: RateCpus): Promise<ServersRun> {
  const inFront = t.target === 'upstream' ? undefined : t.hop;
  const sampleAll = (): Promise<[Array<{ cpu?: number }>, { cpu?: number; active?: number; idle?: number } | undefined]> => Promise.all([Promise.all(t.behind.map(sample)), inFront ? sample(inFront) : undefined]);
  const busySince = cpuBusySince(cpus);
  const [upBefore, hopBefore] = await sampleAll();
  const summary = await load.run({ url: t.hop.url, scenario: 'gateway', durationSeconds: seconds, body: t.body, ...(t.headers ? { headers: t.headers } : {}), tokenResource: t.tokenResource });
  const [upAfter, hopAfter] = await sampleAll();
  const cpuBusy = busySince();
  assertAllAnswered(t.hop.target, summary);
  const n = summary.totalRequests || 1;
  const upstreamCpu = upBefore.every((s, i) => s.cpu !== undefined && upAfter[i]!.cpu !== undefined) ? upAfter.reduce((sum, s, i) => sum + s.cpu! - upBefore[i]!.cpu!, 0) : undefined;
  return {
    target: t.target,
    requestsPerSecond: summary.requestsPerSecond,
    p99Ms: summary.p99Ms,
    totalRequests: summary.totalRequests,
    ...cpuBusy,
    ...hopFigures(hopBefore, hopAfter, n),
    ...(upstreamCpu !== undefined ? { upstreamCpuUsPerRequest: round1(upstreamCpu / n) } : {}),
  };
}

/** Runs one request-rate workload's rounds and prints its table; returns what goes to `latest.json`. */
async function runRateWorkload(load: LoadProcess, workload: RateWorkload, settings: ServersSettings, cpus: RateCpus): Promise<Record<string, unknown>> {
  await checkRateWorkload(load, workload);
  const byTarget = new Map(workload.targets.map((t) => [t.target, t]));
  const [upstream, ...inFront] = workload.targets.map((t) => t.target);
  const rounds = await runBalancedRounds({
    workload: workload.name,
    rounds: settings.rounds,
    durationSeconds: settings.durationSeconds,
    warmupSeconds: settings.warmupSeconds,
    upstream: upstream!,
    inFront,
    measure: (target, seconds) => measure(load, byTarget.get(target)!, seconds, cpus),
    upstreamLabel: 'upstreams',
  });
  const rows = workload.targets.map(({ target, hop }) => ({ target, label: hop.target, ...rateRow(rounds, target, 'upstream') }));
  const overSingle = rateRatio(rounds, 'servers', 'gateway');
  // The gateway's own CPU per request, single over three-server; here three upstreams share the servers' CPU with it.
  const cpuOverSingle = cpuRatio(rounds, 'gateway', 'servers');
  const target = workload.name === 'call' ? SERVERS_TARGET_RATIOS.callOverSingle : SERVERS_TARGET_RATIOS.listOverSingle;
  // The call's target is within a few per cent of its base: judged in back-to-back blocks (see runPairedBlocks).
  const paired =
    workload.name === 'call' && settings.pairBlocks > 0
      ? await runPairedBlocks<ServersTarget, ServersRun>({ workload: workload.name, variant: 'servers', base: 'gateway', blocks: settings.pairBlocks, seconds: pairSeconds(settings), measure: (t, seconds) => measure(load, byTarget.get(t)!, seconds, cpus) })
      : undefined;
  printRateTable(workload.name, rows, overSingle, target, cpuOverSingle, paired);
  return { rows, serversOverSingle: overSingle, cpuServersOverSingle: cpuOverSingle, ...(paired ? { serversOverSinglePaired: paired } : {}), target, runs: rounds };
}

function printRateTable(
  name: RateWorkload['name'],
  rows: ReadonlyArray<RateRow & { label: string }>,
  overSingle: ReturnType<typeof spread>,
  target: number,
  cpuOverSingle: ReturnType<typeof spread> | undefined,
  paired: PairedRatio | undefined,
): void {
  console.log('');
  const listed = `tools/list of ${SERVER_NAMES.length} × ${TOOLS_PER_SERVER} tools, filtered to ${VISIBLE_TOOLS}`;
  console.log(name === 'call' ? 'several servers, small tools/call:' : name === 'list' ? `several servers, ${listed}:` : `several servers, ${listed}, 2026-07-28, the servers' pages public for 60 s:`);
  printRateRows(rows);
  // Judged on the back-to-back blocks when there are some, else on the rounds.
  const verdict = paired ? '' : ` (target ≥ ${target.toFixed(2)}: ${overSingle.median >= target ? 'MET' : 'BELOW'})`;
  console.log(
    `three-server endpoint / single-server gateway${paired ? ' in the rounds' : ''}: ${overSingle.median.toFixed(3)}${verdict}, ` +
      `rounds ${overSingle.min.toFixed(2)}–${overSingle.max.toFixed(2)}: ${overSingle.perRound.map((x) => x.toFixed(2)).join(' ')}`,
  );
  if (cpuOverSingle) {
    console.log(
      `gateway CPU per request, single-server ÷ three-server (the req/s ratio with the upstreams off the gateway's CPU): ${cpuOverSingle.median.toFixed(3)}, ` +
        `rounds ${cpuOverSingle.min.toFixed(2)}–${cpuOverSingle.max.toFixed(2)}`,
    );
  }
  if (paired) console.log(pairedLine('three-server endpoint / single-server gateway', paired, target));
}

/**
 * `slow-list`: in each round, {@link SLOW_SAMPLES_PER_ROUND} new sessions' first list from the slow upstream alone
 * and from the endpoint with it as one of three servers, in alternating order; the median of each round's.
 */
async function runSlowList(p: ServersProcesses, settings: ServersSettings): Promise<Record<string, unknown>> {
  const slow = p.slow!;
  const endpoint = p.slowServers!;
  const targets = [
    { name: 'slow upstream alone', url: slow.url, tokenResource: endpoint.url, tools: TOOLS_PER_SERVER },
    { name: 'three-server endpoint', url: endpoint.url, tokenResource: endpoint.url, tools: VISIBLE_TOOLS },
  ];
  const time = async (t: (typeof targets)[number]): Promise<number> => {
    const answer = await p.load.firstRequest(t.url, t.tokenResource, LIST_BODY);
    const tools = (JSON.parse(answer.body) as { result?: { tools?: unknown[]; _meta?: unknown } }).result;
    if (answer.status !== 200 || tools?.tools?.length !== t.tools || tools._meta !== undefined) throw new Error(`${t.name} (slow-list) answered wrongly: ${answer.status} ${answer.body.slice(0, 300)}`);
    return answer.ms;
  };
  // Warm-up: start-up paths compiled, connections open.
  for (let i = 0; i < SLOW_SAMPLES_PER_ROUND; i++) for (const t of targets) await time(t);
  const perRound: number[][] = targets.map(() => []);
  const all: number[][] = targets.map(() => []);
  for (let round = 0; round < settings.rounds; round++) {
    const samples: number[][] = targets.map(() => []);
    for (let i = 0; i < SLOW_SAMPLES_PER_ROUND; i++) {
      for (const k of williamsOrder([0, 1], round + i)) samples[k]!.push(await time(targets[k]!));
    }
    samples.forEach((s, k) => {
      perRound[k]!.push(median(s));
      all[k]!.push(...s);
    });
    console.log(`  slow-list round ${round + 1}  ${targets.map((t, k) => `${t.name} ${samples[k]!.map((ms) => ms.toFixed(1)).join(', ')} ms`).join('  ')}`);
  }
  const rows = targets.map((t, k) => ({ target: t.name, ms: spread(perRound[k]!), allSamplesMs: { min: round1(Math.min(...all[k]!)), max: round1(Math.max(...all[k]!)) } }));
  const overDelay = spread(perRound[1]!.map((ms) => ms / SLOW_LIST_DELAY_MS));
  const overSlowAlone = spread(perRound[1]!.map((ms, i) => ms / perRound[0]![i]!));
  console.log('');
  console.log(`several servers, a new session's first merged list, one server answering its list after ${SLOW_LIST_DELAY_MS} ms (median per round of ${SLOW_SAMPLES_PER_ROUND}):`);
  for (const row of rows) console.log(`${row.target.padEnd(24)} ${row.ms.median.toFixed(1).padStart(7)} ms   rounds ${row.ms.min.toFixed(1)}–${row.ms.max.toFixed(1)}, every sample ${row.allSamplesMs.min}–${row.allSamplesMs.max}`);
  const limit = SERVERS_TARGET_RATIOS.slowListOverDelay;
  console.log(`first merged list / ${SLOW_LIST_DELAY_MS} ms: ${overDelay.median.toFixed(3)} (target ≤ ${limit.toFixed(2)}: ${overDelay.median <= limit ? 'MET' : 'ABOVE'}), rounds ${overDelay.min.toFixed(3)}–${overDelay.max.toFixed(3)}`);
  console.log(`first merged list / the slow upstream's own first list: ${overSlowAlone.median.toFixed(3)}, rounds ${overSlowAlone.min.toFixed(3)}–${overSlowAlone.max.toFixed(3)}`);
  return { delayMs: SLOW_LIST_DELAY_MS, samplesPerRound: SLOW_SAMPLES_PER_ROUND, rows, firstListOverDelay: overDelay, firstListOverSlowAlone: overSlowAlone, target: limit };
}

/** Runs the servers part and prints its report; returns what goes to `latest.json`. */
export async function runServersBench(settings: ServersSettings): Promise<Record<string, unknown>> {
  const { began, background, loadAverageBefore, loadCpu, serverCpu, pinned, note, dir } = await startBenchPart(settings.compiledScriptsDir, 'servers');
  const p = await startProcesses(settings, dir, serverCpu, loadCpu);
  console.log('');
  console.log(
    `bench (several servers): ${settings.rounds} rounds × (upstream alone, single-server gateway, three-server endpoint) × ${settings.durationSeconds} s per workload ` +
      `(${settings.workloads.join(', ')}), ${settings.warmupSeconds} s warm-up each, ${settings.connections} connections; ${note}; gateway log ${settings.gatewayLog}; ` +
      `before the start each CPU was busy ${background.map(fmtPct).join(', ')} with other work, load average ${loadAverageBefore.join(', ')}`,
  );
  const report: Record<string, unknown> = {};
  for (const workload of rateWorkloads(p)) report[workload.name] = await runRateWorkload(p.load, workload, settings, { ...(serverCpu !== undefined ? { serverCpu } : {}), ...(loadCpu !== undefined ? { loadCpu } : {}) });
  if (p.slowServers) report['slow-list'] = await runSlowList(p, settings);
  await stopAll();
  const loadAverageAfter = os.loadavg().map((x) => Math.round(x * 100) / 100);
  console.log(`load average after the part: ${loadAverageAfter.join(', ')}`);
  return {
    settings: { ...settings, entryUrl: undefined, compiledScriptsDir: undefined, pinned },
    machine: { backgroundCpuBusy: background, loadAverageBefore, loadAverageAfter },
    targets: SERVERS_TARGET_RATIOS,
    ...report,
    elapsedSeconds: Math.round((Date.now() - began) / 1000),
  };
}
