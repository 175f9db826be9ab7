/**
 * The one table of setting names: every environment variable the library (`loadOptionsFromEnv`) or the gateway
 * (`npx mcp-oauth-guard`) reads. Framework-free, so that both can take it: the library to tell a user who set a
 * gateway setting whose it is, the gateway to type the `env` of each row of its settings table (`GATEWAY_SETTINGS`),
 * so that a row cannot name a variable missing here, nor a name here lack a row (both are type errors).
 *
 * A new setting: add its name here, then its row (flag, description, default) to the gateway's table, and read it.
 */

/** The variables `loadOptionsFromEnv` reads into the guard's options; the gateway reads them through it. */
export const LIBRARY_SETTING_NAMES = [
  'MCP_AUTH_ISSUER',
  'MCP_AUTH_RESOURCE',
  'MCP_AUTH_AUDIENCE',
  'MCP_AUTH_JWKS_URI',
  'MCP_AUTH_ALGORITHMS',
  'MCP_AUTH_POLICY',
  'MCP_AUTH_CLOCK_TOLERANCE',
  'MCP_AUTH_ALLOWED_ORIGINS',
  'MCP_AUTH_CHALLENGE_SCOPES',
  'MCP_AUTH_AUTHORIZATION_SERVERS',
  'MCP_AUTH_STRICT_JWT',
  'MCP_AUTH_RESOURCE_NAME',
  'MCP_AUTH_RESOURCE_DOCUMENTATION',
  'MCP_AUTH_MAX_BODY_BYTES',
  'MCP_AUTH_BODY_TIMEOUT_MS',
  'MCP_AUTH_HTTP_TIMEOUT_MS',
  'MCP_AUTH_INTROSPECTION_CLIENT_ID',
  'MCP_AUTH_DPOP',
  'MCP_AUTH_LISTS',
  'MCP_AUTH_RATE_LIMIT',
  'MCP_AUTH_INTROSPECTION_CLIENT_SECRET',
  'MCP_AUTH_INTROSPECTION_ENDPOINT',
  'MCP_AUTH_INTROSPECTION_ISSUER',
  'MCP_AUTH_INTROSPECTION_CACHE_TTL',
  'MCP_AUTH_INTROSPECTION_RATE_LIMIT',
  'MCP_AUTH_TOKEN_CACHE_MAX_BYTES',
  'MCP_AUTH_LOG_LEVEL',
  'MCP_AUTH_REQUEST_LOG',
  'MCP_AUTH_AUDIT',
  'MCP_AUTH_AUDIT_ARGUMENTS',
  'MCP_AUTH_AUDIT_REDACT',
  'MCP_AUTH_AUDIT_MAX_BYTES',
  'MCP_AUTH_AUDIT_FILES',
] as const;

/**
 * The upstream credential's variables: `MCP_AUTH_UPSTREAM_AUTH` and what its modes read. Named as a group, since the
 * gateway refuses them all where they would do nothing (a stdio upstream).
 */
export const UPSTREAM_AUTH_SETTING_NAMES = [
  'MCP_AUTH_UPSTREAM_AUTH',
  'MCP_AUTH_UPSTREAM_TOKEN',
  'MCP_AUTH_UPSTREAM_TOKEN_FILE',
  'MCP_AUTH_UPSTREAM_CLIENT_ID',
  'MCP_AUTH_UPSTREAM_CLIENT_SECRET',
  'MCP_AUTH_UPSTREAM_CLIENT_SECRET_FILE',
  'MCP_AUTH_UPSTREAM_SCOPE',
  'MCP_AUTH_UPSTREAM_ISSUER',
  'MCP_AUTH_UPSTREAM_RESOURCE',
] as const;

/**
 * The variables only the gateway reads: where it listens, its upstream (HTTP or stdio) and the upstream's
 * credential, sessions, limits, metrics, the shared store and sealed sessions. An application using the library
 * that finds one set is told it is the gateway's rather than that it is no setting at all.
 */
export const GATEWAY_SETTING_NAMES = [
  'HOST',
  'PORT',
  'MCP_AUTH_CONFIG',
  'MCP_AUTH_LIST_TIMEOUT_MS',
  'MCP_AUTH_POLICY_WATCH',
  'MCP_AUTH_PINS',
  'MCP_AUTH_PIN_FILE',
  'MCP_AUTH_SHUTDOWN_TIMEOUT_MS',
  'MCP_AUTH_HEAP_GROWING_PERCENT',
  'MCP_AUTH_MAX_CONNECTIONS_PER_ADDRESS',
  'MCP_AUTH_DPOP_REPLAY_CACHE_MAX_ENTRIES',
  'MCP_AUTH_DPOP_REPLAY_CACHE_MAX_PER_CALLER',
  // The HTTP upstream.
  'MCP_AUTH_UPSTREAM',
  'MCP_AUTH_IDENTITY_HEADERS',
  'MCP_AUTH_UPSTREAM_CONNECT_TIMEOUT_MS',
  'MCP_AUTH_UPSTREAM_IDLE_TIMEOUT_MS',
  'MCP_AUTH_MAX_SESSIONS_PER_CALLER',
  'MCP_AUTH_MAX_SESSIONS',
  'MCP_AUTH_SESSION_IDLE_TIMEOUT_MS',
  // The upstream's credential.
  ...UPSTREAM_AUTH_SETTING_NAMES,
  // The stdio upstream.
  'MCP_AUTH_UPSTREAM_COMMAND',
  'MCP_AUTH_UPSTREAM_CWD',
  'MCP_AUTH_UPSTREAM_ENV',
  'MCP_AUTH_IDENTITY_ENV',
  'MCP_AUTH_MAX_UPSTREAM_PROCESSES',
  'MCP_AUTH_MAX_UPSTREAM_PROCESSES_PER_CALLER',
  'MCP_AUTH_UPSTREAM_PROCESS_IDLE_TIMEOUT_MS',
  'MCP_AUTH_UPSTREAM_STOP_TIMEOUT_MS',
  'MCP_AUTH_UPSTREAM_MAX_LINE_BYTES',
  'MCP_AUTH_UPSTREAM_MAX_STDIN_BYTES',
  'MCP_AUTH_UPSTREAM_REPLAY_BYTES',
  'MCP_AUTH_UPSTREAM_REPLAY_WINDOW_MS',
  // Connected accounts.
  'MCP_AUTH_TOKEN_STORE',
  'MCP_AUTH_TOKEN_STORE_SECRET',
  'MCP_AUTH_TOKEN_STORE_SECRET_FILE',
  'MCP_AUTH_LOGIN_CLIENT_ID',
  'MCP_AUTH_LOGIN_CLIENT_SECRET',
  'MCP_AUTH_LOGIN_CLIENT_SECRET_FILE',
  'MCP_AUTH_LOGIN_ISSUER',
  'MCP_AUTH_CONNECT_LISTS',
  'MCP_AUTH_TRUSTED_PROXIES',
  // Metrics, the shared store, sealed sessions.
  'MCP_AUTH_METRICS_PORT',
  'MCP_AUTH_METRICS_HOST',
  'MCP_AUTH_METRICS_TOOL_LABELS',
  'MCP_AUTH_REDIS_URL',
  'MCP_AUTH_REDIS_KEY_PREFIX',
  'MCP_AUTH_REDIS_FAIL',
  'MCP_AUTH_SESSION_SECRET',
  'MCP_AUTH_SESSION_SECRET_FILE',
  'MCP_AUTH_SESSION_MAX_AGE_MS',
] as const;

/** A variable `loadOptionsFromEnv` reads, e.g. `MCP_AUTH_ISSUER`. */
export type LibrarySettingName = (typeof LIBRARY_SETTING_NAMES)[number];
/** A variable only the gateway reads, e.g. `MCP_AUTH_UPSTREAM`. */
export type GatewaySettingName = (typeof GATEWAY_SETTING_NAMES)[number];
/** Any setting's variable. */
export type SettingName = LibrarySettingName | GatewaySettingName;

const GATEWAY_NAMES: ReadonlySet<string> = new Set(GATEWAY_SETTING_NAMES);

/** Whether `name` is a variable only the gateway reads (see {@link GATEWAY_SETTING_NAMES}). */
export function isGatewaySettingName(name: string): name is GatewaySettingName {
  return GATEWAY_NAMES.has(name);
}

/**
 * `true` when `Listed` names every name of `All`, else the names it leaves out: a table that must cover every
 * setting declares `const covered: EveryNameListed<SettingName, NamesInTable> = true`, which compiles only then.
 */
export type EveryNameListed<All extends string, Listed extends string> = [Exclude<All, Listed>] extends [never] ? true : { missing: Exclude<All, Listed> };
