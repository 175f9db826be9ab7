import type { AuthInfo } from '../../core/kernel/auth-info.js';
import { compileToolSelection } from '../../core/policy/tool-selection.js';
import type { GatewayConfig } from '../config/gateway-config.js';
import { reportPolicyCoverage } from '../policy/policy-coverage-report.js';
import { createUpstreamCredentials, type UpstreamAuthConfig } from '../upstream-auth/upstream-auth-config.js';
import type { UpstreamCredentials } from '../upstream-auth/upstream-credentials.js';
import { SINGLE_UPSTREAM_PIN_NAME } from './pin-document.js';

/** What one server lists, for its pins: its tools whole, or why it could not be listed. */
export interface ListedServerTools {
  /** The server's name in the pins (`upstream` for the single upstream). */
  readonly server: string;
  /** Its exposed tools (those its `tools` selection keeps), as listed; absent when it could not be listed. */
  readonly tools?: readonly Record<string, unknown>[];
  /** Whether a bound cut the list short (then tools past it are not compared). */
  readonly truncated?: boolean;
  /** Why it could not be listed. */
  readonly error?: string;
  /**
   * Why it was not listed, when its credentials are made for each caller: `token_exchange` without a caller's token
   * (given one, it is listed as that caller), or `connected`, which needs a user's stored connection and is pinned
   * on first sight by the running gateway instead.
   */
  readonly perCaller?: 'token_exchange' | 'connected';
}

/** Why a server whose credentials are made for each caller was not listed, and what to do (or what happens instead). */
export const PER_CALLER_REASONS = {
  token_exchange: {
    reason: 'it takes only tokens exchanged for each caller (token_exchange), and no caller\'s token was given',
    next: 'give a caller\'s access token with --token-file <file|-> to list it as that caller',
  },
  connected: {
    reason: 'it takes only the tokens of each user\'s connected account (connected), which no command holds',
    next: 'the running gateway pins its tools on first sight, from the first list a connected user makes through it',
  },
} as const;

/** A server not listed for its per-caller credentials, as {@link listServerTools} reports it. */
function notListed(server: string, perCaller: 'token_exchange' | 'connected'): ListedServerTools {
  const { reason, next } = PER_CALLER_REASONS[perCaller];
  return { server, error: `${reason}: ${next}`, perCaller };
}

/**
 * Lists the tools of every upstream the settings name, as the gateway itself (with its own upstream credentials,
 * a stdio upstream in a short-lived process of its own), as `check` does, each request bounded by `timeoutMs`: what
 * `pins update`, `pins accept` and `check` compare with the pins. An upstream that takes only tokens exchanged for
 * each caller is listed as the caller whose access token `callerToken` is (exchanged as the gateway does per
 * request, the token as the subject token; not verified here: the upstream's authorization server judges it), and
 * reported with what to do without one; an upstream of connected accounts is never listed, and reported so.
 *
 * @example
 * for (const listed of await listServerTools(config, 10_000)) console.log(listed.server, listed.tools?.length);
 */
export async function listServerTools(config: GatewayConfig, timeoutMs: number, only?: string, callerToken?: string): Promise<ListedServerTools[]> {
  const limits = { requestTimeoutMs: timeoutMs, keepToolDefinitions: true };
  const quiet = { policy: undefined, issuers: [], log: () => undefined, warn: () => undefined, limits };
  if (!config.servers) {
    if (only !== undefined && only !== SINGLE_UPSTREAM_PIN_NAME) return [];
    const auth = config.proxy ? credentialsOf(config.upstreamAuth, callerToken) : {};
    if ('perCaller' in auth) return [notListed(SINGLE_UPSTREAM_PIN_NAME, auth.perCaller)];
    const report = await reportPolicyCoverage({ ...quiet, config, ...auth });
    return [listedOf(SINGLE_UPSTREAM_PIN_NAME, report, () => true)];
  }
  const servers = config.servers.filter((server) => only === undefined || server.name === only);
  return Promise.all(
    servers.map(async (server): Promise<ListedServerTools> => {
      const auth = server.stdio ? {} : credentialsOf(server.upstreamAuth, callerToken);
      if ('perCaller' in auth) return notListed(server.name, auth.perCaller);
      const report = await reportPolicyCoverage({
        ...quiet,
        config: { ...(server.proxy ? { proxy: server.proxy } : {}), ...(server.stdio ? { stdio: server.stdio } : {}), settings: {} },
        ...auth,
      });
      return listedOf(server.name, report, compileToolSelection(server.tools, `servers.${server.name}.tools`));
    }),
  );
}

/**
 * The credentials an HTTP upstream is listed with: the gateway's own; for token exchange, those of the caller whose
 * token is given; else why it cannot be listed.
 */
function credentialsOf(auth: UpstreamAuthConfig | undefined, callerToken: string | undefined): { credentials?: UpstreamCredentials } | { perCaller: 'token_exchange' | 'connected' } {
  if (auth === undefined) return {};
  if (auth.mode === 'connected') return { perCaller: 'connected' };
  if (auth.mode === 'token_exchange' && callerToken === undefined) return { perCaller: 'token_exchange' };
  const credentials = createUpstreamCredentials(auth);
  return { credentials: credentials.perCaller && callerToken !== undefined ? asCaller(credentials, callerToken) : credentials };
}

/**
 * Credentials made for each caller, bound to one: what the gateway sends the upstream for a request of that caller,
 * here for the listing itself. The caller is the token alone (its subject token), as the exchange needs no more.
 */
function asCaller(credentials: UpstreamCredentials, token: string): UpstreamCredentials {
  const caller: AuthInfo = { token, clientId: '', scopes: [], extra: { claims: {}, tokenType: 'jwt' } };
  return {
    authorization: () => credentials.authorization(caller),
    renew: (_caller, rejected) => credentials.renew(caller, rejected),
  };
}

function listedOf(server: string, report: Awaited<ReturnType<typeof reportPolicyCoverage>>, selects: (tool: string) => boolean): ListedServerTools {
  if ('skipped' in report) return { server, error: report.skipped.replace(/^the upstream could not be listed: /, '') };
  const tools = (report.catalog.toolDefinitions ?? []).filter((tool) => selects(String(tool.name)));
  return { server, tools, ...(report.catalog.truncated.includes('tools/list') ? { truncated: true } : {}) };
}
