#!/usr/bin/env node
/**
 * `mcp-oauth-guard`: the gateway command. Reads settings from flags and the environment (`--help` lists
 * them), sets V8's heap growing factor for a proxy (`tuneHeapForProxying`), starts the gateway, reloads its policy
 * file on SIGHUP, and shuts it down gracefully on SIGTERM or SIGINT, or, started by `npx`, once npm has exited
 * (`cli/stop-triggers.ts`).
 *
 * Exit codes: 0 after a graceful shutdown, `--help` or `--version`; 1 when the server cannot start (e.g. the port is
 * taken); 2 on a configuration error, reported without a stack trace: every bad flag and setting at once (an
 * `MCP_AUTH_*` variable that is no setting included), each naming the setting and the fix.
 *
 * `mcp-oauth-guard check [--json] [--strict] [--token-file <file|->]` reads the same settings, checks what they point
 * at (issuers, keys, introspection, upstream, policy, and a token when given), prints a report and exits 0, 1 or 2
 * (see `cli/check/check-command.ts`, docs/check.md).
 *
 * `mcp-oauth-guard connections revoke --subject <sub> [--issuer <url>] [--server <name>]` reads the same settings and
 * revokes (RFC 7009) and deletes every connected account of that user; exit 0, 1 when one could not be deleted, 2 on
 * bad usage (see `cli/connections/connections-command.ts`).
 *
 * `mcp-oauth-guard pins update [--server <name>]` and `mcp-oauth-guard pins accept <server> <tool>` read the same
 * settings, list the upstreams and write the pinned tool definitions (see `cli/pins/pins-command.ts`, docs/tool-pins.md).
 */
import { ConfigurationError } from '../core/kernel/errors.js';
import { ConfigurationProblems } from '../core/kernel/configuration-problems.js';
import { DEFAULT_LOG_LEVEL, logsAt } from '../core/kernel/log-options.js';
import { describeConfigurationError } from './config/configuration-error-line.js';
import { describeConfigFile } from './config/config-file-summary.js';
import { describeOperations } from './config/operations-summary.js';
import { describeUpstream, policyFileOf } from './policy/policy-coverage-report.js';
import { gatewayHelp, loadGatewayConfig, parseGatewayArgs } from './config/gateway-config.js';
import { listenAddresses } from './server/listen-addresses.js';
import { startGateway } from './server/start-gateway.js';
import { tuneHeapForProxying } from './config/heap-growing-factor.js';
import { packageVersion } from './cli/package-version.js';
import { stopOnSignalsAndParentExit } from './cli/stop-triggers.js';

const PROGRAM = 'mcp-oauth-guard';

async function main(): Promise<void> {
  if (process.argv[2] === 'check') {
    // Loaded only for `check`, which the gateway itself never needs.
    const { runCheckCommand } = await import('./cli/check/check-command.js');
    process.exitCode = await runCheckCommand(process.argv.slice(3), process.env);
    return;
  }
  if (process.argv[2] === 'connections') {
    // Loaded only for `connections`, an operator's command the gateway itself never needs.
    const { runConnectionsCommand } = await import('./cli/connections/connections-command.js');
    process.exitCode = await runConnectionsCommand(process.argv.slice(3), process.env);
    return;
  }
  if (process.argv[2] === 'pins') {
    // Loaded only for `pins`, an operator's command the gateway itself never needs.
    const { runPinsCommand } = await import('./cli/pins/pins-command.js');
    process.exitCode = await runPinsCommand(process.argv.slice(3), process.env);
    return;
  }
  // Registered before anything else: without a listener a SIGHUP ends the process, and one may come while the
  // gateway starts (a fleet's reload sent to every replica). One that comes before it serves is done once it
  // does, since the policy file may have changed after start-up read it.
  let reloadPolicy: ((trigger: string) => void) | undefined;
  let reloadWhenServing = false;
  process.on('SIGHUP', () => {
    if (reloadPolicy) reloadPolicy('SIGHUP');
    else reloadWhenServing = true;
  });

  let config;
  try {
    // Bad flags and bad settings are reported together, in one message.
    const problems = new ConfigurationProblems();
    const args = parseGatewayArgs(process.argv.slice(2), process.env, problems);
    if (args.help) {
      process.stdout.write(args.version ? `${packageVersion()}\n` : gatewayHelp());
      return;
    }
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
  reloadPolicy = (trigger) => void gateway.reloadPolicy(trigger);
  if (reloadWhenServing) reloadPolicy('SIGHUP');
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

await main();
