/**
 * `mcp-oauth-guard pins update [--server <name>]` and `mcp-oauth-guard pins accept <server> <tool>`: the operator's
 * commands for pinned tool definitions. Each reads the gateway's own settings (flags, environment, `--config`),
 * lists the upstreams as the gateway itself (as `check` does), and writes the pins to the pin file or the shared
 * store (`MCP_AUTH_PIN_FILE`), which a running gateway re-reads within seconds.
 */
import { answerHelpOrVersion, PROCESS_OUTPUT, type CommandOutput } from '../command-output.js';
import { canonicalizeResourceUri } from '../../../core/kernel/canonical-resource.js';
import { ConfigurationProblems } from '../../../core/kernel/configuration-problems.js';
import { ConfigurationError } from '../../../core/kernel/errors.js';
import { isOff, readSetting } from '../../../core/kernel/settings.js';
import { describeConfigurationError } from '../../config/configuration-error-line.js';
import { checkPinFile } from '../../config/pins-config.js';
import { gatewayHelp, loadGatewayConfig, parseGatewayArgs, type GatewayConfig } from '../../config/gateway-config.js';
import { compareListing, unlistedPins } from '../../pins/compare-listing.js';
import { listServerTools } from '../../pins/list-server-tools.js';
import { openPinStore } from '../../pins/open-pin-store.js';
import { describeDifferences, pinDifferences } from '../../pins/pin-diff.js';
import { pinnableToolName, pinOf, type PinSet } from '../../pins/pin-document.js';
import type { PinChange, PinStore } from '../../pins/pin-store.js';
import { digestMatches, digestTool, shortDigest } from '../../pins/tool-digest.js';
import { readSecretFile, STANDARD_INPUT } from '../../config/secret-file.js';
import { takeTokenFile } from '../token-file-flag.js';

/** Where the command writes; default the process's stdout and stderr. */
export type PinsCommandOutput = CommandOutput;

const PROGRAM = 'mcp-oauth-guard pins';
/** Exit code for a configuration error or bad usage, as the gateway's. */
const USAGE_EXIT_CODE = 2;
/** Time allowed for each listing request, in milliseconds. */
const LISTING_TIMEOUT_MS = 10_000;

/** What a run is asked to do, its settings read. */
type PinsRequest = (
  | { readonly action: 'update'; readonly config: GatewayConfig; readonly server?: string }
  | { readonly action: 'accept'; readonly config: GatewayConfig; readonly server: string; readonly tool: string; readonly digest?: string }
) & {
  /** A caller's access token (`--token-file`): an upstream that takes only tokens exchanged for each caller is listed as that caller. */
  readonly callerToken?: string;
};

/**
 * Runs `pins <argv…>`. Returns the exit code: 0 when the pins were written; 1 when a server could not be listed, the
 * tool to accept is not listed, or the store could not be written; 2 on bad usage or a configuration error.
 *
 * @example
 * process.exitCode = await runPinsCommand(['accept', 'notes', 'add'], process.env);
 */
export async function runPinsCommand(argv: readonly string[], env: Readonly<Record<string, string | undefined>>, output: PinsCommandOutput = PROCESS_OUTPUT): Promise<number> {
  if (answerHelpOrVersion(argv, output, pinsHelp)) return 0;
  let request: PinsRequest;
  let store: PinStore;
  try {
    ({ request, store } = await openPinsRequest(argv, env));
  } catch (error) {
    if (!(error instanceof ConfigurationError)) throw error;
    output.stderr(`${PROGRAM}: ${describeConfigurationError(error)}\nRun ${PROGRAM} --help for the usage.\n`);
    return USAGE_EXIT_CODE;
  }
  try {
    return request.action === 'update' ? await update(request, store, output) : await accept(request, store, output);
  } catch (error) {
    output.stderr(`${PROGRAM}: the pins could not be read or written (${error instanceof ConfigurationError ? describeConfigurationError(error) : error instanceof Error ? error.message : 'error'})\n`);
    return 1;
  } finally {
    await store.close();
  }
}

/**
 * Reads the request and opens its pin store, as start-up does: every problem (the usage, the settings, the pin
 * file's directory) in one error. @throws ConfigurationError naming them all.
 */
async function openPinsRequest(argv: readonly string[], env: Readonly<Record<string, string | undefined>>): Promise<{ request: PinsRequest; store: PinStore }> {
  const problems = new ConfigurationProblems();
  const { request, config } = readPinsRequest(argv, env, problems);
  const resource = config === undefined ? undefined : problems.check(() => canonicalizeResourceUri(config.guard.resource, 'MCP_AUTH_RESOURCE'));
  let store: PinStore | undefined;
  // The store is opened once the settings hold: its own check of the pin file would name a problem twice.
  if (problems.count === 0 && config?.pins !== undefined && resource !== undefined) {
    try {
      store = await openPinStore(config.pins, config.redis, resource);
    } catch (error) {
      problems.check(() => {
        throw error;
      });
    }
  }
  if (problems.count > 0 || request === undefined || store === undefined) {
    await store?.close();
    problems.throwIfAny();
  }
  return { request: request!, store: store! };
}

/**
 * Reads the action, its arguments and the gateway's settings, recording every problem in `problems`. Only what the
 * commands use is required: they never verify a token, so `MCP_AUTH_ISSUER` may be unset.
 */
function readPinsRequest(argv: readonly string[], env: Readonly<Record<string, string | undefined>>, problems: ConfigurationProblems): { request?: PinsRequest; config?: GatewayConfig } {
  const [given, ...afterAction] = argv;
  const { tokenFile, rest } = takeTokenFile(afterAction, problems);
  const callerToken = tokenFile === undefined ? undefined : problems.check(() => readSecretFile(tokenFile === '-' ? STANDARD_INPUT : tokenFile, '--token-file'));
  const action = given === 'update' || given === 'accept' ? given : undefined;
  if (action === undefined) problems.add('action', given === undefined ? 'is missing: pins update, or pins accept <server> <tool>' : `is "${given.slice(0, 40)}"; the actions are update and accept`);
  const positional: string[] = [];
  while (action !== undefined && rest.length > 0 && !rest[0]!.startsWith('--')) positional.push(rest.shift()!);
  let server: string | undefined;
  let digest: string | undefined;
  const others: string[] = [];
  for (let i = 0; i < rest.length; i++) {
    const arg = rest[i]!;
    if (action === 'update' && (arg === '--server' || arg.startsWith('--server='))) server = arg === '--server' ? rest[++i] : arg.slice('--server='.length);
    else if (action === 'accept' && (arg === '--digest' || arg.startsWith('--digest='))) digest = (arg === '--digest' ? rest[++i] : arg.slice('--digest='.length)) ?? '';
    else others.push(arg);
  }
  if (digest !== undefined && !/^sha256:[0-9a-fA-F]{16}([0-9a-fA-F]{48})?$/.test(digest.trim())) problems.add('--digest', 'is not a digest: give the sha256:… value the gateway\'s warning or check showed');
  const args = parseGatewayArgs(others, env, problems);
  const config = args.help ? undefined : problems.check(() => loadGatewayConfig(args.settings, { flagSettings: args.flagSettings, issuerRequired: false }));
  // With pins off the settings leave the pin file unchecked; the commands write it, whatever the mode.
  if (!args.help && isOff(readSetting(args.settings, 'MCP_AUTH_PINS') ?? 'off')) problems.check(() => checkPinFile(args.settings));
  if (action === 'accept' && positional.length !== 2) problems.add('accept', 'needs the server and the tool: pins accept <server> <tool> (the single upstream is named upstream)');
  if (action === 'update' && positional.length > 0) problems.add('update', `takes no name (${positional[0]!.slice(0, 40)}); give --server <name> for one server`);
  if (config !== undefined && config.pins === undefined) problems.add('MCP_AUTH_PIN_FILE', 'is not set: give the gateway\'s own settings, with the pin file (or redis) it reads');
  const names = config?.servers?.map((s) => s.name) ?? ['upstream'];
  const named = action === 'accept' ? positional[0] : server;
  if (config !== undefined && named !== undefined && !names.includes(named)) problems.add(action === 'accept' ? 'server' : '--server', `is "${named.slice(0, 64)}", which names no server of these settings; those are: ${names.join(', ')}`);
  if (config === undefined || action === undefined || problems.count > 0) return config === undefined ? {} : { config };
  const caller = callerToken === undefined ? {} : { callerToken };
  const request: PinsRequest = action === 'accept' ? { action, config, server: positional[0]!, tool: positional[1]!, ...(digest !== undefined ? { digest } : {}), ...caller } : { action, config, ...(server !== undefined ? { server } : {}), ...caller };
  return { request, config };
}

/** Pins what every server (or the one named) lists now, in place of its pins. */
async function update(request: Extract<PinsRequest, { action: 'update' }>, store: PinStore, output: PinsCommandOutput): Promise<number> {
  const listed = await listServerTools(request.config, LISTING_TIMEOUT_MS, request.server, request.callerToken);
  const pins = await store.load();
  const changes: PinChange[] = [];
  let failed = false;
  for (const { server, tools, truncated, error, perCaller } of listed) {
    if (tools === undefined) {
      output.stdout(`${server}: not listed, its pins are kept: ${error ?? 'unknown error'}\n`);
      // A server of connected accounts is never listed here, by design: the gateway pins it, which the line says.
      if (perCaller !== 'connected') failed = true;
      continue;
    }
    const before = pins.get(server);
    const counts = { changed: 0, added: 0, removed: 0 };
    const now = new Set<string>();
    for (const listed of compareListing(before, tools)) {
      // The gateway's own name rule: a tool it could never match with a pin is not pinned.
      if (listed.name === undefined) continue;
      now.add(listed.name);
      if (listed.change === undefined) continue;
      counts[listed.change]++;
      changes.push({ server, tool: listed.name, pin: pinOf(listed.digested, 'update') });
    }
    // A list cut short by a bound keeps the pins of what it did not reach.
    const gone = unlistedPins(before, now, truncated === true);
    for (const name of gone) changes.push({ server, tool: name, pin: undefined });
    counts.removed = gone.length;
    output.stdout(`${server}: ${tools.length} tool${tools.length === 1 ? '' : 's'} pinned (${counts.changed} changed, ${counts.added} new, ${counts.removed} removed)${truncated ? '; the list was cut off at a bound' : ''}\n`);
  }
  await store.write(changes);
  output.stdout(`Pins written to ${store.name}.\n`);
  return failed ? 1 : 0;
}

/** Pins one tool's definition as it is listed now. */
async function accept(request: Extract<PinsRequest, { action: 'accept' }>, store: PinStore, output: PinsCommandOutput): Promise<number> {
  const [listed] = await listServerTools(request.config, LISTING_TIMEOUT_MS, request.server, request.callerToken);
  if (listed?.tools === undefined) {
    output.stderr(`${PROGRAM}: ${request.server} could not be listed, nothing accepted: ${listed?.error ?? 'unknown error'}\n`);
    return 1;
  }
  const tool = listed.tools.find((candidate) => pinnableToolName(candidate) === request.tool);
  if (tool === undefined) {
    output.stderr(`${PROGRAM}: ${request.server} lists no tool ${JSON.stringify(request.tool.slice(0, 200))}; nothing accepted\n`);
    return 1;
  }
  const digested = digestTool(tool);
  // The definition the operator reviewed, when named, must be the one listed now: a server may change it again.
  if (request.digest !== undefined && !digestMatches(digested.digest, request.digest)) {
    output.stderr(`${PROGRAM}: ${request.server} ${request.tool} is listed now as ${shortDigest(digested.digest)}, not ${request.digest.trim().slice(0, 71)} as reviewed; nothing accepted. Review it again (mcp-oauth-guard check) and accept the digest shown\n`);
    return 1;
  }
  const pins: PinSet = await store.load();
  const pin = pins.get(request.server)?.get(request.tool);
  if (pin?.digest === digested.digest) {
    output.stdout(`${request.server} ${request.tool}: already pinned as listed; nothing to accept\n`);
    return 0;
  }
  await store.write([{ server: request.server, tool: request.tool, pin: pinOf(digested, 'accept') }]);
  const what = pin === undefined ? ['new tool'] : describeDifferences(pinDifferences(pin, digested));
  output.stdout(`${request.server} ${request.tool}: accepted as ${shortDigest(digested.digest)} (${what.join('; ')}); pins written to ${store.name}\n`);
  return 0;
}

/** `pins --help`: the actions, then every setting as the gateway's --help lists them. */
export function pinsHelp(): string {
  return [
    'Usage: mcp-oauth-guard pins update [--server <name>] [--token-file <file|->] [flags]',
    '       mcp-oauth-guard pins accept <server> <tool> [--digest <sha256:…>] [--token-file <file|->] [flags]',
    '',
    'Pinned tool definitions (MCP_AUTH_PINS, see tool-pins.md). Both actions list the upstreams as the gateway',
    'itself, as check does, and write the pin file or shared store MCP_AUTH_PIN_FILE names; a running gateway reads',
    'the change within seconds. Settings are read exactly as the gateway reads them: give the gateway\'s own.',
    '',
    '  update       Pins every tool each server (or the one --server names) lists now, in place of its pins.',
    '  accept       Pins one tool as its server lists it now: after reviewing a change the gateway reported. The',
    '               single upstream is named upstream; a server of a configuration file by its name. With',
    '               --digest (as the gateway\'s warning and check show it), only when the definition listed now has',
    '               that digest: what was reviewed is what is accepted.',
    '  --token-file <file|->',
    '               A caller\'s access token (a file holding it, or - for standard input; never the token itself):',
    '               an upstream that takes only tokens exchanged for each caller (token_exchange) is listed as',
    '               that caller, the token exchanged as the gateway does per request. Without it such an upstream',
    '               is not listed (exit code 1). One of connected accounts is never listed here: the running',
    '               gateway pins it on first sight, and update says so without failing for it.',
    '',
    'Exit codes: 0 when the pins were written, 1 when a server could not be listed (for update, one of connected',
    'accounts aside), the tool is not listed or its digest is not the one given (nothing is accepted then), 2 on bad',
    'usage or a configuration error.',
    '',
    "The settings, as the gateway's --help lists them:",
    '',
    gatewayHelp(),
  ].join('\n');
}
