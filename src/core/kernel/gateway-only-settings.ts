/** Every upstream authentication setting (`MCP_AUTH_UPSTREAM_AUTH` and what its modes read), for the checks that refuse them where they would do nothing. */
export const UPSTREAM_AUTH_SETTINGS = [
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

/** Settings that mean something only with `MCP_AUTH_UPSTREAM_COMMAND` (a stdio upstream). */
export const STDIO_ONLY_SETTINGS = [
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
] as const;

/**
 * The `MCP_AUTH_*` variables only the gateway (`npx mcp-oauth-guard`) reads: its upstream, sessions, stdio
 * processes, metrics, shared store and sealed sessions. `loadOptionsFromEnv` does not read them, but they are
 * settings, so an application that finds one set is told whose it is rather than that it is no setting at all.
 * Framework-free so that core can name them; the gateway's settings tables (`GATEWAY_SETTINGS`) are where each is
 * defined and described, and a test keeps this list equal to theirs.
 */
export const GATEWAY_ONLY_SETTINGS: readonly string[] = [
  'MCP_AUTH_UPSTREAM',
  'MCP_AUTH_UPSTREAM_COMMAND',
  ...STDIO_ONLY_SETTINGS,
  'MCP_AUTH_POLICY_WATCH',
  'MCP_AUTH_IDENTITY_HEADERS',
  ...UPSTREAM_AUTH_SETTINGS,
  'MCP_AUTH_UPSTREAM_CONNECT_TIMEOUT_MS',
  'MCP_AUTH_UPSTREAM_IDLE_TIMEOUT_MS',
  'MCP_AUTH_MAX_SESSIONS_PER_CALLER',
  'MCP_AUTH_MAX_SESSIONS',
  'MCP_AUTH_DPOP_REPLAY_CACHE_MAX_ENTRIES',
  'MCP_AUTH_DPOP_REPLAY_CACHE_MAX_PER_CALLER',
  'MCP_AUTH_SESSION_IDLE_TIMEOUT_MS',
  'MCP_AUTH_SHUTDOWN_TIMEOUT_MS',
  'MCP_AUTH_HEAP_GROWING_PERCENT',
  'MCP_AUTH_MAX_CONNECTIONS_PER_ADDRESS',
  'MCP_AUTH_METRICS_PORT',
  'MCP_AUTH_METRICS_HOST',
  'MCP_AUTH_METRICS_TOOL_LABELS',
  'MCP_AUTH_REDIS_URL',
  'MCP_AUTH_REDIS_KEY_PREFIX',
  'MCP_AUTH_REDIS_FAIL',
  'MCP_AUTH_SESSION_SECRET',
  'MCP_AUTH_SESSION_SECRET_FILE',
  'MCP_AUTH_SESSION_MAX_AGE_MS',
];
