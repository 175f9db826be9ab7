import { createMemoryReplayCache } from '../../core/limits/replay-cache.js';
import { waitBounded } from '../../core/kernel/bounded-wait.js';
import { ruleErrorWarnings } from '../../core/policy/rule-error-log.js';
import { once } from 'node:events';
import { answerClientErrors } from '../../http/client-error.js';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { canonicalizeResourceUri } from '../../core/kernel/canonical-resource.js';
import { createGuard, type Guard, type GuardHttpResponse } from '../../core/guard/create-guard.js';
import type { AuthInfo } from '../../core/kernel/auth-info.js';
import type { JsonRpcMessage } from '../../core/wire/jsonrpc.js';
import type { GuardOptions } from '../../core/guard/guard-options.js';
import type { DecisionEvent, DecisionRequest } from '../../core/kernel/decision.js';
import { createSessionSealer } from '../../core/session/session-seal.js';
import { explainFailure } from '../../core/kernel/explain-failure.js';
import { ENV_OPTION_VARIABLES } from '../../core/guard/load-options-from-env.js';
import { createRequestPipeline, type RequestPipeline } from '../../http/request-pipeline.js';
import { requestPath } from '../../http/request-headers.js';
import { writeJson } from '../../http/write-response.js';
import { JsonRpcErrorCode } from '../../core/wire/jsonrpc.js';
import { defaultResource, loadGatewayGuardOptions, type GatewayConfig } from '../config/gateway-config.js';
import { limitConnectionsPerAddress, type RefusedConnection } from './connection-limit.js';
import { discoveryFailureWarning } from './discovery-failure-warning.js';
import type { GatewayMetrics } from './gateway-metrics.js';
import { startMetricsListener, type MetricsListener } from './metrics-listener.js';
import { createRequestLog, type RequestLog } from './request-log.js';
import { emitWarning, formatLogLine, writeSafely, writeWarningToStderr, type LineSink } from '../../core/kernel/log-line.js';
import { DEFAULT_LOG_LEVEL, logsAt } from '../../core/kernel/log-options.js';
import { createStdioStartOutcomes, type StdioStartOutcomes } from '../upstream/stdio/stdio-start-outcome.js';
import type { ChildLogEvent } from '../upstream/stdio/stdio-child.js';
import { createStdioUpstream } from '../upstream/stdio/stdio-upstream.js';
import { createUpstreamProxy } from '../upstream/http/upstream-proxy.js';
import type { Upstream } from '../upstream/upstream.js';
import { createUpstreamCredentials } from '../upstream-auth/upstream-auth-config.js';
import type { UpstreamCredentials } from '../upstream-auth/upstream-credentials.js';
import type { RedisStores } from '../../redis/redis-stores.js';
import { policyFileOf, reportPolicyCoverage, type PolicyCoverageReport } from '../policy/policy-coverage-report.js';
import { watchPolicyFile, type PolicyFileWatch } from '../policy/policy-file-watch.js';
import { createPolicyReloader, type PolicyReloadResult } from '../policy/policy-reload.js';
import { createReadinessCheck, DEFAULT_READINESS_CACHE_MS, type ReadinessCheck, type ServerReadinessTarget } from './readiness.js';
import { policyDefinitionOf } from '../../core/policy/compile-policy.js';
import { mayReachServer } from '../../core/policy/policy-set.js';
import { decideAgain } from './second-decision.js';
import type { PolicyDefinition } from '../../core/policy/policy-definition.js';
import type { buildServerSet as BuildServerSet, ServerResources, ServerSetParts } from '../multiplex/build-server-set.js';
import type { ServerConfig } from '../config/server-config.js';
import { reportServerSetCoverage } from '../policy/server-set-coverage.js';
import type { UpstreamCatalog } from '../upstream/upstream-catalog.js';
import { observeCatalog } from '../pins/observe-catalog.js';
import { compileToolSelection } from '../../core/policy/tool-selection.js';
import { SINGLE_UPSTREAM_PIN_NAME } from '../pins/pin-document.js';
import { ServerSetPolicy } from '../policy/server-set-policy.js';
import { resolve as resolvePath } from 'node:path';
import { packageVersion } from '../cli/package-version.js';
import type { ConnectedAccounts } from '../connected/connected-accounts.js';
import type { ConnectedAccountsConfig } from '../config/connected-accounts-config.js';
import type { ToolPins } from '../pins/tool-pins.js';

/** Options of {@link startGateway} that are not configuration. */
export interface StartGatewayOptions {
  /**
   * Receives each information line (JSON): the request log (unless `MCP_AUTH_REQUEST_LOG` is off), the stdio
   * processes' own lines, the coverage summaries and reloads. Default: stdout. Nothing when `MCP_AUTH_LOG_LEVEL` is
   * `warn` or `off`.
   */
  log?: (line: string) => void;
  /** Receives warnings (one line each, never a token). Default: stderr. Nothing when `MCP_AUTH_LOG_LEVEL` is `off`. */
  warn?: (line: string) => void;
  /** How long a `/readyz` answer is reused, in milliseconds (0: probe on every request, for tests). Default 5 000. */
  readinessCacheMs?: number;
  /**
   * Credentials for the single HTTP upstream, in place of those `MCP_AUTH_UPSTREAM_AUTH` describes: for a program
   * that builds its own (e.g. `connectedCredentials` over a store it opened). Ignored with a configuration file's
   * servers and with a stdio upstream. Default: from the configuration.
   */
  upstreamCredentials?: UpstreamCredentials;
  /**
   * With a configuration file's servers: credentials for some of its HTTP servers, by server name, in place of their
   * `auth`, as {@link StartGatewayOptions.upstreamCredentials} for the single upstream. Default: from the configuration.
   */
  serverCredentials?: ReadonlyMap<string, UpstreamCredentials>;
  /**
   * With connected accounts: how long a user's opened connection is served from memory before the token store is
   * read again, in milliseconds (small in tests of a fleet: a disconnection on another replica is seen within this
   * time). Default 30 000.
   */
  connectedRecordsRevalidateMs?: number;
}

/** A running gateway. */
export interface RunningGateway {
  /** Base URL it listens at, e.g. `http://127.0.0.1:8080`. */
  readonly url: string;
  /** The canonical resource URI (RFC 8707 §2) tokens must be issued for. */
  readonly resource: string;
  /** The HTTP server. */
  readonly server: Server;
  /**
   * The upstream (the HTTP proxy, or the stdio upstream with its processes; `transport` says which), for its
   * in-flight count and sessions.
   */
  readonly proxy: Upstream;
  /** The guard in use (`guard.ready()` runs discovery now). */
  readonly guard: Guard;
  /** The request pipeline serving the MCP endpoint and the metadata. */
  readonly pipeline: RequestPipeline;
  /** Where the Prometheus metrics are served (`MCP_AUTH_METRICS_PORT`), e.g. `http://127.0.0.1:9464/metrics`; absent when off. */
  readonly metricsUrl?: string;
  /**
   * Lists the upstream as the gateway itself (never with a client's token) and logs how `policy` covers it: items
   * with no rule, rule names that match nothing (with the closest name), then the summary line (issuers, policy
   * file, upstream, tools protected and open). The CLI calls it at start-up; call it again after loading a policy.
   * Default: the policy in force. Never rejects.
   *
   * With pins in `enforce`, the first call is the start-up comparison with the pins: until a server's listing has
   * been compared, calls to its tools and `tools/list` wait for it, at most its list timeout, then get 503 with
   * `Retry-After` (see tool-pins.md). Call it as soon as the gateway has started.
   */
  reportPolicyCoverage(policy?: PolicyDefinition): Promise<PolicyCoverageReport>;
  /**
   * Reads the policy file (`MCP_AUTH_POLICY`) again and puts it in force for every request that arrives from now on;
   * requests in progress finish under the policy they started with, and sessions and cached tokens are kept. The
   * CLI calls it on SIGHUP, and the watch (`MCP_AUTH_POLICY_WATCH`) when the file changes. It logs a
   * `policy_reloaded` line (the file, the rule counts that changed), then the coverage warnings and the summary
   * line as at start-up. An invalid file changes nothing: one warning says why, as a start-up failure would.
   *
   * With pins on (`MCP_AUTH_PINS`), the pin file or store is read again first, so an operator's edit is in force too.
   *
   * The new policy is in force when this returns; the promise resolves once the summary is written. Never rejects.
   *
   * @param trigger What asked for the reload, written in the log lines. Default `call`.
   * @example
   * process.on('SIGHUP', () => void gateway.reloadPolicy('SIGHUP'));
   */
  reloadPolicy(trigger?: string): Promise<PolicyReloadResult>;
  /**
   * Graceful shutdown: stops accepting connections, ends standalone GET streams at once (they never
   * finish by themselves; clients reconnect elsewhere), gives other requests in progress up to
   * `shutdownTimeoutMs`, then ends what is left. Resolves when the server is closed. Idempotent.
   */
  shutdown(): Promise<void>;
}

/**
 * Starts the gateway: an HTTP server on `config.host:config.port` with `GET /healthz`, the RFC 9728
 * metadata, and the MCP endpoint served by the request pipeline (`createRequestPipeline`) and forwarded by
 * the upstream proxy. Plain `node:http`: no router runs per request.
 *
 * It leaves the process's V8 settings alone: the `mcp-oauth-guard` command calls `tuneHeapForProxying` first,
 * and so should a process whose main job is the gateway (see heap-growing-factor.ts for why).
 *
 * It listens before building the guard, so that with port 0 and the default resource
 * (`http://HOST:PORT/mcp`) the resource names the real port. Issuer discovery starts at once; if the
 * authorization server cannot be reached yet, a warning is written and tokens get 503 until it can (401 when its
 * metadata spells the issuer differently: see `discoveryFailureWarning`).
 *
 * With `config.metrics`, the Prometheus metrics (see `createGatewayMetrics`) are served on a listener of their own,
 * and prom-client is loaded; without, it is not loaded and nothing is counted.
 *
 * @throws the listen error (e.g. `EADDRINUSE`), after which nothing is left running.
 */
export async function startGateway(config: GatewayConfig, options: StartGatewayOptions = {}): Promise<RunningGateway> {
  // MCP_AUTH_LOG_LEVEL: a line below the level goes nowhere; MCP_AUTH_REQUEST_LOG is read where the log is built.
  const level = config.guard.logLevel ?? DEFAULT_LOG_LEVEL;
  const warn = logsAt(level, 'warn') ? (options.warn ?? writeWarningToStderr) : ignoreLine;
  const log = logsAt(level, 'info') ? (options.log ?? writeLineToStdout) : ignoreLine;
  const http = new GatewayHttpServer(config.maxConnectionsPerAddress, warn);
  const port = await http.listen(config.port, config.host);
  const hostInUrl = config.host.includes(':') ? `[${config.host}]` : config.host;
  const url = `http://${hostInUrl}:${port}`;

  const policyFile = policyFileOf(config.settings) ?? undefined;
  // Set once the gateway is built; a watch event comes only after it is.
  let reloadPolicy: RunningGateway['reloadPolicy'] = () => Promise.resolve({ reloaded: false, reason: 'the gateway is starting' });
  // What the stdio processes the gateway starts anyway (listings, sessions) show about its program, for /readyz.
  const stdioStarts = createStdioStartOutcomes(config.stdio?.env ? { env: config.stdio.env } : {});
  const parts = await buildGateway({ config, options, log, warn, http, port, stdioStarts, policyFile, onPolicyFileChange: () => void reloadPolicy('watch') });
  const { guard, pipeline, proxy, metrics, upstreamCredentials, pins } = parts;
  warnAboutStart(config, guard, warn);

  const listings = new CoverageListings();
  let closing: Promise<void> | undefined;
  const shutdown = (): Promise<void> => (closing ??= shutdownGateway(config, http, parts, listings));
  // With servers: what each listed for the policy check so far.
  const listedServers = new Map<string, UpstreamCatalog>();
  const reportCoverage = (policyGiven?: PolicyDefinition): Promise<PolicyCoverageReport> => {
    const policy = policyGiven ?? guard.policy.definition;
    // With pins, the listing keeps each tool whole and compares it with them, as a served list is: after a restart a
    // changed tool is refused from this listing on, not from the first client's list.
    const shared = { issuers: guard.options.issuers, log, warn, childLog: parts.childLog, signal: listings.signal, stdioStarts, ...(pins ? { limits: { keepToolDefinitions: true } } : {}) };
    const set = parts.serverSet;
    // In enforce, the first listing of each server holds calls to its tools until it is compared with the pins; the
    // listing that began a server's comparison ends it as soon as that server's listing settles, listed or not.
    const begun = new Set(pins?.mode === 'enforce' ? pins.startup.begin(config.servers?.map((server) => server.name) ?? [SINGLE_UPSTREAM_PIN_NAME]) : []);
    const settled = (server: string): void => {
      if (begun.delete(server)) pins!.startup.end(server);
    };
    // Whatever happened to a listing, a comparison it began never outlives it.
    const settledAll = (): void => [...begun].forEach(settled);
    if (config.servers && set) {
      // A retry (no new policy) lists only the servers not listed yet; a reload lists every server again.
      const retry = policyGiven === undefined;
      return listings.track(
        reportServerSetCoverage({
          ...shared,
          ...(retry ? { only: (server: string) => !listedServers.has(server), known: listedServers } : {}),
          servers: config.servers,
          settings: config.settings,
          gatewayPolicy: policy,
          serverPolicy: (server) => parts.serverPolicy?.policyOf(server.name) ?? server.policy,
          credentials: (server) => set.credentials.get(server),
          onListed: (server, catalog) => {
            listedServers.set(server, catalog);
            set.learnResources(server, catalog);
            const tools = config.servers!.find((entry) => entry.name === server)?.tools;
            if (pins) observeCatalog(pins, server, catalog, compileToolSelection(tools, `servers.${server}.tools`));
            // Compared, whichever listing began the comparison.
            pins?.startup.end(server);
          },
          onSettled: settled,
        }).finally(settledAll),
      );
    }
    const single = reportPolicyCoverage({ ...shared, config, policy, ...(upstreamCredentials ? { credentials: upstreamCredentials } : {}) });
    if (!pins) return listings.track(single);
    return listings.track(
      single
        .then((report) => {
          if ('catalog' in report) {
            observeCatalog(pins, SINGLE_UPSTREAM_PIN_NAME, report.catalog);
            pins.startup.end(SINGLE_UPSTREAM_PIN_NAME);
          }
          return report;
        })
        .finally(settledAll),
    );
  };
  const reload = createPolicyReloader({
    guard,
    file: policyFile,
    log,
    warn,
    reportCoverage,
    ...(parts.serverPolicy ? { compile: (definition: PolicyDefinition) => parts.serverPolicy!.compile(definition, { reread: true, ...(policyFile ? { gatewaySource: `policy file ${resolvePath(policyFile)}` } : {}) }) } : {}),
    // Tool label values are the policy's tool names: they follow it.
    ...(config.metrics?.toolLabels && metrics ? { onReloaded: (policy: PolicyDefinition) => metrics.guard.setToolLabels(Object.keys(policy.tools ?? {})) } : {}),
  });
  reloadPolicy = (trigger = 'call') => {
    if (http.shuttingDown) return Promise.resolve({ reloaded: false, reason: 'the gateway is shutting down' });
    // A reload reads the pins again too (an operator who edited the pin file reloads it as the policy), first: the
    // new pins are in force when the reload resolves. Reading them never rejects.
    return pins ? pins.reload(trigger).then(() => reload(trigger)) : reload(trigger);
  };
  return { url, resource: guard.resource, server: http.server, proxy, guard, pipeline, reportPolicyCoverage: reportCoverage, reloadPolicy, ...(parts.metricsListener ? { metricsUrl: parts.metricsListener.url } : {}), shutdown };
}

/** Writes an event object (its `event`, then its other fields) as one log line, with its time. */
function eventLine(sink: LineSink): (line: object) => void {
  return ({ event, ...fields }: { event?: unknown }) => writeSafely(sink, formatLogLine(String(event), fields));
}

/** The default request log sink: stdout, one line each. */
const writeLineToStdout: LineSink = (line) => void process.stdout.write(`${line}\n`);
/** Where a line below the log level goes. */
const ignoreLine: LineSink = () => {};

/**
 * The gateway's HTTP server: it listens before the gateway behind it is built (so that a default resource names the
 * real port), answers 503 until then, and hands every request to {@link GatewayHttpServer.handler} after.
 */
class GatewayHttpServer {
  readonly server: Server;
  /** The built gateway's request handler; undefined while it is built. */
  handler: ((req: IncomingMessage, res: ServerResponse) => void) | undefined;
  /** Set when shutdown starts: health checks answer 503 `stopping` from then on. */
  shuttingDown = false;

  constructor(maxConnectionsPerAddress: number, warn: LineSink) {
    this.server = createServer({ headersTimeout: HEADERS_TIMEOUT_MS, connectionsCheckingInterval: CONNECTIONS_CHECKING_INTERVAL_MS }, (req, res) => {
      if (this.handler) this.handler(req, res);
      else res.writeHead(503, { 'Content-Length': '0', 'Retry-After': '1' }).end();
    });
    answerClientErrors(this.server);
    limitConnectionsPerAddress(this.server, maxConnectionsPerAddress, rateLimitedWarning(warn));
  }

  /** Listens; resolves with the port listened on (the real one for port 0). @throws the listen error. */
  async listen(port: number, host: string): Promise<number> {
    this.server.listen(port, host);
    await Promise.race([
      once(this.server, 'listening'),
      once(this.server, 'error').then(([error]) => {
        throw error;
      }),
    ]);
    return (this.server.address() as AddressInfo).port;
  }

  /** Ends every connection and stops listening, for a start-up that failed: nothing may be left listening. */
  async abandon(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

/** What {@link buildGateway} is given. */
interface GatewayBuildContext {
  readonly config: GatewayConfig;
  readonly options: StartGatewayOptions;
  readonly log: LineSink;
  readonly warn: LineSink;
  readonly http: GatewayHttpServer;
  /** The port listened on, which a default resource names. */
  readonly port: number;
  readonly stdioStarts: StdioStartOutcomes;
  readonly policyFile: string | undefined;
  /** Called when the watched policy file changes (`MCP_AUTH_POLICY_WATCH`). */
  onPolicyFileChange(): void;
}

/** The built gateway: what the running gateway exposes and what shutdown closes. */
interface GatewayParts {
  readonly guard: Guard;
  readonly pipeline: RequestPipeline;
  readonly proxy: Upstream;
  readonly metrics: GatewayMetrics | undefined;
  readonly metricsListener: MetricsListener | undefined;
  readonly redisStores: RedisStores | undefined;
  readonly policyWatch: PolicyFileWatch | undefined;
  /** Writes a stdio process's own log event (started, exited, stderr) where the request log goes. */
  readonly childLog: (event: ChildLogEvent) => void;
  /** The gateway's credentials for the HTTP upstream, built once for the proxy and the coverage listings. */
  readonly upstreamCredentials: UpstreamCredentials | undefined;
  /** The server set, with a configuration file's servers (then `proxy` is it). */
  readonly serverSet: ReturnType<typeof BuildServerSet> | undefined;
  /** Its policies (the gateway-wide one and each server's), with a configuration file's servers. */
  readonly serverPolicy: ServerSetPolicy | undefined;
  /** Connected accounts (their token store and pages), when an upstream is in connected mode. */
  readonly connected: ConnectedAccounts | undefined;
  /** The pinned tool definitions (`MCP_AUTH_PINS` warn or enforce). */
  readonly pins: ToolPins | undefined;
}

/**
 * Builds the gateway behind the listening server: metrics, the request log, the upstream, the shared stores, the
 * guard, the pipeline and readiness, then hands requests to it. Any of them may still refuse the configuration: then
 * what was opened is closed, the server included, and the error is thrown.
 */
async function buildGateway(context: GatewayBuildContext): Promise<GatewayParts> {
  const { config, options, http } = context;
  const opened: { proxy?: Upstream; redisStores?: RedisStores; policyWatch?: PolicyFileWatch; connected?: ConnectedAccounts; pins?: ToolPins } = {};
  try {
    const guardOptions =
      config.resourceIsDefault && context.port !== config.port
        ? loadGatewayGuardOptions(config.settings, { resource: defaultResource(config.host, context.port) })
        : config.guard;
    const metrics = config.metrics ? await loadGatewayMetrics(config.metrics, guardOptions, () => opened.proxy?.sessions, config.servers) : undefined;
    // Off (MCP_AUTH_REQUEST_LOG, or a level above info), no line is made; the metrics still get each entry.
    const requestLines = config.guard.requestLog !== false && context.log !== ignoreLine;
    const requestLog = createRequestLog({ write: requestLines ? context.log : null, ...(metrics ? { onEntry: metrics.onEntry } : {}) });
    // Sealed session ids are bound to the resource too: every replica of one gateway serves the same one.
    const resource = canonicalizeResourceUri(guardOptions.resource, 'MCP_AUTH_RESOURCE');
    // The processes' own lines (started, exited, stderr) go where the request log goes, one JSON line each.
    const childLog: (event: ChildLogEvent) => void = eventLine(context.log);
    // Loaded only when an upstream is in connected mode, as the server set's code is.
    const connected = (opened.connected = config.connectedAccounts ? await openGatewayConnectedAccounts(config, config.connectedAccounts, resource, context.log, context.warn, options.connectedRecordsRevalidateMs) : undefined);
    // Built once: the proxy sends it, and the policy check's listing of the upstream uses it too.
    const upstreamCredentials = options.upstreamCredentials ?? (config.upstreamAuth ? createUpstreamCredentials(config.upstreamAuth, connected && (() => connected.credentials(''))) : undefined);
    // The server set's code is loaded only for a configuration file with servers: a single upstream never loads it.
    const setModule = config.servers ? await import('../multiplex/build-server-set.js') : undefined;
    const givenServerCredentials = options.serverCredentials ?? (connected && config.servers ? connectedServerCredentials(config.servers, connected) : undefined);
    // With several servers, each one's credentials and process starts, shared by its upstream and readiness.
    const serverResources = config.servers && setModule ? new Map(config.servers.map((server) => [server.name, serverResourcesOf(server, setModule.createServerResources, givenServerCredentials)])) : undefined;
    // The guard is built after the set (its policy needs the set's routes); the set's second decisions use it then.
    let built: Guard | undefined;
    const recheck = (message: JsonRpcMessage, auth: AuthInfo, req?: IncomingMessage, server?: string): GuardHttpResponse | undefined => (built ? decideAgain(built, message, auth, req, server) : undefined);
    // A server whose own requiredScopes the caller lacks is never contacted for it (under the policy in force).
    const mayReach = (server: string, auth: AuthInfo): boolean => !built || mayReachServer(built.policy, server, auth);
    // Loaded only with pins on (MCP_AUTH_PINS warn or enforce): off, nothing is digested and no upstream is wrapped.
    const pinsModule = config.pins && config.pins.mode !== 'off' ? await import('../pins/open-pin-store.js') : undefined;
    const pins = (opened.pins = await pinsModule?.startToolPins(config, { resource, log: context.log, warn: context.warn, ...(metrics ? { onMismatch: metrics.onPinMismatch } : {}) }));
    const serverSet = config.servers && setModule ? setModule.buildServerSet(config.servers, { ...serverSetParts(config, context, { requestLog, childLog, metrics, resource, serverResources }), recheck, mayReach, ...(connected ? { connectedLists: connected.lists } : {}), ...(pins ? { pins } : {}) }) : undefined;
    const single = serverSet ? undefined : createUpstream(config, { requestLog, childLog, stdioStarts: context.stdioStarts, resource, upstreamCredentials, metrics });
    const pinned = serverSet ?? (pins && pinsModule ? await pinsModule.withSingleUpstreamPins(single!, pins) : single!);
    const proxy = (opened.proxy = pins?.mode === 'enforce' && pinsModule ? await pinsModule.withStartupComparisonWait(pinned, pins, config) : pinned);
    const redisStores = (opened.redisStores = config.redis ? await openRedisStores(config, config.redis, resource, context.warn) : undefined);
    // With several servers the guard holds the policy set: the gateway-wide policy and each server's own.
    const serverPolicy = config.servers && serverSet ? new ServerSetPolicy(config.servers, (uri) => serverSet.serverOfResource(uri), ruleErrorWarnings(context.warn)) : undefined;
    const gatewaySource = context.policyFile !== undefined ? `policy file ${resolvePath(context.policyFile)}` : undefined;
    const guardPolicy = serverPolicy ? { ...guardOptions, policy: serverPolicy.compile(policyDefinitionOf(guardOptions.policy), gatewaySource ? { gatewaySource } : {}) } : guardOptions;
    // The guard's own warnings (a policy rule that could not be decided) go where the gateway's warnings go.
    const guardLogged: GuardOptions = guardPolicy.logger ? guardPolicy : { ...guardPolicy, logger: { info: context.log, warn: context.warn } };
    const guard = (built = createGatewayGuard(config, pins ? await withPinsHidden(guardLogged, pins, config.servers) : guardLogged, requestLog, metrics, redisStores));
    const pipeline = createRequestPipeline(guard, proxy);
    // Node's own bound on receiving a whole request, a backstop behind the pipeline's body timeout (408 with a
    // JSON-RPC body): the headers, then the body, then a margin. Its default (300 s) would let slow bodies in
    // requests the pipeline does not read (other paths) hold a connection for minutes.
    http.server.requestTimeout = HEADERS_TIMEOUT_MS + guard.options.bodyTimeoutMs + REQUEST_TIMEOUT_MARGIN_MS;
    const readiness = createReadinessCheck({
      guard,
      ...(config.proxy ? { proxy: config.proxy } : {}),
      ...(upstreamCredentials ? { credentials: upstreamCredentials } : {}),
      ...(config.stdio ? { stdio: config.stdio, stdioStarts: context.stdioStarts } : {}),
      ...(config.servers && serverResources ? { servers: serverReadinessTargets(config.servers, serverResources) } : {}),
      ...(config.servers && metrics ? { onServerProbed: metrics.onServerProbed } : {}),
      ...(connected ? { tokenStore: () => connected.storeReachable() } : {}),
      cacheMs: options.readinessCacheMs ?? DEFAULT_READINESS_CACHE_MS,
    });
    if (config.policyWatch && context.policyFile !== undefined) {
      opened.policyWatch = watchPolicyFile({
        file: context.policyFile,
        onChange: context.onPolicyFileChange,
        onError: (error) => emitWarning(context.warn, 'the policy file is no longer watched; reload it with SIGHUP', { detail: (error as NodeJS.ErrnoException).code ?? 'error' }),
      });
    }
    const metricsListener = config.metrics && metrics ? await startMetricsListener({ ...config.metrics, registry: metrics.registry }) : undefined;
    // Last, with nothing awaited after it: the CLI begins its start-up listing (which the pins in enforce hold calls
    // for) before the first request can be served.
    http.handler = gatewayRequestHandler(http, pipeline, readiness, requestLog, connected?.pages);
    return { guard, pipeline, proxy, metrics, metricsListener, redisStores, policyWatch: opened.policyWatch, childLog, upstreamCredentials, serverSet, serverPolicy, connected, pins };
  } catch (error) {
    opened.policyWatch?.close();
    await opened.pins?.close();
    await http.abandon();
    await opened.proxy?.close();
    await opened.redisStores?.close();
    await opened.connected?.close();
    throw error;
  }
}

/** The gateway's metrics, loaded only when they are on: a gateway without them never loads prom-client. */
async function loadGatewayMetrics(config: NonNullable<GatewayConfig['metrics']>, guardOptions: GuardOptions, sessions: () => number | undefined, servers: readonly ServerConfig[] | undefined): Promise<GatewayMetrics> {
  const { createGatewayMetrics } = await import('./gateway-metrics.js');
  return createGatewayMetrics({
    sessions,
    ...(config.toolLabels ? { toolLabels: Object.keys(policyDefinitionOf(guardOptions.policy)?.tools ?? {}) } : {}),
    // With several servers the upstream metrics carry a `server` label: label names are fixed when a metric is made.
    ...(servers ? { servers: servers.map((server) => server.name) } : {}),
  });
}

/** A server's resources: those its configuration describes, with the credentials given in their place, if any. */
/** Connected accounts, opened for the gateway: its page events are log lines like the processes' own. */
async function openGatewayConnectedAccounts(config: GatewayConfig, connectedConfig: ConnectedAccountsConfig, resource: string, log: LineSink, warn: LineSink, revalidateAfterMs: number | undefined): Promise<ConnectedAccounts> {
  const { openConnectedAccounts } = await import('../connected/connected-accounts.js');
  const { connectedUpstreamsOf } = await import('../connected/open-connections.js');
  return openConnectedAccounts({
    config: connectedConfig,
    resource,
    upstreams: connectedUpstreamsOf(config),
    ...(revalidateAfterMs !== undefined ? { recordsRevalidateAfterMs: revalidateAfterMs } : {}),
    ...(config.redis ? { redis: config.redis } : {}),
    log,
    warn,
  });
}

/** The credentials of each server of a file in connected mode. */
function connectedServerCredentials(servers: readonly ServerConfig[], connected: ConnectedAccounts): ReadonlyMap<string, UpstreamCredentials> {
  return new Map(servers.filter((server) => server.upstreamAuth?.mode === 'connected').map((server) => [server.name, connected.credentials(server.name)]));
}

function serverResourcesOf(server: ServerConfig, create: (server: ServerConfig) => ServerResources, given: ReadonlyMap<string, UpstreamCredentials> | undefined): ServerResources {
  const credentials = server.stdio ? undefined : given?.get(server.name);
  return credentials ? { ...create({ ...server, upstreamAuth: undefined }), credentials } : create(server);
}

/** What readiness probes of each server: its options, and the very credentials and start outcomes its upstream uses. */
function serverReadinessTargets(servers: readonly ServerConfig[], resources: ReadonlyMap<string, ServerResources>): ServerReadinessTarget[] {
  return servers.map((server) => {
    const shared = resources.get(server.name);
    return {
      name: server.name,
      required: server.required,
      ...(server.proxy ? { proxy: server.proxy } : {}),
      ...(server.stdio ? { stdio: server.stdio } : {}),
      ...(shared?.credentials ? { credentials: shared.credentials } : {}),
      ...(shared?.stdioStarts ? { stdioStarts: shared.stdioStarts } : {}),
    };
  });
}

/** The upstream handler: the stdio upstream with its processes, or the HTTP proxy. */
function createUpstream(
  config: GatewayConfig,
  parts: {
    requestLog: RequestLog;
    childLog: (event: ChildLogEvent) => void;
    stdioStarts: StdioStartOutcomes;
    resource: string;
    upstreamCredentials: UpstreamCredentials | undefined;
    metrics: GatewayMetrics | undefined;
  },
): Upstream {
  const { requestLog, upstreamCredentials, metrics } = parts;
  const hooks = { onUpstreamError: requestLog.onUpstreamError, onSessionRefused: requestLog.onSessionRefused, onAnsweredInstead: requestLog.onAnsweredInstead };
  const sessionSealer = config.sessionSeal ? createSessionSealer({ ...config.sessionSeal, resource: parts.resource }) : undefined;
  if (config.stdio) {
    return createStdioUpstream({ ...config.stdio, ...hooks, log: parts.childLog, stdioStarts: parts.stdioStarts, ...(sessionSealer ? { sessionSealer } : {}) });
  }
  return createUpstreamProxy({
    ...config.proxy!,
    ...hooks,
    ...(sessionSealer ? { sessionSealer } : {}),
    ...(upstreamCredentials ? { credentials: upstreamCredentials } : {}),
    ...(metrics ? { onExchangeEnd: metrics.onExchangeEnd } : {}),
    serverInfo: { name: 'mcp-oauth-guard', version: packageVersion() },
  });
}

/** What the server set of a configuration file's servers gets from the gateway around it. */
function serverSetParts(
  config: GatewayConfig,
  context: GatewayBuildContext,
  built: { requestLog: RequestLog; childLog: (event: ChildLogEvent) => void; metrics: GatewayMetrics | undefined; resource: string; serverResources: ReadonlyMap<string, ServerResources> | undefined },
): ServerSetParts {
  const { requestLog, childLog, metrics, resource, serverResources } = built;
  return {
    hooks: { onUpstreamError: requestLog.onUpstreamError, onSessionRefused: requestLog.onSessionRefused, onAnsweredInstead: requestLog.onAnsweredInstead },
    childLog,
    stdioStarts: context.stdioStarts,
    warn: context.warn,
    info: { name: 'mcp-oauth-guard', version: packageVersion() },
    ...(config.listTimeoutMs !== undefined ? { listTimeoutMs: config.listTimeoutMs } : {}),
    ...(config.sessionSeal ? { cursorSecrets: config.sessionSeal.keys.map((k) => k.key), sessionSealer: createSessionSealer({ ...config.sessionSeal, resource }) } : {}),
    ...(serverResources ? { resources: serverResources } : {}),
    ...(config.clientSessions ? { sessionLimits: config.clientSessions } : {}),
    onRouted: requestLog.onServerRouted,
    ...(metrics ? { exchangeEndOf: metrics.exchangeEndOf, onListFailure: metrics.onListFailure } : {}),
  };
}

/** The rate-limit and DPoP replay stores shared through Redis (`MCP_AUTH_REDIS_URL`). */
async function openRedisStores(config: GatewayConfig, redis: NonNullable<GatewayConfig['redis']>, resource: string, warn: LineSink): Promise<RedisStores> {
  // Loaded only with a Redis URL: ioredis and rate-limiter-flexible are optional dependencies.
  const { createRedisStores } = await import('../../redis/redis-stores.js');
  return createRedisStores({
    ...redis,
    // Counts per resource unless MCP_AUTH_REDIS_KEY_PREFIX says otherwise: MCP servers sharing a Redis count apart.
    resource,
    names: { url: 'MCP_AUTH_REDIS_URL', failure: 'MCP_AUTH_REDIS_FAIL' },
    ...(config.dpopReplayCache?.maxEntriesPerCaller !== undefined ? { replayCacheMaxPerCaller: config.dpopReplayCache.maxEntriesPerCaller } : {}),
    onWarning: (message) => emitWarning(warn, message),
  });
}

/** The guard, with the gateway's stores, metrics hooks and request log added to the options it was configured with. */
/** The guard's options with the tools the pins hide answered as unknown before the policy decides (and any hidden already). */
async function withPinsHidden(guardOptions: GuardOptions, pins: ToolPins, servers: readonly ServerConfig[] | undefined): Promise<GuardOptions> {
  const { pinsHiddenTarget } = await import('../pins/pin-hidden-target.js');
  const hiddenByPins = pinsHiddenTarget(pins, servers?.map((server) => server.name));
  const given = guardOptions.hiddenTarget;
  return { ...guardOptions, hiddenTarget: given ? (message) => hiddenByPins(message) ?? given(message) : hiddenByPins };
}

function createGatewayGuard(config: GatewayConfig, guardOptions: GuardOptions, requestLog: RequestLog, metrics: GatewayMetrics | undefined, redisStores: RedisStores | undefined): Guard {
  const userHook = guardOptions.onDecision;
  return createGuard(
    {
      ...guardOptions,
      ...(redisStores ? { rateLimiter: redisStores.rateLimiter, dpopReplayCache: redisStores.replayCache } : {}),
      // The settings size the per-process replay cache; an application's own cache (guard options) wins.
      ...(!redisStores && config.dpopReplayCache && guardOptions.dpopReplayCache === undefined ? { dpopReplayCache: createMemoryReplayCache(config.dpopReplayCache) } : {}),
      ...(metrics ? { onTokenVerification: metrics.guard.hooks.onTokenVerification, onJwksFetch: metrics.guard.hooks.onJwksFetch, onAuditDropped: metrics.guard.hooks.onAuditDropped } : {}),
      onDecision: (event: DecisionEvent, request?: DecisionRequest) => {
        requestLog.onDecision(event, request);
        userHook?.(event, request);
      },
    },
    // Nested options too (introspection.cacheTtlSeconds): a warning at run time names the variable to change.
    ENV_OPTION_VARIABLES,
  );
}

/**
 * The gateway's request handler. Plain node:http: the gateway serves four kinds of path (the pipeline's, the
 * connected accounts' pages, the health checks, anything else a 404), and a router would only add work per request.
 */
function gatewayRequestHandler(http: GatewayHttpServer, served: RequestPipeline, readiness: ReadinessCheck, requestLog: RequestLog, pages?: (req: IncomingMessage, res: ServerResponse) => boolean): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) =>
    requestLog.middleware(req, res, () => {
      if (served.serve(req, res)) return;
      // The connect and connections pages (connected accounts): served beside the endpoint, on the same origin.
      if (pages?.(req, res)) return;
      if (requestPath(req) === '/healthz' && (req.method === 'GET' || req.method === 'HEAD')) {
        writeJson(res, http.shuttingDown ? 503 : 200, { status: http.shuttingDown ? 'stopping' : 'ok' });
        return;
      }
      if (requestPath(req) === '/readyz' && (req.method === 'GET' || req.method === 'HEAD')) {
        if (http.shuttingDown) {
          writeJson(res, 503, { status: 'stopping' });
          return;
        }
        void readiness.check().then((report) => {
          if (res.writableEnded) return;
          const status = report.ready ? 'ready' : 'not_ready';
          const { ready: _, ...parts } = report;
          writeJson(res, report.ready ? 200 : 503, { status, ...parts });
        });
        return;
      }
      writeJson(res, 404, NOT_FOUND);
    });
}

/** Message of the warning that sealed sessions have no per-caller bound. */
const SEALED_SESSIONS_UNBOUNDED =
  'sessions are sealed (MCP_AUTH_SESSION_SECRET) and no rate limit is set: nothing bounds how many upstream sessions a caller opens, as each initialize opens one; set MCP_AUTH_RATE_LIMIT (e.g. 120/min), or bound sessions at the upstream';

/** Message of the warning that a pin file is set while pins are off. */
const PIN_FILE_WITHOUT_PINS = 'MCP_AUTH_PIN_FILE (--pin-file) has no effect while pins are off: set MCP_AUTH_PINS to warn or enforce to use it, or unset it';

/**
 * The warnings of a gateway that has started: sessions nothing bounds, a pin file while pins are off, and (once
 * known) a failed issuer discovery.
 */
function warnAboutStart(config: GatewayConfig, guard: Guard, warn: LineSink): void {
  // Sealed ids leave nothing per session on the gateway, so its per-process session limits cannot apply.
  if (config.sessionSeal && (config.proxy || config.servers) && config.guard.rateLimit === undefined) emitWarning(warn, SEALED_SESSIONS_UNBOUNDED);
  // Not an error: pins may be off for a while, their file kept for when they are back on (and the pins commands use it).
  if (config.pins?.mode === 'off') emitWarning(warn, PIN_FILE_WITHOUT_PINS, { setting: 'MCP_AUTH_PIN_FILE' });
  guard.ready().catch((error: unknown) => {
    // `message` stays the same for log alerts; `detail` says which URL answered what (URLs only, never a token).
    emitWarning(warn, discoveryFailureWarning(error, guard.options.issuers.length), { detail: explainFailure(error) });
  });
}

/** Coverage listings in progress: shutdown stops them, so that no listing process outlives the gateway. */
class CoverageListings {
  private readonly running = new Set<Promise<PolicyCoverageReport>>();
  private readonly aborter = new AbortController();

  /** Aborted when shutdown starts. */
  get signal(): AbortSignal {
    return this.aborter.signal;
  }

  /** Holds `report` until it settles; returns it. */
  track(report: Promise<PolicyCoverageReport>): Promise<PolicyCoverageReport> {
    this.running.add(report);
    void report.finally(() => this.running.delete(report));
    return report;
  }

  abort(): void {
    this.aborter.abort();
  }

  /** Resolves once every listing in progress has settled. */
  async settled(): Promise<void> {
    await Promise.allSettled([...this.running]);
  }
}

/**
 * The graceful shutdown (see {@link RunningGateway.shutdown}): stop accepting, end GET streams, let requests in
 * progress finish within `shutdownTimeoutMs`, close the upstream, the listings and the stores, then the server.
 */
async function shutdownGateway(config: GatewayConfig, http: GatewayHttpServer, parts: GatewayParts, listings: CoverageListings): Promise<void> {
  const { server } = http;
  const upstream = parts.proxy;
  http.shuttingDown = true;
  parts.policyWatch?.close();
  listings.abort();
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  server.closeIdleConnections();
  upstream.endStreams('get');
  const deadline = Date.now() + config.shutdownTimeoutMs;
  while (upstream.inFlight > 0 && Date.now() < deadline) await delay(25);
  // A stdio upstream resolves once every process it started has exited; so do the listings.
  await upstream.close();
  await listings.settled();
  await parts.redisStores?.close();
  await parts.connected?.close();
  await parts.pins?.close();
  // Answers just ended still need a moment to flush before their connections go.
  await waitBounded(closed, { timeoutMs: 500 });
  server.closeAllConnections();
  await closed;
  // Every answer has ended: the audit records they made are written before the process goes.
  await parts.pipeline.close();
  // Last, so that the drain itself can be watched.
  await parts.metricsListener?.close();
}

/**
 * Time to receive a request's headers, in milliseconds. Node's default (60 s) lets a client trickling header bytes
 * hold a connection for a minute; real clients send their headers in one packet.
 */
export const HEADERS_TIMEOUT_MS = 10_000;
/** Added to the header and body timeouts for Node's whole-request timeout, in milliseconds. */
const REQUEST_TIMEOUT_MARGIN_MS = 5_000;
/** How often Node checks the header and request timeouts, in milliseconds; its default (30 s) is coarser than them. */
const CONNECTIONS_CHECKING_INTERVAL_MS = 1_000;
/** Least time between two warnings about refused connections, in milliseconds. */
const REFUSED_WARNING_INTERVAL_MS = 60_000;

/**
 * A warning line for refused connections, at most one per {@link REFUSED_WARNING_INTERVAL_MS}: a flood of refused
 * connections must not become a flood of log lines. Each line counts the refusals since the previous one.
 */
function rateLimitedWarning(warn: LineSink): (refused: RefusedConnection) => void {
  let lastWarningAt = -Infinity;
  let unreported = 0;
  return ({ address, limit }) => {
    unreported++;
    const now = Date.now();
    if (now - lastWarningAt < REFUSED_WARNING_INTERVAL_MS) return;
    lastWarningAt = now;
    emitWarning(
      warn,
      `connections refused: more than ${limit} open from one client address (MCP_AUTH_MAX_CONNECTIONS_PER_ADDRESS; 0 behind a reverse proxy)`,
      { address, refused: unreported },
      new Date(now),
    );
    unreported = 0;
  };
}

const NOT_FOUND = { jsonrpc: '2.0', id: null, error: { code: JsonRpcErrorCode.MethodNotFound, message: 'Not found: the MCP endpoint is at the path of the resource URL' } };

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}
