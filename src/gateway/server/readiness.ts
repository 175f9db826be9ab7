import { statSync } from 'node:fs';
import type { Guard } from '../../core/guard/create-guard.js';
import { ConfigurationError } from '../../core/kernel/errors.js';
import { explainFailure } from '../../core/kernel/explain-failure.js';
import { waitBounded } from '../../core/kernel/bounded-wait.js';
import { printableOAuthErrorCode } from '../../http/oauth-error-code.js';
import { JSON_MEDIA_TYPE, MCP_POST_ACCEPT } from '../../http/media-type.js';
import { checkProgram } from '../config/command-line.js';
import type { StdioStartOutcome, StdioStartOutcomes } from '../upstream/stdio/stdio-start-outcome.js';
import type { StdioUpstreamOptions } from '../upstream/stdio/stdio-upstream.js';
import { GATEWAY_ITSELF, type UpstreamCredentials } from '../upstream-auth/upstream-credentials.js';
import { isTimeout, unreachableText, withUpstreamDispatcher } from '../upstream/upstream-dispatcher.js';
import type { UpstreamProxyOptions } from '../upstream/http/upstream-proxy.js';
import { UpstreamTokenRefusedError } from '../upstream-auth/upstream-token-client.js';

/**
 * `/readyz`: whether the gateway can serve a request now. Two checks, each with a reason when it fails (URLs,
 * status codes and Node error codes only; never a token or a secret):
 *
 * - the issuers: `guard.ready()` (metadata discovery, and the JWKS when it is discovered), bounded by a timeout;
 * - the upstream: for HTTP, a POST of a JSON-RPC `ping` (no session) that gets any HTTP answer below 500 in time.
 *   An upstream that refuses it (400 without a session, 401, 404) is up; a 5xx (a proxy in front of a dead server)
 *   or no answer is not. With `credentials` of the gateway's own (`MCP_AUTH_UPSTREAM_AUTH=static` or
 *   `client_credentials`) the ping carries them, as every forwarded request does: the token is the one held
 *   (a new one is asked for only when none is held or it expires, and once more after a 401, as the proxy does), and
 *   a token request that fails, or a 401 or 403 for the credential, makes the upstream not ready. With per-caller
 *   credentials (`token_exchange`) there is no caller to exchange a token for: the probe checks that the upstream's
 *   authorization server metadata, with its token endpoint, can be loaded, and pings without a token. For stdio, the program can be started: it is still on the child's `PATH`
 *   (or is an executable file) and its working directory exists; and the most recent process start that settled
 *   went well (`stdioStarts`, see `createStdioStartOutcomes`): a process that exited or could not be started
 *   before it answered its first request (`initialize`) makes the upstream not ready, with its exit (never its
 *   stderr, which only the log has), until a later process answers. No process is started per probe: the evidence comes from those
 *   the gateway starts anyway, the policy check's listing (at start-up and on each reload) and each session's.
 *   While no process has settled yet, the program check alone decides: the start-up listing normally settles one
 *   within moments, and a gateway that waited for a process of its own would never be sent the first session.
 *
 * With several servers (`servers`), each is probed as the one upstream would be, with its own options and
 * credentials, and the report names each under `servers`; the gateway is ready when the issuers are and every
 * server marked `required` is. `upstream` stays for consumers of the one-upstream report: ok when every required
 * server is (so also when none is required), else its reason names the required servers that are not.
 *
 * The answer is cached for `cacheMs`, and probes in progress are shared, so `/readyz` cannot be used to send
 * requests to the authorization server or the upstream at the rate it is asked; a new start outcome is seen at
 * once (it comes from a process the gateway started, never from a probe).
 */
export interface ReadinessReport {
  ready: boolean;
  issuers: { ok: boolean; reason?: string };
  upstream: { ok: boolean; reason?: string };
  /** With several servers: each one's readiness, by name, in configuration order. Absent with one upstream. */
  servers?: Record<string, ServerReadiness>;
  /**
   * With connected accounts: whether their token store answers (a round trip to Redis; always ok for a directory).
   * Every connected upstream needs it, so the gateway is not ready without it. Absent without connected accounts.
   */
  tokenStore?: { ok: boolean; reason?: string };
}

/** One server's part of a {@link ReadinessReport}. */
export interface ServerReadiness {
  ok: boolean;
  /** Whether the gateway is ready only when this server is (its `required`). */
  required: boolean;
  reason?: string;
}

/** One server of a gateway with several, as {@link createReadinessCheck} probes it. */
export interface ServerReadinessTarget {
  /** Its name (the key in `servers`), used in the report and in the setting names of reasons. */
  readonly name: string;
  /** Whether the gateway is ready only when this server is. */
  readonly required: boolean;
  /** The HTTP server; or `stdio`. */
  readonly proxy?: UpstreamProxyOptions;
  readonly stdio?: StdioUpstreamOptions;
  /** The gateway's credentials for it, the very ones its upstream sends. Default none. */
  readonly credentials?: UpstreamCredentials;
  /** The outcomes of its own process starts (stdio). Default none: the program check alone. */
  readonly stdioStarts?: Pick<StdioStartOutcomes, 'latest'>;
}

/** Options of {@link createReadinessCheck}. */
export interface ReadinessCheckOptions {
  guard: Pick<Guard, 'ready'>;
  /** The HTTP upstream; or `stdio`. */
  proxy?: UpstreamProxyOptions;
  stdio?: StdioUpstreamOptions;
  /** The gateway's credentials for the HTTP upstream (`MCP_AUTH_UPSTREAM_AUTH`). Default none. */
  credentials?: UpstreamCredentials;
  /** The outcomes of the stdio upstream's process starts. Default none: the program check alone. */
  stdioStarts?: Pick<StdioStartOutcomes, 'latest'>;
  /** Several servers behind the endpoint, probed in place of `proxy` or `stdio`. */
  servers?: readonly ServerReadinessTarget[];
  /** With connected accounts: resolves when their token store answers, rejects with why not. */
  tokenStore?: () => Promise<void>;
  /** Told of each server's outcome after each probe (e.g. for a gauge). Errors it throws are ignored. */
  onServerProbed?: (server: string, ok: boolean) => void;
  /** How long an answer is reused, in milliseconds. Default 5 000. */
  cacheMs?: number;
  /** Time allowed to each probe, in milliseconds. Default 3 000. */
  probeTimeoutMs?: number;
  /** Clock, in milliseconds. Default `Date.now`. */
  now?: () => number;
}

/** The readiness check: `check()` resolves (never rejects) to the report, fresh or cached. */
export interface ReadinessCheck {
  check(): Promise<ReadinessReport>;
}

/** Default time a `/readyz` answer is reused, in milliseconds. */
export const DEFAULT_READINESS_CACHE_MS = 5_000;
const DEFAULT_PROBE_TIMEOUT_MS = 3_000;

/**
 * Creates the {@link ReadinessCheck} `/readyz` answers with.
 *
 * @example
 * const stdioStarts = createStdioStartOutcomes();
 * const readiness = createReadinessCheck({ guard, stdio: { command: 'python3', args: ['serve.py'] }, stdioStarts });
 * const { ready, upstream } = await readiness.check(); // upstream.reason says why it is not ready
 */
export function createReadinessCheck(options: ReadinessCheckOptions): ReadinessCheck {
  const cacheMs = options.cacheMs ?? DEFAULT_READINESS_CACHE_MS;
  const timeoutMs = options.probeTimeoutMs ?? DEFAULT_PROBE_TIMEOUT_MS;
  const now = options.now ?? Date.now;
  const targets = options.servers ? options.servers.map(serverProbe) : [singleUpstreamProbe(options)];
  // One entry per target: a new start outcome of any of them makes the cached answer stale.
  const startOutcomes = (): (StdioStartOutcome | undefined)[] => targets.map((target) => target.stdioStarts?.latest());
  let cached: { at: number; outcomes: (StdioStartOutcome | undefined)[]; report: ReadinessReport } | undefined;
  let inProgress: Promise<ReadinessReport> | undefined;

  async function probe(outcomes: (StdioStartOutcome | undefined)[]): Promise<ReadinessReport> {
    const [tokenStore, issuers, ...upstreams] = await Promise.all([
      options.tokenStore === undefined ? undefined : probeTokenStore(options.tokenStore, timeoutMs),
      withTimeout(options.guard.ready(), timeoutMs, 'the authorization server metadata did not load in time').then(
        () => ({ ok: true }),
        (error: unknown) => ({ ok: false, reason: explainFailure(error) }),
      ),
      ...targets.map((target, i) =>
        probeUpstream(target, timeoutMs, outcomes[i]).then(
          (): { ok: boolean; reason?: string } => ({ ok: true }),
          (error: unknown) => ({ ok: false, reason: error instanceof Error ? error.message : 'the upstream did not answer' }),
        ),
      ),
    ]);
    const report = options.servers ? serversReport(options.servers, issuers!, upstreams, options.onServerProbed) : { ready: issuers!.ok && upstreams[0]!.ok, issuers: issuers!, upstream: upstreams[0]! };
    return tokenStore === undefined ? report : { ...report, ready: report.ready && tokenStore.ok, tokenStore };
  }

  return {
    check() {
      const outcomes = startOutcomes();
      if (cached && now() - cached.at < cacheMs && sameOutcomes(cached.outcomes, outcomes)) return Promise.resolve(cached.report);
      inProgress ??= probe(outcomes).then((report) => {
        cached = { at: now(), outcomes, report };
        inProgress = undefined;
        return report;
      });
      return inProgress;
    },
  };
}

/** The report of a gateway with several servers: ready when the issuers are and every required server is. */
function serversReport(
  servers: readonly ServerReadinessTarget[],
  issuers: { ok: boolean; reason?: string },
  outcomes: readonly { ok: boolean; reason?: string }[],
  onServerProbed: ReadinessCheckOptions['onServerProbed'],
): ReadinessReport {
  const report: Record<string, ServerReadiness> = {};
  const notReady: string[] = [];
  servers.forEach((server, i) => {
    const outcome = outcomes[i]!;
    report[server.name] = { ok: outcome.ok, required: server.required, ...(outcome.reason !== undefined ? { reason: outcome.reason } : {}) };
    if (server.required && !outcome.ok) notReady.push(server.name);
    try {
      onServerProbed?.(server.name, outcome.ok);
    } catch {
      // A gauge must never break readiness.
    }
  });
  const upstream = notReady.length === 0 ? { ok: true } : { ok: false, reason: `required servers not ready: ${notReady.join(', ')}` };
  return { ready: issuers.ok && upstream.ok, issuers, upstream, servers: report };
}

/** The token store's part: a round trip within the probe timeout; a failure names the store and a short reason. */
function probeTokenStore(reachable: () => Promise<void>, timeoutMs: number): Promise<{ ok: boolean; reason?: string }> {
  return withTimeout(reachable(), timeoutMs, `the token store did not answer within ${timeoutMs} ms`).then(
    () => ({ ok: true }),
    (error: unknown) => ({ ok: false, reason: `the token store (MCP_AUTH_TOKEN_STORE) cannot be used: ${explainFailure(error, 200)}` }),
  );
}

function sameOutcomes(a: readonly (StdioStartOutcome | undefined)[], b: readonly (StdioStartOutcome | undefined)[]): boolean {
  return a.length === b.length && a.every((outcome, i) => outcome === b[i]);
}

/** The setting names a probe's reasons point at: the environment's for the one upstream, the file's for a server. */
interface ProbeSettingNames {
  readonly cwd: string;
  readonly command: string;
  readonly auth: string;
}

/** What one upstream's probe needs. */
interface UpstreamProbe {
  readonly proxy: UpstreamProxyOptions | undefined;
  readonly stdio: StdioUpstreamOptions | undefined;
  readonly credentials: UpstreamCredentials | undefined;
  readonly stdioStarts: Pick<StdioStartOutcomes, 'latest'> | undefined;
  readonly names: ProbeSettingNames;
}

const SINGLE_UPSTREAM_NAMES: ProbeSettingNames = { cwd: 'MCP_AUTH_UPSTREAM_CWD', command: 'MCP_AUTH_UPSTREAM_COMMAND', auth: 'MCP_AUTH_UPSTREAM_AUTH' };

function singleUpstreamProbe(options: ReadinessCheckOptions): UpstreamProbe {
  return { proxy: options.proxy, stdio: options.stdio, credentials: options.credentials, stdioStarts: options.stdioStarts, names: SINGLE_UPSTREAM_NAMES };
}

function serverProbe(server: ServerReadinessTarget): UpstreamProbe {
  const at = `servers.${server.name}`;
  return {
    proxy: server.proxy,
    stdio: server.stdio,
    credentials: server.credentials,
    stdioStarts: server.stdioStarts,
    names: { cwd: `${at}.cwd`, command: `${at}.command`, auth: `${at}.auth` },
  };
}

function probeUpstream(target: UpstreamProbe, timeoutMs: number, outcome: StdioStartOutcome | undefined): Promise<void> {
  if (target.stdio) return probeStdio(target.stdio, outcome, target.names);
  if (target.proxy) return probeHttp(target.proxy, timeoutMs, target.credentials, target.names);
  return Promise.reject(new Error('no upstream is configured'));
}

async function probeStdio(stdio: StdioUpstreamOptions, outcome: StdioStartOutcome | undefined, names: ProbeSettingNames): Promise<void> {
  const cwd = stdio.cwd ?? process.cwd();
  try {
    if (!statSync(cwd).isDirectory()) throw new Error();
  } catch {
    throw new Error(`the upstream working directory (${names.cwd}) is missing`);
  }
  try {
    checkProgram(stdio.command, names.command, { cwd, path: (stdio.env ?? process.env).PATH });
  } catch (error) {
    throw new Error(error instanceof ConfigurationError ? error.message : 'the upstream program cannot be started');
  }
  if (outcome !== undefined && !outcome.ok) throw new Error(outcome.reason);
}

const PING = JSON.stringify({ jsonrpc: '2.0', id: 'readyz', method: 'ping' });

async function probeHttp(proxy: UpstreamProxyOptions, timeoutMs: number, credentials: UpstreamCredentials | undefined, names: ProbeSettingNames): Promise<void> {
  if (credentials?.perCaller) {
    await credentialStep(async () => credentials.reachable?.(), "the upstream's authorization server, which exchanges each caller's token, is not reachable");
  }
  const own = credentials?.perCaller ? undefined : credentials;
  const authorization = own ? await credentialStep(() => own.authorization(GATEWAY_ITSELF)) : undefined;
  let status = await ping(proxy, timeoutMs, authorization);
  if (status === 401 && own && authorization !== undefined) {
    // As the proxy does: one renewed credential (a new token, a rotated file), then the verdict.
    const renewed = await credentialStep(() => own.renew(GATEWAY_ITSELF, authorization));
    if (renewed !== undefined) status = await ping(proxy, timeoutMs, renewed);
  }
  if (status >= 500) throw new Error(`the upstream answered HTTP ${status}`);
  if (own && (status === 401 || status === 403)) throw new Error(`the upstream refused the gateway's credential (${names.auth}): HTTP ${status}`);
}

/** A step that obtains the gateway's credential; its failure says why without the server's error text or a secret. */
async function credentialStep<T>(step: () => Promise<T>, failure = 'the gateway has no credential for the upstream'): Promise<T> {
  try {
    return await step();
  } catch (error) {
    if (error instanceof UpstreamTokenRefusedError) {
      throw new Error(`the upstream's authorization server refused the gateway's token request (${printableOAuthErrorCode(error.error) ?? 'error not shown'})`);
    }
    throw new Error(`${failure}: ${explainFailure(error)}`);
  }
}

/** Sends the `ping` and returns the status; the body (maybe an open event stream) is not read. */
function ping(proxy: UpstreamProxyOptions, timeoutMs: number, authorization: string | undefined): Promise<number> {
  const url = new URL(proxy.upstream);
  return withUpstreamDispatcher(proxy, timeoutMs, async (dispatcher) => {
    try {
      const answer = await dispatcher.request({
        origin: url.origin,
        path: `${url.pathname}${url.search}`,
        method: 'POST',
        headers: {
          'content-type': JSON_MEDIA_TYPE,
          accept: MCP_POST_ACCEPT,
          ...(authorization !== undefined ? { authorization } : {}),
        },
        body: PING,
        signal: AbortSignal.timeout(timeoutMs),
      });
      answer.body.on('error', () => undefined).destroy();
      return answer.statusCode;
    } catch (error) {
      throw new Error(isTimeout(error) ? `the upstream did not answer within ${timeoutMs} ms` : unreachableText(error));
    }
  });
}

async function withTimeout<T>(promise: Promise<T>, ms: number, message: string): Promise<T> {
  const end = await waitBounded(promise, { timeoutMs: ms, unrefTimer: true });
  if (end.ended !== 'settled') throw new Error(message);
  return end.value;
}
