/**
 * Connected accounts (`MCP_AUTH_UPSTREAM_AUTH=connected`, or `auth.mode: "connected"` for a server of the
 * configuration file): where the gateway keeps each user's upstream tokens, the key that seals them, and the
 * gateway's own sign-in (an OpenID Connect client of its issuer) that proves who completes a connection in the
 * browser. Read once at start-up; every problem is named by its variable.
 */
import { homedir } from 'node:os';
import { join } from 'node:path';
import type { GuardOptions } from '../../core/guard/guard-options.js';
import { ConfigurationError } from '../../core/kernel/errors.js';
import { readSetting } from '../../core/kernel/settings.js';
import { parseTrustedProxies } from '../../core/kernel/trusted-proxies.js';
import type { SessionSealKey } from '../../core/session/session-seal.js';
import type { ConfigurationProblems } from '../../core/kernel/configuration-problems.js';
import { gatewayIssuers } from './gateway-issuers.js';
import type { GatewaySetting } from './gateway-setting.js';
import { readSealKeys } from './seal-keys-setting.js';
import { readSecretFile } from './secret-file.js';

/** Where connected accounts are kept (`MCP_AUTH_TOKEN_STORE`). */
export type TokenStoreConfig = { readonly kind: 'directory'; readonly directory: string } | { readonly kind: 'redis' };

/** What servers of a user who has not connected show in lists (`MCP_AUTH_CONNECT_LISTS`). */
export type ConnectListsMode = 'show' | 'hide';

/** The connected-accounts settings, validated. */
export interface ConnectedAccountsConfig {
  readonly store: TokenStoreConfig;
  /** Keys sealing the store's values: the first seals, every one opens. Never logged. */
  readonly storeKeys: readonly SessionSealKey[];
  /** The gateway's sign-in at its own issuer, which proves who completes a connection. */
  readonly login: {
    readonly issuer: string;
    readonly clientId: string;
    /** Absent: a public client (PKCE only). Never logged. */
    readonly clientSecret?: string;
  };
  readonly lists: ConnectListsMode;
  /** Reverse proxies whose `X-Forwarded-For` names the client (`MCP_AUTH_TRUSTED_PROXIES`), validated; `''`: none. */
  readonly trustedProxies: string;
}

/** The directory store's place when `MCP_AUTH_TOKEN_STORE` is unset: the user's state directory (XDG). */
export function defaultTokenStoreDirectory(env: Readonly<Record<string, string | undefined>> = process.env): string {
  const state = env.XDG_STATE_HOME && env.XDG_STATE_HOME.startsWith('/') ? env.XDG_STATE_HOME : join(homedir(), '.local', 'state');
  return join(state, 'mcp-oauth-guard', 'tokens');
}

/** The settings of connected accounts, listed by `--help` with the gateway's others. */
export const CONNECTED_ACCOUNTS_SETTINGS = Object.freeze([
  {
    env: 'MCP_AUTH_TOKEN_STORE',
    group: 'connected-accounts',
    flag: '--token-store',
    value: '<dir>|redis',
    description:
      'With connected accounts: where each user\'s upstream tokens are kept, sealed. An absolute directory path (one file per connection, written atomically; for one gateway process) or "redis" (MCP_AUTH_REDIS_URL, for a fleet).',
    defaultValue: '$XDG_STATE_HOME/mcp-oauth-guard/tokens (~/.local/state/…)',
  },
  {
    env: 'MCP_AUTH_TOKEN_STORE_SECRET',
    group: 'connected-accounts',
    value: '<key[,older key…]>',
    description:
      'With connected accounts: the key sealing what the token store holds (JWE), at least 32 random bytes, in hex or base64 (standard or URL-safe), e.g. from openssl rand -base64 32. A comma-separated list rotates keys: the first seals, every one opens. Environment only.',
  },
  { env: 'MCP_AUTH_TOKEN_STORE_SECRET_FILE', group: 'connected-accounts', flag: '--token-store-secret-file', value: '<file>', description: 'A file holding that key instead (keys separated by commas or lines), read at start-up.', defaultValue: 'off' },
  {
    env: 'MCP_AUTH_LOGIN_CLIENT_ID',
    group: 'connected-accounts',
    flag: '--login-client-id',
    value: '<id>',
    description:
      "With connected accounts: the gateway's client id at its own issuer, with the redirect URI <gateway origin>/connect/callback. The connect page signs the user in with it, so that only the user who asked can complete a connection.",
  },
  { env: 'MCP_AUTH_LOGIN_CLIENT_SECRET', group: 'connected-accounts', value: '<secret>', description: 'Its client secret. Environment only.', defaultValue: 'off: a public client (PKCE)' },
  { env: 'MCP_AUTH_LOGIN_CLIENT_SECRET_FILE', group: 'connected-accounts', flag: '--login-client-secret-file', value: '<file>', description: 'A file holding that client secret instead, read at start-up.', defaultValue: 'off' },
  {
    env: 'MCP_AUTH_LOGIN_ISSUER',
    group: 'connected-accounts',
    flag: '--login-issuer',
    value: '<url>',
    description: 'With several issuers (MCP_AUTH_ISSUER lists more than one): the one users sign in at to connect accounts; callers with tokens of another issuer are told they cannot connect.',
    defaultValue: 'the only issuer',
  },
  {
    env: 'MCP_AUTH_CONNECT_LISTS',
    group: 'connected-accounts',
    flag: '--connect-lists',
    value: '<show|hide>',
    description:
      'What lists show of a server the caller has not connected: "show" lists the tools (definitions only) the server last listed for a connected user, kept in the token store, each caller\'s list filtered by their policies as any list (empty until a connected user has listed it), with a note in the list\'s _meta giving the link to connect it. Calling one of its tools leads to the link too. "hide" keeps nothing and shows neither until the user has connected: pick it for a server whose definitions differ from user to user.',
    defaultValue: 'show',
  },
  {
    env: 'MCP_AUTH_TRUSTED_PROXIES',
    group: 'connected-accounts',
    flag: '--trusted-proxies',
    value: '<list>',
    description:
      "Reverse proxies in front of the gateway (a TLS-terminating load balancer): comma-separated IP addresses or CIDR ranges. For a request from one of them, the client's address is the right-most X-Forwarded-For address that is not itself one of them, so that the sign-ins the connections page may start per minute and address are counted per client, not for the proxy's one address. Used for that budget only.",
    defaultValue: 'none: the peer is the client',
  },
] satisfies GatewaySetting[]);

/** The names of {@link CONNECTED_ACCOUNTS_SETTINGS}. */
const NAMES = CONNECTED_ACCOUNTS_SETTINGS.map((setting) => setting.env);

/**
 * Reads the connected-accounts settings.
 *
 * @param connected - Names of the upstreams in connected mode (`""` for the single upstream); none: the settings
 *   would do nothing, and each one set is a problem.
 * @returns undefined when no upstream is in connected mode.
 */
export function loadConnectedAccountsConfig(
  settings: Readonly<Record<string, string | undefined>>,
  problems: ConfigurationProblems,
  context: { readonly connected: readonly string[]; readonly guard: GuardOptions | undefined; readonly env?: Readonly<Record<string, string | undefined>> },
): ConnectedAccountsConfig | undefined {
  if (context.connected.length === 0) {
    for (const name of NAMES) {
      if (readSetting(settings, name) !== undefined) problems.add(name, 'does nothing without an upstream in connected mode (MCP_AUTH_UPSTREAM_AUTH=connected, or auth.mode "connected" for a server): unset it');
    }
    return undefined;
  }
  const store = problems.check(() => readTokenStore(settings, context.env));
  const storeKeys = problems.check(() => readStoreKeys(settings));
  const login = problems.check(() => readLogin(settings, context.guard));
  const listsText = readSetting(settings, 'MCP_AUTH_CONNECT_LISTS')?.toLowerCase() ?? 'show';
  if (listsText !== 'show' && listsText !== 'hide') problems.add('MCP_AUTH_CONNECT_LISTS', `is "${listsText}"; use show or hide`);
  const trustedProxies = readSetting(settings, 'MCP_AUTH_TRUSTED_PROXIES') ?? '';
  const proxiesValid = problems.check(() => {
    try {
      return parseTrustedProxies(trustedProxies);
    } catch (error) {
      throw new ConfigurationError('MCP_AUTH_TRUSTED_PROXIES', (error as Error).message);
    }
  });
  if (store === undefined || storeKeys === undefined || login === undefined || proxiesValid === undefined) return undefined;
  return { store, storeKeys, login, lists: listsText === 'hide' ? 'hide' : 'show', trustedProxies };
}

function readTokenStore(settings: Readonly<Record<string, string | undefined>>, env: Readonly<Record<string, string | undefined>> | undefined): TokenStoreConfig {
  const value = readSetting(settings, 'MCP_AUTH_TOKEN_STORE');
  if (value === 'redis') {
    if (readSetting(settings, 'MCP_AUTH_REDIS_URL') === undefined) throw new ConfigurationError('MCP_AUTH_TOKEN_STORE', 'is "redis" but MCP_AUTH_REDIS_URL is not set: set it to the Redis every replica shares, e.g. redis://redis:6379');
    return { kind: 'redis' };
  }
  if (value !== undefined && !value.startsWith('/')) throw new ConfigurationError('MCP_AUTH_TOKEN_STORE', `is "${value}"; use an absolute directory path (e.g. /var/lib/mcp-oauth-guard/tokens) or redis`);
  return { kind: 'directory', directory: value ?? defaultTokenStoreDirectory(env) };
}

function readStoreKeys(settings: Readonly<Record<string, string | undefined>>): SessionSealKey[] {
  const keys = readSealKeys(settings, 'MCP_AUTH_TOKEN_STORE_SECRET', 'MCP_AUTH_TOKEN_STORE_SECRET_FILE');
  if (keys === undefined) {
    throw new ConfigurationError('MCP_AUTH_TOKEN_STORE_SECRET', "is required with connected accounts: the key that seals the users' upstream tokens at rest, e.g. from openssl rand -base64 32 (or MCP_AUTH_TOKEN_STORE_SECRET_FILE)");
  }
  return keys;
}

function readLogin(settings: Readonly<Record<string, string | undefined>>, guard: GuardOptions | undefined): ConnectedAccountsConfig['login'] {
  const clientId = readSetting(settings, 'MCP_AUTH_LOGIN_CLIENT_ID');
  const secret = readSetting(settings, 'MCP_AUTH_LOGIN_CLIENT_SECRET');
  const file = readSetting(settings, 'MCP_AUTH_LOGIN_CLIENT_SECRET_FILE');
  if (clientId === undefined) {
    throw new ConfigurationError('MCP_AUTH_LOGIN_CLIENT_ID', "is required with connected accounts: the gateway's client id at its own issuer, registered with the redirect URI <gateway origin>/connect/callback");
  }
  if (secret !== undefined && file !== undefined) throw new ConfigurationError('MCP_AUTH_LOGIN_CLIENT_SECRET_FILE', 'and MCP_AUTH_LOGIN_CLIENT_SECRET are both set; set one of them');
  const issuers = gatewayIssuers(guard);
  const named = readSetting(settings, 'MCP_AUTH_LOGIN_ISSUER');
  if (named !== undefined && issuers.length > 0 && !issuers.includes(named)) {
    throw new ConfigurationError('MCP_AUTH_LOGIN_ISSUER', `is "${named}", which is none of the gateway's issuers (${issuers.join(', ')}): name one of them`);
  }
  if (named === undefined && issuers.length > 1) throw new ConfigurationError('MCP_AUTH_LOGIN_ISSUER', `is required with several issuers: name the one users sign in at to connect accounts (one of ${issuers.join(', ')})`);
  const issuer = named ?? issuers[0];
  // Without issuers the guard's own problem says what to set; repeating it here would only add noise.
  if (issuer === undefined) throw new ConfigurationError('MCP_AUTH_LOGIN_ISSUER', guard === undefined ? 'cannot be chosen until MCP_AUTH_ISSUER is valid' : 'is required: no issuer is configured for the gateway to sign users in at');
  const clientSecret = secret ?? (file !== undefined ? readSecretFile(file, 'MCP_AUTH_LOGIN_CLIENT_SECRET_FILE') : undefined);
  return { issuer, clientId, ...(clientSecret !== undefined ? { clientSecret } : {}) };
}
