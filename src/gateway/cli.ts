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
import { ConfigurationProblems } from '../core/kernel/configuration-problems.js';
import { gatewayHelp, parseGatewayArgs } from './config/gateway-settings.js';
import { packageVersion } from './cli/package-version.js';

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

  // Bad flags and bad settings are reported together, in one message: the flags' problems wait for the settings'.
  const problems = new ConfigurationProblems();
  const args = parseGatewayArgs(process.argv.slice(2), process.env, problems);
  if (args.help) {
    process.stdout.write(args.version ? `${packageVersion()}\n` : gatewayHelp());
    return;
  }
  // Loaded only to serve: `--help` and `--version` need none of the gateway.
  const { runGateway } = await import('./cli/gateway-command.js');
  await runGateway(args, problems, (reload) => {
    reloadPolicy = reload;
    if (reloadWhenServing) reload('SIGHUP');
  });
}

await main();
