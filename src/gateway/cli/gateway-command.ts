/**
 * The gateway command itself, once its command line has been read (`cli.ts`): loads the configuration, sets V8's heap
 * growing factor, starts the gateway, writes the `listening` line and the policy coverage, and stops on SIGTERM,
 * SIGINT or npm's end. Imported by `cli.ts` only when it serves, so that `--help` and `--version` load none of it;
 * the gateway itself is loaded once the configuration holds, so that a configuration error loads none of it either.
 */
import { ConfigurationError } from '../../core/kernel/errors.js';
import type { ConfigurationProblems } from '../../core/kernel/configuration-problems.js';
import { DEFAULT_LOG_LEVEL, logsAt } from '../../core/kernel/log-options.js';
import { describeConfigurationError } from '../config/configuration-error-line.js';
import { describeConfigFile } from '../config/config-file-summary.js';
import { describeOperations } from '../config/operations-summary.js';
import { loadGatewayConfig, type GatewayConfig } from '../config/gateway-config.js';
import type { GatewayArgs } from '../config/gateway-settings.js';
import { listenAddresses } from '../server/listen-addresses.js';
import { tuneHeapForProxying } from '../config/heap-growing-factor.js';
import { stopOnSignalsAndParentExit } from './stop-triggers.js';

const PROGRAM = 'mcp-oauth-guard';

/**
 * Runs the gateway for the settings `args` gave; resolves once it serves (or has failed to start, with
 * `process.exitCode` set: 1 when it cannot listen, 2 on a configuration error).
 *
 * @param problems - The command line's problems, reported with the settings' in one message.
 * @param serving - Given, once the gateway serves, the function that reloads its policy (for SIGHUP).
 */
export async function runGateway(args: Extract<GatewayArgs, { help: false }>, problems: ConfigurationProblems, serving: (reloadPolicy: (trigger: string) => void) => void): Promise<void> {
  let config: GatewayConfig;
  try {
    const loaded = problems.check(() => loadGatewayConfig(args.settings, { flagSettings: args.flagSettings }));
    problems.throwIfAny();
    config = loaded!;
  } catch (error) {
    if (error instanceof ConfigurationError) {
      reportConfigurationError(error);
      return;
    }
    throw error;
  }

  // Before the gateway allocates anything much: see heap-growing-factor.ts for why a proxy needs it.
  const heapGrowingPercent = tuneHeapForProxying(process.execArgv, config.heapGrowingPercent);
  // Loaded once the configuration holds: a configuration error is reported without loading the gateway.
  const [{ startGateway }, { describeUpstream, policyFileOf }] = await Promise.all([import('../server/start-gateway.js'), import('../policy/policy-coverage-report.js')]);
  let gateway;
  try {
    gateway = await startGateway(config);
  } catch (error) {
    if (error instanceof ConfigurationError) {
      reportConfigurationError(error);
      return;
    }
    const code = (error as NodeJS.ErrnoException).code;
    // A listen error names its port: the metrics listener's is not the gateway's.
    const addresses = listenAddresses(config);
    const { host, port, portSetting } = addresses.find((address) => address.port === (error as { port?: unknown }).port) ?? addresses[0]!;
    const hint = code === 'EADDRINUSE' ? `port ${port} is in use; set ${portSetting.env} or ${portSetting.flag} to a free port` : code === 'EACCES' ? `not allowed to listen on ${host}:${port}` : (error as Error).message;
    process.stderr.write(`${PROGRAM}: cannot start: ${hint}\n`);
    process.exitCode = 1;
    return;
  }
  // The stdio upstream is named by its program only: its arguments may carry what its operator keeps private. The
  // configuration file's servers by name and transport, and where each setting came from: names, never values. The
  // audit trail and the tool pins by mode and path.
  const writeInfo = logsAt(config.guard.logLevel ?? DEFAULT_LOG_LEVEL, 'info');
  if (writeInfo) process.stdout.write(
    `${JSON.stringify({ time: new Date().toISOString(), event: 'listening', url: gateway.url, resource: gateway.resource, issuers: gateway.guard.options.issuers, policy: policyFileOf(config.settings), lists: gateway.guard.options.lists, ...describeUpstream(config), ...describeConfigFile(config), ...describeOperations(config), heapGrowingPercent: heapGrowingPercent ?? null })}\n`,
  );
  // The coverage warnings and the summary line, once the upstream has been listed; serving does not wait for it.
  void reportCoverageWhenListed(gateway);

  // SIGTERM, SIGINT, and npm's end when npm started it: a signal to `npx` may not reach the gateway itself.
  stopOnSignalsAndParentExit(gateway, process.env, writeInfo ? undefined : () => {});
  // SIGHUP reloads the policy (see docs/policy-reloads.md); reloads that overlap are coalesced by the gateway.
  serving((trigger) => void gateway.reloadPolicy(trigger));
}

/** Reports a configuration error on stderr, every problem without a stack trace, and sets exit code 2. */
function reportConfigurationError(error: ConfigurationError): void {
  process.stderr.write(`${PROGRAM}: configuration error: ${describeConfigurationError(error)}\n`);
  process.exitCode = 2;
}

/**
 * Waits between attempts to list the upstream for the policy check while it cannot be listed (it may start after
 * the gateway), in milliseconds: five attempts over about three minutes, each writing its summary line.
 */
const LISTING_RETRY_DELAYS_MS = [2_000, 10_000, 30_000, 120_000];

async function reportCoverageWhenListed(gateway: { reportPolicyCoverage(): Promise<object> }): Promise<void> {
  for (const delayMs of [0, ...LISTING_RETRY_DELAYS_MS]) {
    // Unref'd: a pending retry never keeps the process alive.
    if (delayMs > 0) await new Promise((resolve) => setTimeout(resolve, delayMs).unref());
    const report = await gateway.reportPolicyCoverage();
    if (!('skipped' in report) || ('final' in report && report.final === true)) return;
  }
}

