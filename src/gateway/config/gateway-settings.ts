/**
 * The gateway's settings table (`GATEWAY_SETTINGS`: every flag, variable and default), the command line's reading
 * (`parseGatewayArgs`) and the `--help` text. Apart from the loading of a configuration (`gateway-config.ts`), so
 * that `--help`, `--version` and a bad flag load the table and nothing that serves.
 */
import { DEFAULT_AUDIT_FILES, DEFAULT_AUDIT_MAX_FILE_BYTES } from '../../core/audit/audit-options.js';
import { DEFAULT_CLOCK_TOLERANCE_SECONDS, DEFAULT_HTTP_TIMEOUT_MS, DEFAULT_INTROSPECTION_CACHE_TTL_SECONDS } from '../../core/token/verifier-defaults.js';
import { DEFAULT_INTROSPECTION_REFUSALS_PER_ADDRESS } from '../../core/token/introspection-bounds.js';
import { DEFAULT_JWT_ALGORITHMS } from '../../core/jwt/jws-algorithms.js';
import { DEFAULT_REPLAY_CACHE_MAX_ENTRIES, DEFAULT_REPLAY_CACHE_MAX_ENTRIES_PER_CALLER } from '../../core/limits/replay-cache.js';
import { DEFAULT_REDIS_REPLAY_CACHE_MAX_PER_CALLER } from '../../redis/redis-stores.js';
import { DEFAULT_BODY_TIMEOUT_MS, DEFAULT_MAX_BODY_BYTES } from '../../core/guard/resolve-guard-options.js';
import { DEFAULT_TOKEN_CACHE_MAX_BYTES } from '../../core/token/token-cache.js';
import { DEFAULT_LOG_LEVEL } from '../../core/kernel/log-options.js';
import { closestName } from '../../core/kernel/closest-name.js';
import { collectConfigurationProblems, type ConfigurationProblems } from '../../core/kernel/configuration-problems.js';
import { DEFAULT_LIST_TIMEOUT_MS, DEFAULT_MAX_SESSIONS, DEFAULT_MAX_SESSIONS_PER_CALLER, DEFAULT_SESSION_IDLE_TIMEOUT_MS, DEFAULT_UPSTREAM_CONNECT_TIMEOUT_MS } from '../upstream/upstream.js';
import { METRICS_SETTINGS } from './metrics-config.js';
import { SHARED_STORE_SETTINGS } from './shared-store-config.js';
import { SESSION_SEAL_SETTINGS } from './session-seal-config.js';
import { PINS_SETTINGS } from './pins-config.js';
import { CONNECTED_ACCOUNTS_SETTINGS } from './connected-accounts-config.js';
import { STDIO_INTEGER_SETTINGS } from '../upstream/stdio/stdio-integer-settings.js';
import type { EveryNameListed, SettingName } from '../../core/kernel/setting-names.js';
import type { GatewaySetting } from './gateway-setting.js';
import { MAX_HEAP_GROWING_PERCENT, PROXY_HEAP_GROWING_PERCENT } from './heap-growing-factor.js';
import { DEFAULT_IDENTITY_HEADERS } from '../upstream/http/identity-headers.js';

export { DEFAULT_LIST_TIMEOUT_MS };

/** Default `HOST`: loopback, so a gateway started by hand is not exposed by accident. */
export const DEFAULT_GATEWAY_HOST = '127.0.0.1';
/** Default `PORT`. */
export const DEFAULT_GATEWAY_PORT = 8080;
/** Default time, in milliseconds, a graceful shutdown waits for requests in progress. */
export const DEFAULT_SHUTDOWN_TIMEOUT_MS = 10_000;
/**
 * Default `MCP_AUTH_MAX_CONNECTIONS_PER_ADDRESS`: far above what one MCP client holds (a POST or two and a GET
 * stream; a browser opens at most six per origin), low enough that one address cannot hold thousands of sockets.
 */
export const DEFAULT_MAX_CONNECTIONS_PER_ADDRESS = 128;
/** The rows of {@link GATEWAY_SETTINGS}, with each `env` as written, for the check below that every name has one. */
const SETTING_ROWS = [
  { env: 'MCP_AUTH_CONFIG', group: 'gateway', flag: '--config', value: '<file>', description: 'A configuration file, JSON (or YAML when it ends .yaml or .yml), naming several upstreams ("servers", each with its own credentials, policy and tools) behind one endpoint, and gateway-wide settings ("gateway"); see gateway-config-file.md. Flags and variables win over the file. Not with MCP_AUTH_UPSTREAM or MCP_AUTH_UPSTREAM_COMMAND.', defaultValue: 'none: one upstream, set by the variables below' },
  { env: 'MCP_AUTH_UPSTREAM', group: 'upstream', flag: '--upstream', value: '<url>', essential: 'for an HTTP upstream: its MCP endpoint', description: 'URL of the upstream MCP endpoint (Streamable HTTP), e.g. http://127.0.0.1:3001/mcp. Required unless MCP_AUTH_UPSTREAM_COMMAND is set.' },
  { env: 'MCP_AUTH_UPSTREAM_COMMAND', group: 'stdio', flag: '--upstream-command', value: '"<program> <args…>"', essential: 'for a stdio upstream instead: the program to run', description: 'A stdio MCP server to run instead, one process per MCP session (per caller without sessions), e.g. "python3 server.py". Split with shell-style quoting; no shell runs it. Not with MCP_AUTH_UPSTREAM.' },
  { env: 'MCP_AUTH_UPSTREAM_CWD', group: 'stdio', flag: '--upstream-cwd', value: '<dir>', description: 'Working directory of the stdio upstream.', defaultValue: "the gateway's" },
  { env: 'MCP_AUTH_UPSTREAM_ENV', group: 'stdio', flag: '--upstream-env', value: '<list>', description: "Names of environment variables passed to the stdio upstream. It gets these, PATH, HOME and LANG, and nothing else: never the gateway's settings or secrets.", defaultValue: 'none' },
  { env: 'MCP_AUTH_IDENTITY_ENV', group: 'stdio', flag: '--identity-env', value: '[on|off]', description: "Start each stdio upstream process with its caller's subject, client id and issuer in MCP_CALLER_SUBJECT, MCP_CALLER_CLIENT_ID and MCP_CALLER_ISSUER (plain visible ASCII as it is, any other value as =?base64?…?=). Never the token.", defaultValue: 'off', bare: true },
  { env: 'MCP_AUTH_ISSUER', group: 'token-validation', flag: '--issuer', value: '<url[,url…]>', essential: "always: your authorization server's issuer", description: "Your authorization server's issuer URL, exactly as its metadata spells it; tokens must carry it as iss. Several, comma- or space-separated, trust each (a token's iss picks one). Required." },
  { env: 'MCP_AUTH_RESOURCE', group: 'gateway', flag: '--resource', value: '<url>', essential: 'unless HOST is loopback: the public URL clients reach the MCP endpoint at', description: 'Public URL of this gateway\'s MCP endpoint: the token audience and the metadata "resource". Its path is where the endpoint is served. Required unless HOST is loopback.', defaultValue: 'http://HOST:PORT/mcp' },
  { env: 'MCP_AUTH_POLICY', group: 'gateway', flag: '--policy', value: '<file>', essential: 'the scopes each tool needs; without it any valid token may use every tool', description: 'JSON scope policy file (required scopes per method, tool, prompt, resource).', defaultValue: 'no scopes required' },
  { env: 'MCP_AUTH_POLICY_WATCH', group: 'gateway', flag: '--policy-watch', value: '[on|off]', description: 'Reload the policy file when it changes (an editor replacing it included), as SIGHUP always does; requests in progress and sessions are kept, and an invalid file keeps the policy in force.', defaultValue: 'off', bare: true },
  { env: 'MCP_AUTH_LISTS', group: 'gateway', flag: '--lists', value: '<filtered|all>', description: 'What tools/list, prompts/list, resources/list and resources/templates/list show a caller: "filtered", only what its token may use; "all", everything, each call still refused with 403 insufficient_scope (the step-up) when the token lacks a scope. Use "all" for clients that will not call what they have not seen listed (the Inspector CLI); callers then learn names, never access.', defaultValue: 'filtered' },
  { env: 'MCP_AUTH_LIST_TIMEOUT_MS', group: 'gateway', flag: '--list-timeout-ms', value: '<ms>', description: "With several servers (MCP_AUTH_CONFIG): time each server's part of a merged list (tools/list, …) may take; a server slower than this is left out of that answer, with a warning. A server's own listTimeoutMs wins. With pins in enforce (MCP_AUTH_PINS), also the longest a tools/call or tools/list waits for its server's start-up comparison with the pins, the single upstream's included; then 503 with Retry-After.", defaultValue: String(DEFAULT_LIST_TIMEOUT_MS) },
  { env: 'HOST', group: 'gateway', flag: '--host', value: '<address>', description: 'Interface to listen on.', defaultValue: DEFAULT_GATEWAY_HOST },
  { env: 'PORT', group: 'gateway', flag: '--port', value: '<number>', description: 'TCP port to listen on (0 picks a free one).', defaultValue: String(DEFAULT_GATEWAY_PORT) },
  { env: 'MCP_AUTH_IDENTITY_HEADERS', group: 'upstream', flag: '--identity-headers', value: '<on|off|subject=H,clientId=H,scopes=H,issuer=H>', description: `Send the caller's subject, client id, scopes and issuer to the upstream in headers; "on" uses ${DEFAULT_IDENTITY_HEADERS.subject}, ${DEFAULT_IDENTITY_HEADERS.clientId}, ${DEFAULT_IDENTITY_HEADERS.scopes} and ${DEFAULT_IDENTITY_HEADERS.issuer} (with several issuers, key users by issuer and subject together). Values are plain visible ASCII as they are, any other value as =?base64?…?=. Never the token.`, defaultValue: 'off', bare: true },
  { env: 'MCP_AUTH_UPSTREAM_AUTH', group: 'upstream-auth', flag: '--upstream-auth', value: '<none|static|client_credentials|token_exchange|connected>', description: "How the gateway authenticates to a protected HTTP upstream (the client's token never goes upstream): as itself, with a static token or a client credentials token; with the caller's token exchanged (RFC 8693) for one whose audience is the upstream; or \"connected\", with each user's own authorization at the upstream, which the gateway asks the user for once, in the browser, and keeps (connected accounts).", defaultValue: 'none' },
  { env: 'MCP_AUTH_UPSTREAM_TOKEN', group: 'upstream-auth', value: '<token>', description: 'With static: the token sent upstream as Authorization: Bearer. Environment only, so it never shows in process listings.', defaultValue: 'off' },
  { env: 'MCP_AUTH_UPSTREAM_TOKEN_FILE', group: 'upstream-auth', flag: '--upstream-token-file', value: '<file>', description: 'With static: a file holding that token instead, re-read when it changes (rotated secrets) and after an upstream 401.', defaultValue: 'off' },
  { env: 'MCP_AUTH_UPSTREAM_CLIENT_ID', group: 'upstream-auth', flag: '--upstream-client-id', value: '<id>', description: "With client_credentials or token_exchange: the gateway's client id at the upstream's authorization server. With connected, optional: a client registered there with the redirect URI <gateway origin>/connect/callback/<server> (upstream for the single upstream), one per authorization server against mix-up attacks; without it the gateway uses a Client ID Metadata Document it serves, or registers itself (RFC 7591).", defaultValue: 'off' },
  { env: 'MCP_AUTH_UPSTREAM_CLIENT_SECRET', group: 'upstream-auth', value: '<secret>', description: 'Its client secret. Environment only.', defaultValue: 'off' },
  { env: 'MCP_AUTH_UPSTREAM_CLIENT_SECRET_FILE', group: 'upstream-auth', flag: '--upstream-client-secret-file', value: '<file>', description: 'A file holding that client secret instead, read at start-up.', defaultValue: 'off' },
  { env: 'MCP_AUTH_UPSTREAM_SCOPE', group: 'upstream-auth', flag: '--upstream-scope', value: '<list>', description: 'With client_credentials, token_exchange or connected: the scopes asked for the upstream.', defaultValue: "client_credentials and token_exchange: the authorization server's default; connected: the scope of the upstream's 401 challenge, else its scopes_supported" },
  { env: 'MCP_AUTH_UPSTREAM_ISSUER', group: 'upstream-auth', flag: '--upstream-issuer', value: '<url>', description: "With client_credentials, token_exchange or connected: the issuer of the upstream's tokens.", defaultValue: "the upstream's RFC 9728 metadata, else MCP_AUTH_ISSUER" },
  { env: 'MCP_AUTH_UPSTREAM_RESOURCE', group: 'upstream-auth', flag: '--upstream-resource', value: '<url>', description: 'With client_credentials, token_exchange or connected: the resource (RFC 8707) tokens are asked for, their audience.', defaultValue: "the upstream's RFC 9728 metadata, else MCP_AUTH_UPSTREAM" },
  { env: 'MCP_AUTH_UPSTREAM_CONNECT_TIMEOUT_MS', group: 'upstream', flag: '--connect-timeout-ms', value: '<ms>', description: 'Time allowed to connect to the upstream; then 504.', defaultValue: String(DEFAULT_UPSTREAM_CONNECT_TIMEOUT_MS) },
  { env: 'MCP_AUTH_UPSTREAM_IDLE_TIMEOUT_MS', group: 'any-upstream', flag: '--idle-timeout-ms', aliases: ['--upstream-idle-timeout-ms'], value: '<ms>', description: 'Time allowed with no word from the upstream, HTTP or stdio, about a request: before its answer starts (then 504; a stdio process is also sent notifications/cancelled) and within its stream (then the stream ends).', defaultValue: String(STDIO_INTEGER_SETTINGS.idleTimeoutMs.fallback) },
  { env: 'MCP_AUTH_MAX_SESSIONS_PER_CALLER', group: 'sessions', flag: '--max-sessions-per-caller', value: '<number>', description: "Most upstream sessions one caller holds; one more forgets that caller's least recently used session.", defaultValue: String(DEFAULT_MAX_SESSIONS_PER_CALLER) },
  { env: 'MCP_AUTH_MAX_SESSIONS', group: 'sessions', flag: '--max-sessions', value: '<number>', description: 'Most upstream sessions remembered, each bound to its caller (issuer, subject, client); past it the least recently used is forgotten and its caller starts a new one. What sessions keep (a pre-connect `initialize`, a server set session) is also bounded to 64 MiB, the same way.', defaultValue: String(DEFAULT_MAX_SESSIONS) },
  { env: 'MCP_AUTH_SESSION_IDLE_TIMEOUT_MS', group: 'sessions', flag: '--session-idle-timeout-ms', value: '<ms>', description: 'An upstream session unused for this long (and with no open stream) is forgotten; requests naming it get 404 and the client starts a new one.', defaultValue: String(DEFAULT_SESSION_IDLE_TIMEOUT_MS) },
  { env: 'MCP_AUTH_MAX_UPSTREAM_PROCESSES', group: 'stdio', flag: '--max-upstream-processes', value: '<number>', description: "Most stdio upstream processes at once; past it a new session gets 429 (nobody's live process is stopped to make room).", defaultValue: String(STDIO_INTEGER_SETTINGS.maxProcesses.fallback) },
  { env: 'MCP_AUTH_MAX_UPSTREAM_PROCESSES_PER_CALLER', group: 'stdio', flag: '--max-upstream-processes-per-caller', value: '<number>', description: 'Most stdio upstream processes one caller (issuer, subject, client) holds; past it 429.', defaultValue: String(STDIO_INTEGER_SETTINGS.maxProcessesPerCaller.fallback) },
  { env: 'MCP_AUTH_UPSTREAM_PROCESS_IDLE_TIMEOUT_MS', group: 'stdio', flag: '--upstream-process-idle-timeout-ms', value: '<ms>', description: 'A stdio upstream process with no request or stream in progress for this long is stopped; its session then gets 404.', defaultValue: String(STDIO_INTEGER_SETTINGS.processIdleTimeoutMs.fallback) },
  { env: 'MCP_AUTH_UPSTREAM_STOP_TIMEOUT_MS', group: 'stdio', flag: '--upstream-stop-timeout-ms', value: '<ms>', description: 'When a stdio upstream process is stopped (DELETE, idle, shutdown): time between SIGTERM and SIGKILL.', defaultValue: String(STDIO_INTEGER_SETTINGS.stopTimeoutMs.fallback) },
  { env: 'MCP_AUTH_UPSTREAM_MAX_LINE_BYTES', group: 'stdio', flag: '--upstream-max-line-bytes', value: '<bytes>', description: 'Largest line (one JSON-RPC message) a stdio upstream may write; a longer one ends that process, with the reason logged.', defaultValue: String(STDIO_INTEGER_SETTINGS.maxLineBytes.fallback) },
  { env: 'MCP_AUTH_UPSTREAM_MAX_STDIN_BYTES', group: 'stdio', flag: '--upstream-max-stdin-bytes', value: '<bytes>', description: "Most bytes written to a stdio upstream process's stdin that it has not read yet; past it that session's next message gets 503 with Retry-After, so a process that stops reading cannot fill the gateway's memory.", defaultValue: String(STDIO_INTEGER_SETTINGS.maxStdinBytes.fallback) },
  { env: 'MCP_AUTH_UPSTREAM_REPLAY_BYTES', group: 'stdio', flag: '--upstream-replay-bytes', value: '<bytes|off>', description: 'Most bytes of event-stream messages each stdio upstream session keeps, so that a client whose stream broke resumes it with Last-Event-ID and misses nothing; the oldest go first. Set to off (or 0), streams are not resumable.', defaultValue: String(STDIO_INTEGER_SETTINGS.replayBufferBytes.fallback) },
  { env: 'MCP_AUTH_UPSTREAM_REPLAY_WINDOW_MS', group: 'stdio', flag: '--upstream-replay-window-ms', value: '<ms>', description: 'How long those messages are kept, and how long a request whose client lost its stream keeps running for the client to resume it; then it is cancelled.', defaultValue: String(STDIO_INTEGER_SETTINGS.replayWindowMs.fallback) },
  { env: 'MCP_AUTH_SHUTDOWN_TIMEOUT_MS', group: 'gateway', flag: '--shutdown-timeout-ms', value: '<ms>', description: 'On SIGTERM or SIGINT, time given to requests in progress before they are ended.', defaultValue: String(DEFAULT_SHUTDOWN_TIMEOUT_MS) },
  { env: 'MCP_AUTH_HEAP_GROWING_PERCENT', group: 'gateway', flag: '--heap-growing-percent', value: '<percent|off>', description: `V8's heap growing factor, as the percent above 1 (300: a factor of 4), from 0 to ${MAX_HEAP_GROWING_PERCENT}; off (or 0) leaves it to V8. Set before the gateway starts, so that the buffers of answers in flight do not make V8 mark the whole heap every tenth of a second; the heap may grow to about 1 + percent/100 times what is live before a full collection. A --heap-growing-percent=N given to node itself wins (see gateway.md, Memory).`, defaultValue: String(PROXY_HEAP_GROWING_PERCENT) },
  { env: 'MCP_AUTH_MAX_CONNECTIONS_PER_ADDRESS', group: 'limits', flag: '--max-connections-per-address', value: '<number|off>', description: 'Most open connections from one client address (IPv6: one /64); more are closed as they arrive, unanswered. Behind a reverse proxy every client shares its address: set off (or 0: no bound) and bound clients at the proxy.', defaultValue: String(DEFAULT_MAX_CONNECTIONS_PER_ADDRESS) },
  { env: 'MCP_AUTH_ALLOWED_ORIGINS', group: 'gateway', flag: '--allowed-origins', value: '<list>', description: 'Browser origins allowed besides the resource\'s own ("*" for any); others get 403.', defaultValue: 'none' },
  { env: 'MCP_AUTH_CHALLENGE_SCOPES', group: 'gateway', flag: '--challenge-scopes', value: '<list>', description: 'Scopes the 401 challenge asks a new client for (what to request first), e.g. notes:read.', defaultValue: "the policy's requiredScopes" },
  { env: 'MCP_AUTH_AUDIENCE', group: 'token-validation', flag: '--audience', value: '<list>', description: 'Extra token audiences accepted besides the resource URL.', defaultValue: 'none' },
  { env: 'MCP_AUTH_AUTHORIZATION_SERVERS', group: 'gateway', flag: '--authorization-servers', value: '<list>', description: 'authorization_servers advertised in the metadata (RFC 9728): each must be one of the trusted issuers, spelt exactly; a subset is fine.', defaultValue: 'every issuer' },
  { env: 'MCP_AUTH_JWKS_URI', group: 'token-validation', flag: '--jwks-uri', value: '<url>', description: "JWKS URL, instead of the one in the issuer's metadata.", defaultValue: 'discovered' },
  { env: 'MCP_AUTH_ALGORITHMS', group: 'token-validation', flag: '--algorithms', value: '<list>', description: 'JWS algorithms accepted (asymmetric only).', defaultValue: DEFAULT_JWT_ALGORITHMS.join(', ') },
  { env: 'MCP_AUTH_CLOCK_TOLERANCE', group: 'token-validation', flag: '--clock-tolerance', value: '<seconds>', description: "Clock skew tolerated on a token's exp, nbf and iat, and how far ahead of the server's clock a DPoP proof's iat may be.", defaultValue: String(DEFAULT_CLOCK_TOLERANCE_SECONDS) },
  { env: 'MCP_AUTH_DPOP', group: 'token-validation', flag: '--dpop', value: '<off|allow|require>', description: 'DPoP sender-constrained tokens (RFC 9449): "allow" takes Bearer tokens and DPoP-bound ones with a proof, "require" only DPoP-bound ones, "off" refuses DPoP-bound tokens.', defaultValue: 'allow' },
  { env: 'MCP_AUTH_DPOP_REPLAY_CACHE_MAX_ENTRIES', group: 'token-validation', flag: '--dpop-replay-cache-max-entries', value: '<number>', description: "Most DPoP proof identifiers (jti) the per-process replay cache holds, each for its proof's lifetime (70 s); full of live proofs, a new DPoP request gets 503. Size it above the DPoP requests a process accepts in 70 s. Not with MCP_AUTH_REDIS_URL.", defaultValue: String(DEFAULT_REPLAY_CACHE_MAX_ENTRIES) },
  { env: 'MCP_AUTH_DPOP_REPLAY_CACHE_MAX_PER_CALLER', group: 'token-validation', flag: '--dpop-replay-cache-max-per-caller', value: '<number>', description: `Live DPoP proofs one caller (issuer, subject, client) may hold; past it 429 with Retry-After. Per process: enforced only once the cache is half full, so one caller never fills more than half and never pushes others to 503 (default 1 % of the cache). With MCP_AUTH_REDIS_URL: always enforced, across replicas (default ${DEFAULT_REDIS_REPLAY_CACHE_MAX_PER_CALLER}).`, defaultValue: `${DEFAULT_REPLAY_CACHE_MAX_ENTRIES_PER_CALLER} (Redis: ${DEFAULT_REDIS_REPLAY_CACHE_MAX_PER_CALLER})` },
  { env: 'MCP_AUTH_STRICT_JWT', group: 'token-validation', flag: '--strict-jwt', value: '[true|false]', description: 'Require RFC 9068 JWT access tokens (typ at+jwt, client_id, iat, jti, sub).', defaultValue: 'false', bare: true },
  { env: 'MCP_AUTH_RESOURCE_NAME', group: 'gateway', flag: '--resource-name', value: '<text>', description: 'resource_name in the metadata.', defaultValue: 'none' },
  { env: 'MCP_AUTH_RESOURCE_DOCUMENTATION', group: 'gateway', flag: '--resource-documentation', value: '<url>', description: 'resource_documentation in the metadata.', defaultValue: 'none' },
  { env: 'MCP_AUTH_MAX_BODY_BYTES', group: 'limits', flag: '--max-body-bytes', value: '<bytes>', description: 'Largest accepted request body; larger gets 413.', defaultValue: String(DEFAULT_MAX_BODY_BYTES) },
  { env: 'MCP_AUTH_BODY_TIMEOUT_MS', group: 'limits', flag: '--body-timeout-ms', value: '<ms>', description: 'Longest time to receive a request body, from the end of its headers to its last byte; then 408 and the connection is closed.', defaultValue: String(DEFAULT_BODY_TIMEOUT_MS) },
  { env: 'MCP_AUTH_HTTP_TIMEOUT_MS', group: 'token-validation', flag: '--http-timeout-ms', value: '<ms>', description: 'Timeout of calls to the authorization server (discovery, JWKS, introspection).', defaultValue: String(DEFAULT_HTTP_TIMEOUT_MS) },
  { env: 'MCP_AUTH_INTROSPECTION_CLIENT_ID', group: 'token-validation', flag: '--introspection-client-id', value: '<id>', description: 'Client id for RFC 7662 introspection of opaque tokens (with the secret below).', defaultValue: 'off' },
  { env: 'MCP_AUTH_INTROSPECTION_CLIENT_SECRET', group: 'token-validation', value: '<secret>', description: 'Its client secret. Environment only, so it never shows in process listings.', defaultValue: 'off' },
  { env: 'MCP_AUTH_INTROSPECTION_ISSUER', group: 'token-validation', flag: '--introspection-issuer', value: '<url>', description: 'With several issuers, the one whose introspection endpoint answers for opaque tokens.', defaultValue: 'the issuer, when there is one' },
  { env: 'MCP_AUTH_TOKEN_CACHE_MAX_BYTES', group: 'token-validation', flag: '--token-cache-max-bytes', value: '<bytes>', description: 'Most memory the verified-token cache holds (identities only, never tokens); least recently used are evicted first.', defaultValue: String(DEFAULT_TOKEN_CACHE_MAX_BYTES) },
  { env: 'MCP_AUTH_INTROSPECTION_ENDPOINT', group: 'token-validation', flag: '--introspection-endpoint', value: '<url>', description: 'Introspection endpoint, instead of the discovered one.', defaultValue: 'discovered' },
  { env: 'MCP_AUTH_INTROSPECTION_CACHE_TTL', group: 'token-validation', flag: '--introspection-cache-ttl', value: '<seconds|off>', description: 'How long an active introspection answer is reused: a revoked opaque token stays usable up to this long. Set to off (or 0), the introspection endpoint is asked on every request.', defaultValue: String(DEFAULT_INTROSPECTION_CACHE_TTL_SECONDS) },
  { env: 'MCP_AUTH_INTROSPECTION_RATE_LIMIT', group: 'token-validation', flag: '--introspection-rate-limit', value: '<count/s|min|h|off>', description: 'Most introspection refusals (inactive or invalid tokens) one client address (IPv6: one /64) can cause; while an address is past it, its requests with new opaque tokens get 429 until the window ends. Tokens the endpoint accepts never count. Behind a reverse proxy every client shares its address: raise it, or off and bound clients at the proxy.', defaultValue: DEFAULT_INTROSPECTION_REFUSALS_PER_ADDRESS },
  { env: 'MCP_AUTH_LOG_LEVEL', group: 'logs', flag: '--log-level', value: '<info|warn|off>', description: 'Least level logged: info writes the start-up and summary lines, the request log and the warnings; warn only the warnings; off nothing. Configuration errors at start-up are reported whatever it says.', defaultValue: DEFAULT_LOG_LEVEL },
  { env: 'MCP_AUTH_REQUEST_LOG', group: 'logs', flag: '--request-log', value: '[on|off]', description: 'Log each request, one JSON line when its answer ends (method, tool, decision, subject, client, status, duration; never the token). Off, the request metrics are still counted.', defaultValue: 'on in the gateway, off in the library', bare: true },
  { env: 'MCP_AUTH_AUDIT', group: 'logs', flag: '--audit', value: '<off|stdout|otel|absolute path>', description: 'The audit trail: one JSON record per request that reaches a decision (issuer, subject, client, server, method, tool, prompt or resource, decision, reason, rule, status, duration; never the token), written when its answer ends: to stdout, to an absolute file path rotated by size, or as OpenTelemetry log records ("otel", through the logger provider the application registered). A full buffer drops records, counted, rather than slow requests (docs/audit.md).', defaultValue: 'off' },
  { env: 'MCP_AUTH_AUDIT_ARGUMENTS', group: 'logs', flag: '--audit-arguments', value: '[on|off]', description: 'Put the arguments of each tools/call in its audit record, redacted (MCP_AUTH_AUDIT_REDACT) and cut past 4 096 bytes with a marker.', defaultValue: 'off', bare: true },
  { env: 'MCP_AUTH_AUDIT_REDACT', group: 'logs', flag: '--audit-redact', value: '<pointer,…>', description: 'JSON Pointers (RFC 6901) into the arguments whose values an audit record shows as "[redacted]", comma-separated, e.g. /password,/card/number.', defaultValue: 'none' },
  { env: 'MCP_AUTH_AUDIT_MAX_BYTES', group: 'logs', flag: '--audit-max-bytes', value: '<bytes>', description: 'With an audit file: its size past which it is rotated (audit.jsonl becomes audit.jsonl.1, and so on).', defaultValue: String(DEFAULT_AUDIT_MAX_FILE_BYTES) },
  { env: 'MCP_AUTH_AUDIT_FILES', group: 'logs', flag: '--audit-files', value: '<number>', description: 'With an audit file: how many files are kept, the one being written included; the oldest goes first.', defaultValue: String(DEFAULT_AUDIT_FILES) },
  ...PINS_SETTINGS,
  ...METRICS_SETTINGS,
  ...SHARED_STORE_SETTINGS,
  ...SESSION_SEAL_SETTINGS,
  ...CONNECTED_ACCOUNTS_SETTINGS,
] satisfies GatewaySetting[];

/**
 * Every setting of the gateway, in the order `--help` lists them. Flags win over the environment. The
 * guard's own settings are read by `loadOptionsFromEnv`, so their meaning is the library's.
 */
export const GATEWAY_SETTINGS: readonly GatewaySetting[] = SETTING_ROWS;

// Compiles only while every name of the setting table (core's setting-names.ts) has a row above.
const everySettingHasARow: EveryNameListed<SettingName, (typeof SETTING_ROWS)[number]['env']> = true;
void everySettingHasARow;

/**
 * Settings that mean something only with `MCP_AUTH_UPSTREAM_COMMAND` (a stdio upstream): the stdio group of the
 * table, but the command itself.
 */
export const STDIO_ONLY_SETTINGS: readonly SettingName[] = SETTING_ROWS.filter((row) => row.group === 'stdio' && row.env !== 'MCP_AUTH_UPSTREAM_COMMAND').map((row) => row.env);

/** What `parseGatewayArgs` found: a request for help (or, with `version`, for the version) or the settings to use. */
export type GatewayArgs = { help: true; version?: true } | { help: false; settings: Record<string, string | undefined>; flagSettings: string[] };

/**
 * Reads the command line. Flags mirror environment variables (`--upstream` sets `MCP_AUTH_UPSTREAM`, …),
 * as `--flag value` or `--flag=value`; flags win. Returns the environment overlaid with the flags, and which settings the flags gave (`flagSettings`).
 *
 * @param problems - Where to record bad flags, so that they are reported with the settings' problems; without it,
 *   they are thrown, all in one error.
 * @throws ConfigurationError for every unknown flag (with the flag likely meant) and flag without its value, when
 *   `problems` is not given.
 */
export function parseGatewayArgs(argv: readonly string[], env: Readonly<Record<string, string | undefined>>, problems?: ConfigurationProblems): GatewayArgs {
  if (problems === undefined) return collectConfigurationProblems((own) => parseGatewayArgs(argv, env, own));
  const settings: Record<string, string | undefined> = { ...env };
  const flagSettings: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === '--help' || arg === '-h') return { help: true };
    if (arg === '--version') return { help: true, version: true };
    if (!arg.startsWith('--')) {
      problems.add(arg, 'is not a flag; settings are given as --name value (see --help)');
      continue;
    }
    const eq = arg.indexOf('=');
    const flag = eq === -1 ? arg : arg.slice(0, eq);
    const setting = GATEWAY_SETTINGS.find((s) => s.flag === flag || s.aliases?.includes(flag));
    if (!setting) {
      const secret = GATEWAY_SETTINGS.find((s) => !s.flag && `--${s.env.toLowerCase().replace(/^mcp_auth_/, '').replaceAll('_', '-')}` === flag);
      const meant = secret ? undefined : closestName(flag, GATEWAY_SETTINGS.flatMap((s) => (s.flag ? [s.flag, ...(s.aliases ?? [])] : [])));
      problems.add(flag, secret ? `is not accepted on the command line; set ${secret.env} in the environment` : `is not a known flag${meant ? `; did you mean ${meant}?` : ' (see --help)'}`);
      // Its value, if it has one, is not a flag to report as well.
      if (eq === -1 && i + 1 < argv.length && !argv[i + 1]!.startsWith('--')) i++;
      continue;
    }
    let value: string | undefined;
    if (eq !== -1) value = arg.slice(eq + 1);
    else if (i + 1 < argv.length && !argv[i + 1]!.startsWith('--')) value = argv[++i];
    else if (setting.bare) value = setting.env === 'MCP_AUTH_IDENTITY_HEADERS' ? 'on' : 'true';
    if (value === undefined) problems.add(flag, `needs a value: ${flag} ${setting.value}`);
    else {
      settings[setting.env] = value;
      flagSettings.push(setting.env);
    }
  }
  return { help: false, settings, flagSettings };
}


/**
 * The `--help` text: usage, then every setting with its flag, variable and default.
 */
export function gatewayHelp(): string {
  const lines = [
    'Usage: mcp-oauth-guard [flags]',
    '       mcp-oauth-guard check [--json] [--strict] [--token-file <file|->] [flags]   (checks these settings, what they point at and a token; check --help)',
    '       mcp-oauth-guard connections revoke --subject <sub> [--issuer <url>] [--server <name>] [flags]   (revokes every connected account of a user; connections --help)',
    '       mcp-oauth-guard pins update [--server <name>] | pins accept <server> <tool> [flags]   (pins the upstreams\' tool definitions; pins --help)',
    '',
    'An OAuth 2.1 gateway for any MCP server: it checks the access token and the scope policy of every',
    'request, then forwards it to the upstream MCP server (Streamable HTTP) without the token or cookies.',
    'Each setting is a flag or an environment variable; flags win. Lists are comma- or space-separated.',
    '',
  ];
  for (const s of GATEWAY_SETTINGS) {
    lines.push(`  ${s.flag ? `${s.flag} ${s.value}${s.aliases?.length ? `   (or ${s.aliases.join(', ')})` : ''}` : '(environment only)'}`);
    lines.push(`      ${s.env}: ${s.description}${s.defaultValue ? ` Default: ${s.defaultValue}.` : ''}`);
  }
  lines.push(
    '  --help, -h',
    '      Print this help.',
    '  --version',
    '      Print the version of mcp-oauth-guard.',
    '',
    'Endpoints: the MCP endpoint at the path of the resource URL; RFC 9728 metadata at',
    '/.well-known/oauth-protected-resource[/path]; GET /healthz and /readyz (no authentication); with connected',
    'accounts, the pages /connect/… and /connections.',
    'Logs: one JSON line per request on stdout (method, tool, decision, status, duration; never the token).',
    'Exit codes: 0 after a graceful shutdown (SIGTERM, SIGINT), --help or --version, 1 when it cannot start, 2 on a',
    'configuration error.',
    'SIGHUP reloads the policy file (MCP_AUTH_POLICY) without dropping a request or a session; an invalid file keeps the policy in force.',
    '',
    'Example:',
    '  mcp-oauth-guard --upstream http://127.0.0.1:3001/mcp --issuer https://auth.example.com \\',
    '    --resource https://mcp.example.com/mcp --policy ./policy.json --host 0.0.0.0 --port 8080',
  );
  return `${lines.join('\n')}\n`;
}
