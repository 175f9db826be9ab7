import { isLoopbackHost } from '../../core/kernel/canonical-resource.js';
import { ConfigurationError } from '../../core/kernel/errors.js';
import { collectConfigurationProblems, type ConfigurationProblems } from '../../core/kernel/configuration-problems.js';
import type { GuardOptions } from '../../core/guard/guard-options.js';
import { loadOptionsFromEnv } from '../../core/guard/load-options-from-env.js';
import { parseSwitchSetting, readSetting } from '../../core/kernel/settings.js';
import type { UpstreamProxyOptions } from '../upstream/http/upstream-proxy.js';
import { loadMetricsConfig, type MetricsConfig } from './metrics-config.js';
import { loadSharedStoreConfig, type SharedStoreConfig } from './shared-store-config.js';
import { loadSessionSealConfig, type SessionSealConfig } from './session-seal-config.js';
import { loadPinsConfig, type PinsConfig } from './pins-config.js';
import { loadConnectedAccountsConfig, type ConnectedAccountsConfig } from './connected-accounts-config.js';
import type { StdioUpstreamOptions } from '../upstream/stdio/stdio-upstream.js';
import type { UpstreamAuthConfig } from '../upstream-auth/upstream-auth-config.js';
import { MAX_HEAP_GROWING_PERCENT, PROXY_HEAP_GROWING_PERCENT } from './heap-growing-factor.js';
import { isObject, readGatewayConfigFile, type GatewayConfigFile } from './config-file.js';
import { mergeFileSettings } from './file-settings.js';
import { DEFAULT_GATEWAY_HOST, DEFAULT_GATEWAY_PORT, DEFAULT_LIST_TIMEOUT_MS, DEFAULT_MAX_CONNECTIONS_PER_ADDRESS, DEFAULT_SHUTDOWN_TIMEOUT_MS, GATEWAY_SETTINGS, STDIO_ONLY_SETTINGS } from './gateway-settings.js';
import { withProblemLabels } from './problem-labels.js';
import { MAX_LIST_TIMEOUT_MS, readServers } from './server-entry.js';
import type { ServerConfig } from './server-config.js';
import { settingSources, type SettingSource } from './setting-sources.js';
import { checkUpstreamChoice, loadUpstreamSettings, readInteger, readIntegerOrOff, readSessionLimits, type SessionLimits } from './upstream-settings.js';

export { DEFAULT_IDENTITY_HEADERS, parseIdentityHeaders } from './upstream-settings.js';
// The settings table and the command line's reading live apart (see gateway-settings.ts); named here as before.
export { DEFAULT_GATEWAY_HOST, DEFAULT_GATEWAY_PORT, DEFAULT_LIST_TIMEOUT_MS, DEFAULT_MAX_CONNECTIONS_PER_ADDRESS, DEFAULT_SHUTDOWN_TIMEOUT_MS, GATEWAY_SETTINGS, gatewayHelp, parseGatewayArgs, type GatewayArgs } from './gateway-settings.js';

/** Everything the gateway needs, validated. */
export interface GatewayConfig {
  /** Interface to listen on. */
  host: string;
  /** TCP port; 0 picks a free one. */
  port: number;
  /** Whether `resource` was derived from HOST and PORT (then a port 0 is replaced by the real one). */
  resourceIsDefault: boolean;
  /** Guard options (issuer, resource, policy, …), as `loadOptionsFromEnv` built them. */
  guard: GuardOptions;
  /** Upstream proxy options, for an HTTP upstream (`MCP_AUTH_UPSTREAM`); absent with a stdio one. */
  proxy?: UpstreamProxyOptions;
  /** Stdio upstream options (`MCP_AUTH_UPSTREAM_COMMAND`); absent with an HTTP upstream. */
  stdio?: StdioUpstreamOptions;
  /** How the gateway authenticates to an HTTP upstream (`MCP_AUTH_UPSTREAM_AUTH`); absent for `none`. */
  upstreamAuth?: UpstreamAuthConfig;
  /** Time a graceful shutdown waits for requests in progress, in milliseconds. */
  shutdownTimeoutMs: number;
  /**
   * V8's heap growing factor as a percent (`MCP_AUTH_HEAP_GROWING_PERCENT`, default 300), which the command passes
   * to `tuneHeapForProxying` before it starts the gateway; `startGateway` does not apply it.
   */
  heapGrowingPercent: number;
  /** The Prometheus metrics listener (`MCP_AUTH_METRICS_PORT`); absent when metrics are off. */
  metrics?: MetricsConfig;
  /** Most open connections per client address (IPv6: per /64); 0 is unlimited. */
  maxConnectionsPerAddress: number;
  /** The Redis shared by replicas for rate limits and DPoP replays (`MCP_AUTH_REDIS_URL`); absent: per process. */
  redis?: SharedStoreConfig;
  /**
   * The DPoP replay cache's size (`MCP_AUTH_DPOP_REPLAY_CACHE_MAX_ENTRIES`, per process only) and each caller's
   * share (`MCP_AUTH_DPOP_REPLAY_CACHE_MAX_PER_CALLER`, per process or in Redis); absent: the defaults.
   */
  dpopReplayCache?: { maxEntries?: number; maxEntriesPerCaller?: number };
  /** Sealed session ids (`MCP_AUTH_SESSION_SECRET`), which any replica opens; absent: sessions live in one process. */
  sessionSeal?: SessionSealConfig;
  /** Whether the policy file is watched and reloaded when it changes (`MCP_AUTH_POLICY_WATCH`); absent: off. */
  policyWatch?: boolean;
  /** Pinned tool definitions (`MCP_AUTH_PINS`, `MCP_AUTH_PIN_FILE`); absent when neither is set. */
  pins?: PinsConfig;
  /** Connected accounts (`MCP_AUTH_TOKEN_STORE`, `MCP_AUTH_LOGIN_*`); present exactly when an upstream is in connected mode. */
  connectedAccounts?: ConnectedAccountsConfig;
  /**
   * Time allowed for each server's part of a merged list, in milliseconds (`MCP_AUTH_LIST_TIMEOUT_MS`, default
   * 5000); a server's own `listTimeoutMs` wins.
   */
  listTimeoutMs: number;
  /**
   * The upstreams of a configuration file's `servers` (`MCP_AUTH_CONFIG`), in the file's order; present exactly when
   * such a file is used, and then `proxy`, `stdio` and `upstreamAuth` are absent.
   */
  servers?: readonly ServerConfig[];
  /**
   * With `servers`: the bounds of clients' sessions with the endpoint (`MCP_AUTH_MAX_SESSIONS`,
   * `MCP_AUTH_MAX_SESSIONS_PER_CALLER`, `MCP_AUTH_SESSION_IDLE_TIMEOUT_MS`), those set; the defaults otherwise.
   */
  clientSessions?: SessionLimits;
  /** The configuration file (`MCP_AUTH_CONFIG`, `--config`), as an absolute path; absent without one. */
  configFile?: string;
  /**
   * Where each setting that is set came from, by variable name: a flag, the environment, or the configuration file.
   * Names only, for the start-up line; never values.
   */
  settingSources?: Readonly<Record<string, SettingSource>>;
  /**
   * The merged settings (environment overlaid by flags, over the configuration file's `gateway` section), to rebuild
   * the guard options for a real port.
   */
  settings: Readonly<Record<string, string | undefined>>;
}

/** Options of {@link loadGatewayConfig}. */
export interface LoadGatewayConfigOptions {
  /**
   * False to accept settings without an upstream, as an application guarded by the library has (the notes
   * example): then `proxy`, `stdio` and `servers` are all absent. For `mcp-oauth-guard check`; the gateway itself
   * cannot start without one. Default true.
   */
  readonly upstreamRequired?: boolean;
  /**
   * The settings given by flags (`parseGatewayArgs`'s `flagSettings`), for `settingSources`; without it every value
   * not from the configuration file counts as the environment's.
   */
  readonly flagSettings?: Iterable<string>;
  /**
   * False for a command that never verifies a token (`pins update`, `pins accept`): `MCP_AUTH_ISSUER` may then be
   * unset, and the guard's other settings are still checked. The configuration then has no issuer (`guard.issuer`
   * and `guard.issuers` absent). Default true.
   */
  readonly issuerRequired?: boolean;
}

/**
 * Builds and validates the gateway's configuration from merged settings: the environment overlaid with the
 * command-line flags, named by their variables (`MCP_AUTH_UPSTREAM`, …), e.g. `process.env` alone.
 * The guard's settings go through `loadOptionsFromEnv`, so every problem is found here, at start-up,
 * and named by its variable: all of them at once, an `MCP_AUTH_*` variable that is no setting included.
 *
 * With `MCP_AUTH_CONFIG` (`--config`), the configuration file is read too (synchronously; a YAML parser is loaded
 * only then): its `gateway` section under the variables and flags (flags > environment > file > default), its
 * `servers` as `servers`. A problem with a value from the file is named by its JSON path (`gateway.port`,
 * `servers.notes.auth.tokenFile`); every problem, wherever it is, is in the one error.
 *
 * @throws ConfigurationError naming each bad setting and its fix, in one message (see its `problems`).
 */
export function loadGatewayConfig(settings: Readonly<Record<string, string | undefined>>, options: LoadGatewayConfigOptions = {}): GatewayConfig {
  // Every check runs, each recording its problem, so that one message names every bad setting.
  return collectConfigurationProblems((problems) => {
    const configPath = readSetting(settings, 'MCP_AUTH_CONFIG');
    const file = configPath === undefined ? undefined : readGatewayConfigFile(configPath, problems);
    // A file that cannot be read or parsed is the one problem to report: every setting it may hold would otherwise
    // be reported missing too (the issuer "is required" when the file sets it), sending the reader the wrong way.
    if (configPath !== undefined && file === undefined) problems.throwIfAny();
    const merged = file === undefined ? { settings, fromFile: new Map<string, string>() } : mergeFileSettings(GATEWAY_SETTINGS, settings, file, problems);
    const gatewayLabel = (setting: string): string => merged.fromFile.get(setting) ?? setting;
    const loaded = problems.check(() =>
      withProblemLabels({ setting: gatewayLabel }, () => collectConfigurationProblems((own) => loadSettings(merged.settings, own, { options, file: configPath === undefined ? undefined : (file ?? 'unreadable'), env: settings, gatewayLabel }))),
    );
    if (configPath !== undefined && file?.servers === undefined && file !== undefined && options.upstreamRequired !== false) {
      problems.add('servers', 'is required in a configuration file: name each upstream, e.g. "servers": {"notes": {"url": "http://127.0.0.1:3001/mcp"}}');
    }
    problems.throwIfAny();
    return {
      ...loaded!,
      ...(file ? { configFile: file.file } : {}),
      settingSources: settingSources(GATEWAY_SETTINGS, merged.settings, options.flagSettings, merged.fromFile),
    };
  });
}

/** What {@link loadSettings} needs besides the merged settings. */
interface LoadContext {
  readonly options: LoadGatewayConfigOptions;
  /** The configuration file, when one is named ('unreadable' when it could not be read: then no upstream is read). */
  readonly file: GatewayConfigFile | 'unreadable' | undefined;
  /** The settings as given (environment and flags), where secrets named by a server are looked up. */
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly gatewayLabel: (setting: string) => string;
}

/** The configuration from merged settings, each problem recorded under its variable. */
function loadSettings(settings: Readonly<Record<string, string | undefined>>, problems: ConfigurationProblems, context: LoadContext): GatewayConfig {
  const host = readSetting(settings, 'HOST') ?? DEFAULT_GATEWAY_HOST;
  const port = problems.check(() => readInteger(settings, 'PORT', 0, 65_535)) ?? DEFAULT_GATEWAY_PORT;
  const metrics = problems.check(() => loadMetricsConfig(settings, port));
  const redis = problems.check(() => loadSharedStoreConfig(settings));
  const httpUpstream = readSetting(settings, 'MCP_AUTH_UPSTREAM') !== undefined && readSetting(settings, 'MCP_AUTH_UPSTREAM_COMMAND') === undefined;
  const sessionSeal = problems.check(() => loadSessionSealConfig(settings, httpUpstream));
  const upstreamContext = { stdioOnlySettings: STDIO_ONLY_SETTINGS, ...(context.options.upstreamRequired !== undefined ? { upstreamRequired: context.options.upstreamRequired } : {}) };
  if (context.file === undefined) checkUpstreamChoice(settings, problems, upstreamContext);
  const resourceIsDefault = readSetting(settings, 'MCP_AUTH_RESOURCE') === undefined;
  if (resourceIsDefault && !isLoopbackHost(host)) {
    // The public URL cannot be guessed from a bind address such as 0.0.0.0, and tokens are checked against it.
    problems.add('MCP_AUTH_RESOURCE', `is required when HOST is not loopback (HOST is ${host}): set it to the public https URL of the gateway's MCP endpoint, e.g. https://mcp.example.com/mcp`);
  }
  const guard = loadGuardSettings(settings, problems, context.options.issuerRequired === false && readSetting(settings, 'MCP_AUTH_ISSUER') === undefined, resourceIsDefault ? { resource: defaultResource(host, port) } : {});
  const shutdownTimeoutMs = problems.check(() => readInteger(settings, 'MCP_AUTH_SHUTDOWN_TIMEOUT_MS', 0, 600_000)) ?? DEFAULT_SHUTDOWN_TIMEOUT_MS;
  const heapGrowingPercent = problems.check(() => readIntegerOrOff(settings, 'MCP_AUTH_HEAP_GROWING_PERCENT', MAX_HEAP_GROWING_PERCENT)) ?? PROXY_HEAP_GROWING_PERCENT;
  const maxConnectionsPerAddress = problems.check(() => readIntegerOrOff(settings, 'MCP_AUTH_MAX_CONNECTIONS_PER_ADDRESS', 1_000_000)) ?? DEFAULT_MAX_CONNECTIONS_PER_ADDRESS;
  const listTimeoutMs = problems.check(() => readInteger(settings, 'MCP_AUTH_LIST_TIMEOUT_MS', 1, MAX_LIST_TIMEOUT_MS)) ?? DEFAULT_LIST_TIMEOUT_MS;
  const replayMaxEntries = problems.check(() => readInteger(settings, 'MCP_AUTH_DPOP_REPLAY_CACHE_MAX_ENTRIES', 1, 100_000_000));
  const replayMaxPerCaller = problems.check(() => readInteger(settings, 'MCP_AUTH_DPOP_REPLAY_CACHE_MAX_PER_CALLER', 1, 100_000_000));
  if (replayMaxEntries !== undefined && readSetting(settings, 'MCP_AUTH_REDIS_URL') !== undefined) {
    problems.add('MCP_AUTH_DPOP_REPLAY_CACHE_MAX_ENTRIES', 'applies to the per-process replay cache only; with MCP_AUTH_REDIS_URL the replay cache is in Redis (bound it with maxmemory): unset it');
  }
  const dpopReplayCache =
    replayMaxEntries === undefined && replayMaxPerCaller === undefined
      ? undefined
      : { ...(replayMaxEntries !== undefined ? { maxEntries: replayMaxEntries } : {}), ...(replayMaxPerCaller !== undefined ? { maxEntriesPerCaller: replayMaxPerCaller } : {}) };
  const { file } = context;
  const pins = problems.check(() => loadPinsConfig(settings));
  const policyWatch = problems.check(() => readPolicyWatch(settings, file !== undefined && file !== 'unreadable' && serversHavePolicyFiles(file)));
  const upstreams =
    file === undefined
      ? loadUpstreamSettings(settings, problems, { guard, ...upstreamContext })
      : file !== 'unreadable' && file.servers !== undefined
        ? {
            servers: readServers({ ...file, servers: file.servers }, { settings, env: context.env, guard, stdioOnlySettings: STDIO_ONLY_SETTINGS, gatewayLabel: context.gatewayLabel }, problems),
            clientSessions: readSessionLimits(settings, problems),
          }
        : {};
  const connected = 'servers' in upstreams && upstreams.servers ? upstreams.servers.filter((s) => s.upstreamAuth?.mode === 'connected').map((s) => s.name) : 'upstreamAuth' in upstreams && upstreams.upstreamAuth?.mode === 'connected' ? [''] : [];
  const connectedAccounts = loadConnectedAccountsConfig(settings, problems, { connected, guard, env: context.env });
  problems.throwIfAny();
  return {
    host,
    port,
    resourceIsDefault,
    guard: guard!,
    shutdownTimeoutMs,
    heapGrowingPercent,
    maxConnectionsPerAddress,
    listTimeoutMs,
    ...(metrics ? { metrics } : {}),
    ...(redis ? { redis } : {}),
    ...(dpopReplayCache ? { dpopReplayCache } : {}),
    ...(sessionSeal ? { sessionSeal } : {}),
    ...(policyWatch ? { policyWatch } : {}),
    ...(pins ? { pins } : {}),
    ...(connectedAccounts ? { connectedAccounts } : {}),
    ...upstreams,
    settings,
  };
}

/**
 * The guard's options from the gateway's settings: `loadOptionsFromEnv`, with the gateway's own settings known,
 * so that only an `MCP_AUTH_*` variable that neither reads is refused as unknown.
 *
 * @throws ConfigurationError naming every bad setting.
 */
export function loadGatewayGuardOptions(settings: Readonly<Record<string, string | undefined>>, defaults: Partial<GuardOptions>): GuardOptions {
  return loadOptionsFromEnv(settings, defaults, { otherSettings: GATEWAY_SETTINGS.map((setting) => setting.env) });
}

/** An issuer no token can come from (RFC 6761 `.invalid`): stands in, for the guard's checks only, when none is needed. */
const UNCHECKED_ISSUER = 'https://issuer.invalid';

/**
 * The guard's options, each problem recorded. Without an issuer (`noIssuer`: a command that verifies no token), one
 * stands in while the other settings are checked, and is removed after: nothing that needs an issuer may see it.
 */
function loadGuardSettings(settings: Readonly<Record<string, string | undefined>>, problems: ConfigurationProblems, noIssuer: boolean, defaults: Partial<GuardOptions>): GuardOptions | undefined {
  const guard = problems.check(() => loadGatewayGuardOptions(settings, noIssuer ? { ...defaults, issuer: UNCHECKED_ISSUER } : defaults));
  if (!noIssuer || guard === undefined) return guard;
  const { issuer: _unchecked, ...withoutIssuer } = guard;
  return withoutIssuer;
}

/** `http://HOST:PORT/mcp`, the resource used when `MCP_AUTH_RESOURCE` is unset (loopback hosts only). */
export function defaultResource(host: string, port: number): string {
  const h = host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
  return `http://${h}:${port}/mcp`;
}

/** `MCP_AUTH_POLICY_WATCH`: on or off; on needs a policy file to watch (the gateway's, or a server's `policyFile`). */
function readPolicyWatch(settings: Readonly<Record<string, string | undefined>>, serverPolicyFiles: boolean): boolean {
  const watch = parseSwitchSetting(readSetting(settings, 'MCP_AUTH_POLICY_WATCH'), 'MCP_AUTH_POLICY_WATCH') ?? false;
  if (watch && readSetting(settings, 'MCP_AUTH_POLICY') === undefined && !serverPolicyFiles) {
    throw new ConfigurationError('MCP_AUTH_POLICY_WATCH', 'has nothing to watch: set MCP_AUTH_POLICY (--policy) to the policy file too, or turn it off');
  }
  return watch;
}

/** Whether a server of the file names a `policyFile`, which a policy watch would watch. */
function serversHavePolicyFiles(file: GatewayConfigFile): boolean {
  return Object.values(file.servers ?? {}).some((entry) => isObject(entry) && entry.policyFile !== undefined);
}
