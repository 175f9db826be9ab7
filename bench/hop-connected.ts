/**
 * Connected accounts (`MCP_AUTH_UPSTREAM_AUTH=connected`): a call sent with a user's own stored upstream token,
 * measured against the same call sent with a static upstream token: part of `npm run bench` (`BENCH_ONLY=connected`;
 * see `run.ts`).
 *
 * One upstream (`upstream.ts`) and, in front of it, two gateways started as `gateway.ts` starts one, with the gateway
 * part's policy: `gateway-static` (`MCP_AUTH_UPSTREAM_AUTH=static`, a random `MCP_AUTH_UPSTREAM_TOKEN`) and
 * `gateway-connected` (`MCP_AUTH_UPSTREAM_AUTH=connected`, the upstream's issuer and resource given so nothing is
 * discovered, a token store in a temporary directory sealed with a random `MCP_AUTH_TOKEN_STORE_SECRET`). The load
 * generator's reused token names a user the parent learns only from it (its `iss` and `sub`); before any request
 * reaches the connected gateway, the parent stores that user's connection in the gateway's directory, as the
 * gateway would after the user connected: the real sealer (`createRecordSealer`, keys parsed as the gateway parses
 * the secret), `writeConnection` and the directory store, from this checkout's `src/` (a `BENCH_LIBRARY` build must
 * read the same format), with an upstream access token that outlives the run. The upstream counts the requests
 * that carry each gateway's expected `Authorization` (`expect-bearer`): a run in which a gateway sent anything else
 * fails.
 *
 * Two measurements:
 * - `call`: a small `tools/call`, req/s and the gateway's CPU per request; each round opens with the upstream alone
 *   and then runs the two gateways in a balanced order (`round-order.ts`); connected ÷ static is taken within each
 *   round, and medians and the spread of the rounds are reported (target ≥ 0.9);
 * - `restart`: the first request a freshly started gateway process answers (the connected one reads the record
 *   from disk and opens its JWE then), timed in the load generator from sending to the last byte, and the request
 *   after it; a new process per sample, {@link RESTART_SAMPLES_PER_ROUND} per target a round, in alternating
 *   order. Every restarted gateway serves the same resource (`MCP_AUTH_RESOURCE`), so one token serves them all.
 *   The first request also pays what any first request does (cold code, the JWKS, a new upstream connection), the
 *   same for both.
 *
 * Pinned as the gateway part is (servers on one CPU, the load generator on the other).
 */
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { parseSessionSecret } from '../src/core/session/session-seal.js';
import type { ConnectionRecord, UserRef } from '../src/gateway/connected/oauth/connection-record.js';
import { writeConnection } from '../src/gateway/connected/oauth/sealed-connections.js';
import { createDirectoryTokenStore } from '../src/gateway/connected/store/directory-token-store.js';
import { createRecordSealer } from '../src/gateway/connected/store/record-sealer.js';
import { CALL_RESULT, HOP_BODIES, gatewayPolicy } from './hop-scenario.js';
import { fmtPct, median, round1, sample, spread, startHop, statsOf, type BenchPartSettings, type Hop } from './hop.js';
import { LoadProcess } from './load-client.js';
import { startScript, stopAll } from './processes.js';
import { assertAllAnswered, startBenchPart, cpuBusySince, cpuRatio, hopFigures, printRateRows, rateRatio, rateRow, runBalancedRounds, type RateCpus, type RateRow, type RateRun } from './rate-rounds.js';
import { williamsOrder } from './round-order.js';

/** Targets, printed next to the figures (information, not assertions). */
export const CONNECTED_TARGET_RATIOS = {
  /** A call with a stored user token ÷ the same call with a static token, req/s (and the first request's speed). */
  connectedOverStatic: 0.9,
} as const;

/** Fresh gateway processes timed per round of `restart`, for each of its two targets. */
export const RESTART_SAMPLES_PER_ROUND = 3;
/** The resource every restarted gateway serves (`MCP_AUTH_RESOURCE`): the audience of the one token they are sent. */
const RESTART_RESOURCE = 'http://127.0.0.1/bench-restarted/mcp';
/** The stored upstream token's lifetime: a day, far beyond the run, so it is never refreshed. */
const RECORD_LIFETIME_MS = 24 * 3600 * 1000;
/**
 * The upstream's authorization server as the connected gateway is told it (`MCP_AUTH_UPSTREAM_ISSUER`): nothing
 * listens there, so were anything sent to it (discovery, a refresh) the requests would fail, not pass unseen.
 */
const UPSTREAM_ISSUER = 'http://127.0.0.1:9/upstream-as';

/** Settings of {@link runConnectedBench}. */
export type ConnectedSettings = BenchPartSettings;

/** What each round of `call` measures. */
type ConnectedTarget = 'upstream' | 'gateway-static' | 'gateway-connected';
/** The two gateways. */
type GatewayKind = Exclude<ConnectedTarget, 'upstream'>;

/** One load run of one target. */
interface ConnectedRun extends RateRun<ConnectedTarget> {
  /** Requests the upstream saw during the run with the gateway's expected `Authorization`, and without. */
  upstreamRequestsWithCredential?: number;
  upstreamRequestsWithout?: number;
}

/** The processes of the part, and how each gateway is started again. */
interface ConnectedProcesses {
  load: LoadProcess;
  upstream: Hop<string>;
  gateways: Record<GatewayKind, Hop<string>>;
  /** `gateway.ts` arguments of each gateway, before its `NAME=value` settings. */
  gatewayArgs: string[];
  /** Each gateway's own settings (`NAME=value`). */
  variants: Record<GatewayKind, string[]>;
}

/** The index in the upstream's `bearers.matched` of each gateway's credential (its `expect-bearer` order). */
const CREDENTIAL_INDEX: Record<GatewayKind, number> = { 'gateway-connected': 0, 'gateway-static': 1 };
const CALL_BODY = HOP_BODIES.call;
const GATEWAYS: readonly GatewayKind[] = ['gateway-static', 'gateway-connected'];

/**
 * Stores `users`' connections to the single upstream (server `""`) in `directory`, sealed with `secret`, as the
 * gateway stores one when a user connects: each holds `accessToken`, valid for {@link RECORD_LIFETIME_MS}.
 */
async function storeConnections(directory: string, secret: string, users: readonly UserRef[], accessToken: string): Promise<void> {
  const store = await createDirectoryTokenStore({ directory, setting: 'MCP_AUTH_TOKEN_STORE' });
  const sealer = createRecordSealer(parseSessionSecret(secret, 'MCP_AUTH_TOKEN_STORE_SECRET'));
  const now = Date.now();
  const record: ConnectionRecord = {
    accessToken,
    tokenType: 'Bearer',
    expiresAt: now + RECORD_LIFETIME_MS,
    scope: 'notes:read',
    asIssuer: UPSTREAM_ISSUER,
    clientId: 'bench',
    createdAt: now,
    updatedAt: now,
  };
  try {
    for (const user of users) await writeConnection(store, sealer, user, '', record);
  } finally {
    await store.close();
  }
}

async function startProcesses(settings: ConnectedSettings, dir: string, serverCpu: number | undefined, loadCpu: number | undefined): Promise<ConnectedProcesses> {
  const { load, issuer } = await LoadProcess.ready(startScript('load.ts', [], { cpu: loadCpu }), settings.connections);
  // The upstream access tokens: the user's, in the store, and the static one; the upstream counts each (CREDENTIAL_INDEX order).
  const userUpstreamToken = randomBytes(32).toString('base64url');
  const staticToken = randomBytes(32).toString('base64url');
  const upstream = await startHop('upstream', 'upstream.ts', [`expect-bearer=${userUpstreamToken}`, `expect-bearer=${staticToken}`], serverCpu);
  const policyFile = join(dir, 'policy.json');
  writeFileSync(policyFile, JSON.stringify(gatewayPolicy()));
  const storeDir = join(dir, 'tokens');
  const storeSecret = randomBytes(32).toString('base64url');
  const variants: Record<GatewayKind, string[]> = {
    'gateway-static': ['MCP_AUTH_UPSTREAM_AUTH=static', `MCP_AUTH_UPSTREAM_TOKEN=${staticToken}`],
    'gateway-connected': [
      'MCP_AUTH_UPSTREAM_AUTH=connected',
      `MCP_AUTH_UPSTREAM_ISSUER=${UPSTREAM_ISSUER}`,
      `MCP_AUTH_UPSTREAM_RESOURCE=${upstream.url}`,
      `MCP_AUTH_TOKEN_STORE=${storeDir}`,
      `MCP_AUTH_TOKEN_STORE_SECRET=${storeSecret}`,
      // The pages (connect, sign-in) are never used here.
      'MCP_AUTH_LOGIN_CLIENT_ID=bench',
    ],
  };
  const gatewayArgs = [settings.entryUrl, upstream.url, issuer, policyFile, settings.gatewayLog];
  const execArgv = [...(settings.gatewayNodeFlags ?? []), ...(settings.cpuProfileDir ? ['--cpu-prof', `--cpu-prof-dir=${settings.cpuProfileDir}`] : [])];
  // One after the other, as each start-up runs on the servers' CPU.
  const gateways = {} as Record<GatewayKind, Hop<string>>;
  for (const kind of GATEWAYS) gateways[kind] = await startHop(kind, 'gateway.ts', [...gatewayArgs, ...variants[kind]], serverCpu, { execArgv, stdout: 'ignore' });
  await load.token(gateways['gateway-static'].url);
  const users = [await load.token(gateways['gateway-connected'].url), await load.token(RESTART_RESOURCE)];
  // Before any request reaches the connected gateway: its first read finds the connection on disk.
  await storeConnections(storeDir, storeSecret, users, userUpstreamToken);
  return { load, upstream, gateways, gatewayArgs, variants };
}

/** The upstream's `bearers` counts now. */
async function bearersOf(upstream: Hop<string>): Promise<{ requests: number; matched: number[] }> {
  const stats = await statsOf(upstream);
  if (stats.bearers === undefined) throw new Error('the upstream counts no credentials (no expect-bearer)');
  return stats.bearers;
}

/**
 * Fails unless the upstream saw, between `before` and `after`, at least `least` requests with `kind`'s credential:
 * the measurement is then of a gateway that sent what it was meant to. Returns those requests, and the others.
 */
function checkCredential(what: string, kind: GatewayKind, before: { requests: number; matched: number[] }, after: { requests: number; matched: number[] }, least: number): { matched: number; other: number } {
  const matched = after.matched[CREDENTIAL_INDEX[kind]]! - before.matched[CREDENTIAL_INDEX[kind]]!;
  const other = after.requests - before.requests - matched;
  if (matched < least) {
    const sent = kind === 'gateway-connected' ? "the user's stored upstream token" : 'the static upstream token';
    throw new Error(`${what}: the upstream saw ${matched} requests with ${sent} for ${least} answered (${other} with another Authorization) — the measurement is not valid`);
  }
  return { matched, other };
}

/** Fails unless `probe` is the small call's result. */
function checkCall(what: string, probe: { status: number; body: string }): void {
  let result: unknown;
  try {
    result = (JSON.parse(probe.body) as { id?: unknown; result?: unknown }).result;
  } catch {
    result = undefined;
  }
  if (probe.status !== 200 || JSON.stringify(result) !== JSON.stringify(CALL_RESULT)) throw new Error(`${what} answered wrongly: ${probe.status} ${probe.body.slice(0, 300)}`);
}

/** One load run of `target`, with the CPU of the gateway and of the upstream, and the credential check. */
async function measure(p: ConnectedProcesses, target: ConnectedTarget, seconds: number, cpus: RateCpus): Promise<ConnectedRun> {
  const hop = target === 'upstream' ? p.upstream : p.gateways[target];
  const inFront = target === 'upstream' ? undefined : hop;
  const busySince = cpuBusySince(cpus);
  const [upBefore, hopBefore] = await Promise.all([statsOf(p.upstream), inFront ? sample(inFront) : undefined]);
  // The upstream alone ignores the token it is sent; the static gateway's is as good as any.
  const tokenResource = (inFront ?? p.gateways['gateway-static']).url;
  const summary = await p.load.run({ url: hop.url, scenario: 'gateway', durationSeconds: seconds, body: CALL_BODY, tokenResource });
  const [upAfter, hopAfter] = await Promise.all([statsOf(p.upstream), inFront ? sample(inFront) : undefined]);
  const cpuBusy = busySince();
  assertAllAnswered(target, summary);
  const credential = target === 'upstream' ? undefined : checkCredential(target, target, upBefore.bearers!, upAfter.bearers!, summary.totalRequests);
  const n = summary.totalRequests || 1;
  const cpuOf = (s: { cpu: NodeJS.CpuUsage }): number => s.cpu.user + s.cpu.system;
  return {
    target,
    requestsPerSecond: summary.requestsPerSecond,
    p99Ms: summary.p99Ms,
    totalRequests: summary.totalRequests,
    ...cpuBusy,
    ...hopFigures(hopBefore, hopAfter, n),
    upstreamCpuUsPerRequest: round1((cpuOf(upAfter) - cpuOf(upBefore)) / n),
    ...(credential ? { upstreamRequestsWithCredential: credential.matched, upstreamRequestsWithout: credential.other } : {}),
  };
}

const LABEL: Record<ConnectedTarget, string> = {
  upstream: 'upstream alone',
  'gateway-static': 'gateway, static upstream token',
  'gateway-connected': "gateway, user's stored token",
};

/** `call`: the rounds, the table and the ratios; returns what goes to `latest.json`. */
async function runCall(p: ConnectedProcesses, settings: ConnectedSettings, cpus: RateCpus): Promise<Record<string, unknown>> {
  // Twice each: the second answer (the record from memory) must be the first; each with the expected credential.
  for (const target of ['upstream', ...GATEWAYS] as const) {
    const hop = target === 'upstream' ? p.upstream : p.gateways[target];
    const before = await bearersOf(p.upstream);
    const tokenResource = (target === 'upstream' ? p.gateways['gateway-static'] : hop).url;
    const [first, second] = [await p.load.probe(hop.url, { body: CALL_BODY, tokenResource }), await p.load.probe(hop.url, { body: CALL_BODY, tokenResource })];
    checkCall(target, first);
    if (second.body !== first.body) throw new Error(`${target}: a second answer differs from the first`);
    if (target !== 'upstream') checkCredential(`${target} (probe)`, target, before, await bearersOf(p.upstream), 2);
  }
  const rounds = await runBalancedRounds({
    workload: 'call',
    rounds: settings.rounds,
    durationSeconds: settings.durationSeconds,
    warmupSeconds: settings.warmupSeconds,
    upstream: 'upstream' as ConnectedTarget,
    inFront: GATEWAYS,
    measure: (target, seconds) => measure(p, target, seconds, cpus),
    upstreamLabel: 'upstream',
    lineSuffix: (r) => (r.upstreamRequestsWithCredential !== undefined ? `  credential on ${r.upstreamRequestsWithCredential} of ${r.totalRequests} answered` : ''),
  });
  const rows = (['upstream', ...GATEWAYS] as const).map((target) => ({ target, ...rateRow(rounds, target, 'upstream') }));
  const overStatic = rateRatio(rounds, 'gateway-connected', 'gateway-static');
  // The gateway's own CPU per request, static over connected (here the upstream shares the servers' CPU with it).
  const cpuStaticOverConnected = cpuRatio(rounds, 'gateway-static', 'gateway-connected');
  printCallTable(rows, overStatic, cpuStaticOverConnected);
  return { rows, connectedOverStatic: overStatic, cpuStaticOverConnected, target: CONNECTED_TARGET_RATIOS.connectedOverStatic, runs: rounds };
}

function printCallTable(
  rows: ReadonlyArray<RateRow & { target: ConnectedTarget }>,
  overStatic: ReturnType<typeof spread>,
  cpuStaticOverConnected: ReturnType<typeof spread> | undefined,
): void {
  const target = CONNECTED_TARGET_RATIOS.connectedOverStatic;
  const verdict = (x: number): string => (x >= target ? 'MET' : 'BELOW');
  console.log('');
  console.log('connected accounts, small tools/call:');
  printRateRows(rows.map((row) => ({ ...row, label: LABEL[row.target] })));
  console.log(`stored user token / static token, req/s: ${overStatic.median.toFixed(3)} (target ≥ ${target.toFixed(2)}: ${verdict(overStatic.median)}), rounds ${overStatic.min.toFixed(2)}–${overStatic.max.toFixed(2)}: ${overStatic.perRound.map((x) => x.toFixed(2)).join(' ')}`);
  if (cpuStaticOverConnected) {
    console.log(
      `gateway CPU per request, static ÷ stored user token (the req/s ratio with the upstream off the gateway's CPU): ${cpuStaticOverConnected.median.toFixed(3)} ` +
        `(target ≥ ${target.toFixed(2)}: ${verdict(cpuStaticOverConnected.median)}), rounds ${cpuStaticOverConnected.min.toFixed(2)}–${cpuStaticOverConnected.max.toFixed(2)}`,
    );
  }
}

/** Stops one hop process (as `stopAll` does, for one): `stop` over IPC, SIGKILL after 5 s. */
async function stopHop(hop: Hop<string>): Promise<void> {
  if (hop.child.exitCode !== null || hop.child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => hop.child.once('exit', () => resolve()));
  const timer = setTimeout(() => hop.child.kill('SIGKILL'), 5_000);
  if (hop.child.connected) hop.child.send({ type: 'stop' });
  else hop.child.kill('SIGTERM');
  await exited;
  clearTimeout(timer);
}

/** One restart sample of `kind`: a new gateway process, its first request and the one after, timed; then stopped. */
async function restartSample(p: ConnectedProcesses, kind: GatewayKind, serverCpu: number | undefined, settings: ConnectedSettings): Promise<{ firstMs: number; secondMs: number }> {
  const args = [...p.gatewayArgs, `MCP_AUTH_RESOURCE=${RESTART_RESOURCE}`, ...p.variants[kind]];
  const hop = await startHop(`restarted ${kind}`, 'gateway.ts', args, serverCpu, { execArgv: [...(settings.gatewayNodeFlags ?? [])], stdout: 'ignore' });
  try {
    const before = await bearersOf(p.upstream);
    const first = await p.load.probe(hop.url, { body: CALL_BODY, tokenResource: RESTART_RESOURCE });
    const second = await p.load.probe(hop.url, { body: CALL_BODY, tokenResource: RESTART_RESOURCE });
    checkCall(`restarted ${kind}, first request`, first);
    checkCall(`restarted ${kind}, second request`, second);
    checkCredential(`restarted ${kind}`, kind, before, await bearersOf(p.upstream), 2);
    return { firstMs: first.ms, secondMs: second.ms };
  } finally {
    await stopHop(hop);
  }
}

/**
 * `restart`: in each round, {@link RESTART_SAMPLES_PER_ROUND} fresh processes of each gateway in alternating order,
 * each asked one call and then another; the median of each round's. The gateways of `call` are stopped first (the
 * directory store serves one process; and their CPU is then free).
 */
async function runRestart(p: ConnectedProcesses, settings: ConnectedSettings, serverCpu: number | undefined): Promise<Record<string, unknown>> {
  for (const kind of GATEWAYS) await stopHop(p.gateways[kind]);
  // Warm-up: the files each start reads are in the page cache, for both alike.
  for (const kind of GATEWAYS) await restartSample(p, kind, serverCpu, settings);
  const perRound = { first: GATEWAYS.map(() => [] as number[]), second: GATEWAYS.map(() => [] as number[]) };
  const all = GATEWAYS.map(() => [] as number[]);
  for (let round = 0; round < settings.rounds; round++) {
    const first = GATEWAYS.map(() => [] as number[]);
    const second = GATEWAYS.map(() => [] as number[]);
    for (let i = 0; i < RESTART_SAMPLES_PER_ROUND; i++) {
      for (const k of williamsOrder([0, 1], round + i)) {
        const s = await restartSample(p, GATEWAYS[k]!, serverCpu, settings);
        first[k]!.push(s.firstMs);
        second[k]!.push(s.secondMs);
      }
    }
    GATEWAYS.forEach((_, k) => {
      perRound.first[k]!.push(median(first[k]!));
      perRound.second[k]!.push(median(second[k]!));
      all[k]!.push(...first[k]!);
    });
    console.log(`  restart round ${round + 1}  ${GATEWAYS.map((kind, k) => `${kind} first ${first[k]!.map((ms) => ms.toFixed(1)).join(', ')} ms, then ${second[k]!.map((ms) => ms.toFixed(1)).join(', ')} ms`).join('  ')}`);
  }
  const rows = GATEWAYS.map((kind, k) => ({ target: kind, firstMs: spread(perRound.first[k]!), secondMs: spread(perRound.second[k]!), everyFirstMs: { min: round1(Math.min(...all[k]!)), max: round1(Math.max(...all[k]!)) } }));
  const [s, c] = [0, 1].map((k) => perRound.first[k]!);
  // As a speed, comparable with the req/s ratio: static time ÷ connected time.
  const speedConnectedOverStatic = spread(s!.map((ms, i) => ms / c![i]!));
  const extraMs = spread(c!.map((ms, i) => ms - s![i]!));
  const target = CONNECTED_TARGET_RATIOS.connectedOverStatic;
  console.log('');
  console.log(`connected accounts, the first request of a freshly started gateway (median per round of ${RESTART_SAMPLES_PER_ROUND} processes), and the request after it:`);
  for (const row of rows) {
    console.log(
      `${LABEL[row.target].padEnd(34)} first ${row.firstMs.median.toFixed(1).padStart(6)} ms (rounds ${row.firstMs.min.toFixed(1)}–${row.firstMs.max.toFixed(1)}, every sample ${row.everyFirstMs.min}–${row.everyFirstMs.max})` +
        `   second ${row.secondMs.median.toFixed(2)} ms`,
    );
  }
  const within = c!.length > 0 && median(c!) <= Math.max(...s!);
  console.log(
    `first request, static time ÷ stored-token time: ${speedConnectedOverStatic.median.toFixed(3)} (target ≥ ${target.toFixed(2)}: ${speedConnectedOverStatic.median >= target ? 'MET' : 'BELOW'}), ` +
      `rounds ${speedConnectedOverStatic.min.toFixed(2)}–${speedConnectedOverStatic.max.toFixed(2)}; stored-token extra ${extraMs.median.toFixed(2)} ms (rounds ${extraMs.min.toFixed(2)}–${extraMs.max.toFixed(2)}); ` +
      `its median ${within ? 'within' : 'OUTSIDE'} the static gateway's spread of rounds`,
  );
  return { samplesPerRound: RESTART_SAMPLES_PER_ROUND, rows, firstSpeedConnectedOverStatic: speedConnectedOverStatic, firstExtraMs: extraMs, withinStaticSpread: within, target };
}

/** Runs the connected-accounts part and prints its report; returns what goes to `latest.json`. */
export async function runConnectedBench(settings: ConnectedSettings): Promise<Record<string, unknown>> {
  const { began, background, loadAverageBefore, loadCpu, serverCpu, pinned, note, dir } = await startBenchPart(settings.compiledScriptsDir, 'connected');
  const p = await startProcesses(settings, dir, serverCpu, loadCpu);
  console.log('');
  console.log(
    `bench (connected accounts): ${settings.rounds} rounds × (upstream alone, gateway with a static upstream token, gateway with the user's stored token) × ${settings.durationSeconds} s ` +
      `(small tools/call), ${settings.warmupSeconds} s warm-up each, ${settings.connections} connections; then ${settings.rounds} rounds × ${RESTART_SAMPLES_PER_ROUND} restarts of each gateway; ` +
      `${note}; gateway log ${settings.gatewayLog}; before the start each CPU was busy ${background.map(fmtPct).join(', ')} with other work, load average ${loadAverageBefore.join(', ')}`,
  );
  const cpus = { ...(serverCpu !== undefined ? { serverCpu } : {}), ...(loadCpu !== undefined ? { loadCpu } : {}) };
  const call = await runCall(p, settings, cpus);
  const restart = await runRestart(p, settings, serverCpu);
  await stopAll();
  const loadAverageAfter = os.loadavg().map((x) => Math.round(x * 100) / 100);
  console.log(`load average after the part: ${loadAverageAfter.join(', ')}`);
  return {
    settings: { ...settings, entryUrl: undefined, compiledScriptsDir: undefined, pinned },
    machine: { backgroundCpuBusy: background, loadAverageBefore, loadAverageAfter },
    targets: CONNECTED_TARGET_RATIOS,
    call,
    restart,
    elapsedSeconds: Math.round((Date.now() - began) / 1000),
  };
}
