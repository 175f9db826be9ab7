/**
 * `mcp-oauth-guard connections revoke --subject <sub> [--issuer <iss>] [--server <name>] [settings…]`: the
 * operator's way to end every connected account of one user (an employee who left, a compromised account). It reads
 * the gateway's own settings (flags, environment, `--config`), opens the same token store with the same key, and
 * revokes each connection at its upstream's authorization server before deleting it.
 */
import { answerHelpOrVersion, PROCESS_OUTPUT, type CommandOutput } from '../command-output.js';
import { canonicalizeResourceUri } from '../../../core/kernel/canonical-resource.js';
import { ConfigurationProblems } from '../../../core/kernel/configuration-problems.js';
import { ConfigurationError } from '../../../core/kernel/errors.js';
import { describeConfigurationError } from '../../config/configuration-error-line.js';
import { gatewayHelp, loadGatewayConfig, parseGatewayArgs, type GatewayConfig } from '../../config/gateway-config.js';
import { connectedAuthorizations, connectedUpstreamsOf, openConnectionStore } from '../../connected/open-connections.js';
import { revokeUserConnections, type ConnectionRevocationOutcome } from './revoke-user-connections.js';

/** Where the command writes; default the process's stdout and stderr. */
export type ConnectionsCommandOutput = CommandOutput;

const PROGRAM = 'mcp-oauth-guard connections';
/** Exit code for a configuration error or bad usage, as the gateway's. */
const USAGE_EXIT_CODE = 2;
/** The command's own flags, each taking a value. */
const OWN_FLAGS = ['--subject', '--issuer', '--server'] as const;
type OwnFlag = (typeof OWN_FLAGS)[number];
/** The command's own switch: delete, unrevoked, records that do not open with the configured key. */
const DELETE_UNREADABLE = '--delete-unreadable';

/** What a `revoke` run is asked to do, its settings read. */
interface RevokeRequest {
  readonly config: GatewayConfig;
  readonly subject: string;
  readonly issuer: string;
  readonly server?: string;
  readonly deleteUnreadable: boolean;
}

/**
 * Runs `connections <argv…>`. Returns the exit code: 0 when every connection found was deleted (revoked or not,
 * each line says) or there was none; 1 when one could not be deleted (the token store failed); 2 on bad usage or a
 * configuration error (its message on stderr, as the gateway's), a connection whose record does not open with the
 * configured `MCP_AUTH_TOKEN_STORE_SECRET` among them (kept, not deleted, unless `--delete-unreadable`). Prints no
 * token, subject or digest.
 *
 * @example
 * process.exitCode = await runConnectionsCommand(['revoke', '--subject', 'alice'], process.env);
 */
export async function runConnectionsCommand(argv: readonly string[], env: Readonly<Record<string, string | undefined>>, output: ConnectionsCommandOutput = PROCESS_OUTPUT): Promise<number> {
  if (answerHelpOrVersion(argv, output, connectionsHelp)) return 0;
  let request: RevokeRequest;
  try {
    request = readRevokeRequest(argv, env);
  } catch (error) {
    if (!(error instanceof ConfigurationError)) throw error;
    output.stderr(`${PROGRAM}: ${describeConfigurationError(error)}\nRun ${PROGRAM} --help for the usage.\n`);
    return USAGE_EXIT_CODE;
  }
  return revoke(request, output);
}

/** Reads the subcommand, its flags and the gateway's settings; every problem at once. */
function readRevokeRequest(argv: readonly string[], env: Readonly<Record<string, string | undefined>>): RevokeRequest {
  const problems = new ConfigurationProblems();
  const [action, ...rest] = argv;
  if (action !== 'revoke') throw new ConfigurationError('action', action === undefined ? 'is missing: connections revoke --subject <sub>' : `is "${action}"; the one action is revoke`);
  const deleteUnreadable = rest.includes(DELETE_UNREADABLE);
  const { own, others } = takeOwnFlags(rest.filter((arg) => arg !== DELETE_UNREADABLE), problems);
  const args = parseGatewayArgs(others, env, problems);
  // --help and --version were answered before: a help answer here has nothing to load.
  const config = args.help ? undefined : problems.check(() => loadGatewayConfig(args.settings, { flagSettings: args.flagSettings }));
  if (own['--subject'] === undefined) problems.add('--subject', 'is required: the subject (sub claim) of the user whose connections are revoked');
  problems.throwIfAny();
  const connected = config!.connectedAccounts;
  if (connected === undefined) throw new ConfigurationError('MCP_AUTH_UPSTREAM_AUTH', 'no upstream is in connected mode in these settings, so there are no connections to revoke: give the gateway\'s own settings');
  const servers = connectedUpstreamsOf(config!).map(({ server }) => server);
  const server = own['--server'];
  if (server !== undefined && !servers.includes(server)) {
    const named = servers.filter((name) => name !== '');
    throw new ConfigurationError('--server', named.length ? `names no server in connected mode; those are: ${named.join(', ')}` : 'names a server of a configuration file, and these settings have a single upstream: leave it out');
  }
  return { config: config!, subject: own['--subject']!, issuer: own['--issuer'] ?? connected.login.issuer, deleteUnreadable, ...(server !== undefined ? { server } : {}) };
}

/** Takes `--subject`, `--issuer` and `--server` (`--flag value` or `--flag=value`) out of `argv`. */
function takeOwnFlags(argv: readonly string[], problems: ConfigurationProblems): { own: Partial<Record<OwnFlag, string>>; others: string[] } {
  const own: Partial<Record<OwnFlag, string>> = {};
  const others: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const flag = OWN_FLAGS.find((name) => arg === name || arg.startsWith(`${name}=`));
    if (flag === undefined) {
      others.push(arg);
      continue;
    }
    let value: string | undefined = arg.slice(flag.length + 1);
    if (arg === flag) value = argv[i + 1]?.startsWith('--') ? undefined : argv[++i];
    if (value === undefined || value === '') problems.add(flag, `needs a value: ${flag} <${flag.slice(2)}>`);
    else if (own[flag] !== undefined) problems.add(flag, 'is given twice; give it once');
    else own[flag] = value;
  }
  return { own, others };
}

/** Opens the store, revokes, and prints one line per server. */
async function revoke(request: RevokeRequest, output: ConnectionsCommandOutput): Promise<number> {
  const { config } = request;
  const resource = canonicalizeResourceUri(config.guard.resource, 'MCP_AUTH_RESOURCE');
  let opened;
  try {
    opened = await openConnectionStore(config.connectedAccounts!, resource, config.redis);
  } catch (error) {
    if (error instanceof ConfigurationError) {
      output.stderr(`${PROGRAM}: configuration error: ${describeConfigurationError(error)}\n`);
      return USAGE_EXIT_CODE;
    }
    output.stderr(`${PROGRAM}: the token store could not be opened (${error instanceof Error && error.name === 'TokenStoreUnavailableError' ? 'unreachable' : 'failed'}); nothing was revoked\n`);
    return 1;
  }
  try {
    const authorizations = connectedAuthorizations(connectedUpstreamsOf(config), new URL(resource).origin, opened);
    const user = { issuer: request.issuer, subject: request.subject };
    const outcomes = await revokeUserConnections({ opened, authorizations, user, deleteUnreadable: request.deleteUnreadable, ...(request.server !== undefined ? { server: request.server } : {}) });
    if (outcomes.length === 0) {
      output.stdout(`No connection of that subject at ${request.issuer}${request.server !== undefined ? ` to ${request.server}` : ''}: nothing to revoke.\n`);
      return 0;
    }
    output.stdout(outcomes.map(outcomeLine).join(''));
    if (outcomes.some((outcome) => outcome.outcome === 'failed')) return 1;
    if (!outcomes.some((outcome) => outcome.outcome === 'unreadable')) return 0;
    // A key other than the gateway's is a configuration error: said on stderr, as the others are.
    output.stderr(`${PROGRAM}: configuration error: MCP_AUTH_TOKEN_STORE_SECRET: a connection's record does not open with this key (is this the gateway's MCP_AUTH_TOKEN_STORE_SECRET?); it was kept, not revoked\n`);
    return USAGE_EXIT_CODE;
  } finally {
    await opened.store.close();
  }
}

/**
 * One line per server: `<server>: revoked …`, `<server>: refresh token revoked …, access token not revoked: …`,
 * `<server>: deleted without revocation: …`, `<server>: not deleted: …`, `<server>: not revoked, kept: …`.
 */
export function outcomeLine(outcome: ConnectionRevocationOutcome): string {
  const label = outcome.server === '' ? 'the upstream (MCP_AUTH_UPSTREAM)' : outcome.server;
  switch (outcome.outcome) {
    case 'revoked':
      return `${label}: revoked at its authorization server (${outcome.revoked!.join(', ')}) and deleted\n`;
    case 'partly':
      return `${label}: ${outcome.revoked!.join(', ')} revoked at its authorization server, ${outcome.detail}; deleted\n`;
    case 'deleted':
      return `${label}: deleted without revocation: ${outcome.detail}\n`;
    case 'failed':
      return `${label}: ${outcome.detail}\n`;
    case 'unreadable':
      return `${label}: not revoked, kept: ${outcome.detail} (is this the gateway's key?); run again with the gateway's key, or with ${DELETE_UNREADABLE} to delete it unrevoked\n`;
  }
}

/** `connections --help`: the action, its flags and exit codes, then every setting as the gateway's --help lists them. */
export function connectionsHelp(): string {
  return [
    'Usage: mcp-oauth-guard connections revoke --subject <sub> [--issuer <url>] [--server <name>] [--delete-unreadable] [flags]',
    '',
    'Revokes every connected account of one user: each connection the token store (MCP_AUTH_TOKEN_STORE) holds for',
    'that user is revoked at its upstream\'s authorization server where it offers RFC 7009 revocation (the refresh',
    'token first, then the access token), then deleted. Prints one line per server: revoked, or deleted without',
    'revocation and why. The user\'s MCP clients are asked to connect again on their next call. Settings are read',
    'exactly as the gateway reads them (its flags, environment variables and --config file): give the gateway\'s own.',
    'Every outbound call waits at most the upstream\'s timeout. No token, secret or subject is printed.',
    '',
    '  --subject <sub>',
    '      The user: the subject (sub claim) of their access tokens at the gateway\'s issuer. Required.',
    '  --issuer <url>',
    '      The issuer of that subject. Default: the issuer users sign in at to connect (MCP_AUTH_LOGIN_ISSUER, or',
    '      the only issuer).',
    '  --server <name>',
    '      Only the connection to this server of the configuration file. Default: every server.',
    '  --delete-unreadable',
    '      Also delete, without revoking it, a connection whose record does not open with MCP_AUTH_TOKEN_STORE_SECRET',
    '      (sealed with a key since lost). Its tokens stay valid at the authorization server until they expire.',
    '      Default: such a record is kept, and the command exits 2.',
    '  --help, -h',
    '      Print this help.',
    '',
    'Exit codes: 0 when every connection found was deleted (or there was none), 1 when one could not be deleted',
    '(the token store failed; run it again), 2 on bad usage or a configuration error, such as a record that does',
    'not open with MCP_AUTH_TOKEN_STORE_SECRET (not the gateway\'s key): it is kept, never deleted unrevoked.',
    '',
    "The settings, as the gateway's --help lists them:",
    '',
    gatewayHelp(),
  ].join('\n');
}
