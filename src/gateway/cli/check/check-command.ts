import { PROCESS_OUTPUT, type CommandOutput } from '../command-output.js';
import { packageVersion } from '../package-version.js';
import { ConfigurationProblems } from '../../../core/kernel/configuration-problems.js';
import { ConfigurationError } from '../../../core/kernel/errors.js';
import { describeConfigurationError } from '../../config/configuration-error-line.js';
import { gatewayHelp, loadGatewayConfig, parseGatewayArgs, type GatewayConfig } from '../../config/gateway-config.js';
import { readSecretFile, STANDARD_INPUT } from '../../config/secret-file.js';
import { checkExitCode } from './check-result.js';
import { checkReportJson, formatCheckReport } from './format-check-report.js';
import { runChecks } from './run-checks.js';
import { takeTokenFile } from '../token-file-flag.js';

/** Where the command writes; default the process's stdout and stderr. */
export type CheckCommandOutput = CommandOutput;

/** Exit code for a configuration error or bad usage, as the gateway's. */
const CONFIGURATION_ERROR_EXIT_CODE = 2;

/**
 * `mcp-oauth-guard check [--json] [--strict] [--token-file <file|->] [settings…]`: reads the settings exactly as the gateway does (its
 * flags and environment variables; an application's, with no upstream, too), runs {@link runChecks} and writes the
 * report. Returns the exit code: 0 when everything would work, 1 when something would make requests fail (with
 * `--strict`, also when something warns), 2 on a configuration error (its message on stderr, as the gateway's).
 *
 * @example
 * process.exitCode = await runCheckCommand(process.argv.slice(3), process.env);
 */
export async function runCheckCommand(argv: readonly string[], env: Readonly<Record<string, string | undefined>>, output: CheckCommandOutput = PROCESS_OUTPUT): Promise<number> {
  const own = new Set(['--json', '--strict']);
  const json = argv.includes('--json');
  const strict = argv.includes('--strict');
  if (argv.includes('--help') || argv.includes('-h')) {
    output.stdout(checkHelp());
    return 0;
  }
  let config: GatewayConfig | undefined;
  let token: string | undefined;
  try {
    // As the gateway does: bad flags and bad settings (a misspelt MCP_AUTH_* variable too) in one message.
    const problems = new ConfigurationProblems();
    const { tokenFile, rest } = takeTokenFile(argv, problems);
    const args = parseGatewayArgs(rest.filter((arg) => !own.has(arg)), env, problems);
    if (args.help) {
      output.stdout(args.version ? `${packageVersion()}\n` : checkHelp());
      return 0;
    }
    config = problems.check(() => loadGatewayConfig(args.settings, { upstreamRequired: false, flagSettings: args.flagSettings }));
    // Read as every secret file is, bounded; "-" is standard input. Never from a flag's value: it would show in
    // process listings.
    if (tokenFile !== undefined) token = problems.check(() => readSecretFile(tokenFile === '-' ? STANDARD_INPUT : tokenFile, '--token-file'));
    problems.throwIfAny();
  } catch (error) {
    if (!(error instanceof ConfigurationError)) throw error;
    const message = describeConfigurationError(error);
    output.stderr(`mcp-oauth-guard check: configuration error: ${message}\n`);
    if (json) output.stdout(`${JSON.stringify({ ok: false, exitCode: CONFIGURATION_ERROR_EXIT_CODE, configurationError: message }, null, 2)}\n`);
    return CONFIGURATION_ERROR_EXIT_CODE;
  }
  // Set, since throwIfAny() threw otherwise.
  const results = await runChecks(config!, token === undefined ? {} : { token });
  const exitCode = checkExitCode(results, strict);
  output.stdout(json ? checkReportJson(results, exitCode) : formatCheckReport(results, exitCode));
  return exitCode;
}

/** `check --help`: its own flags and exit codes, then every setting, as the gateway's `--help` lists them. */
export function checkHelp(): string {
  return [
    'Usage: mcp-oauth-guard check [--json] [--strict] [--token-file <file|->] [flags]',
    '',
    'Checks the settings the gateway would start with, and what they point at, then prints one line per check',
    'with a fix for each problem: the resource URL; the addresses it listens on (HOST and PORT, the metrics',
    'port), each bound for a moment; each issuer\'s metadata (the issuer compared character by character), what',
    'MCP clients require of it (PKCE with S256, the authorization and token endpoints, a way to register a',
    'client) and its signing keys against the allowed algorithms; introspection (a made-up token must be',
    'inactive); the shared store (with MCP_AUTH_REDIS_URL: a DPoP replay claim and a rate-limit count, with the',
    'gateway\'s own Redis client); the upstream (initialize and the lists, with the gateway\'s own upstream',
    'credentials); the policy (tools with no rule, rules that match nothing); with MCP_AUTH_PIN_FILE, each tool',
    'against its pin, field by field. Settings are read exactly as the',
    'gateway reads them; an application that uses the library (no upstream) is checked with its MCP_AUTH_*',
    'variables, HOST and PORT.',
    'Every outbound call waits at most MCP_AUTH_HTTP_TIMEOUT_MS. No token or secret is printed.',
    '',
    '  --json',
    '      Print the report as JSON: { ok, exitCode, failures, warnings, results: [{ check, status, subject,',
    '      message, details, fix }] }.',
    '  --strict',
    '      Exit 1 on warnings too (a tool with no rule, a rule that matches nothing, a scope the authorization',
    '      server does not list).',
    '  --token-file <file|->',
    '      Verify this access token (a file holding it, or - for standard input; never the token itself, which',
    '      would show in process listings) with the gateway\'s own verifier: the refusal the gateway would log',
    '      (issuer, audience, expiry, signature and algorithm), or who it speaks for and, against the policy,',
    '      the tools it may call and those it may not with the scopes each lacks. An upstream that takes only',
    '      tokens exchanged for each caller (token_exchange) is listed as that caller for its pins line. The token',
    '      is never printed.',
    '  --help, -h',
    '      Print this help.',
    '  --version',
    '      Print the version of mcp-oauth-guard.',
    '',
    'Exit codes: 0 when everything would work (warnings allowed), 1 when something would make requests fail',
    '(or, with --strict, warns), 2 on a configuration error (a misspelt MCP_AUTH_* variable among them) or bad usage.',
    '',
    "The settings, as the gateway's --help lists them:",
    '',
    gatewayHelp(),
  ].join('\n');
}
