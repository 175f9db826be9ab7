/**
 * Entry point `mcp-oauth-guard/gateway`: the gateway as a library — the upstream proxy and the stdio upstream
 * (MCP HTTP handlers for the request pipeline) and `startGateway`, configured from the same settings as the CLI.
 * Re-exports only.
 *
 * @module mcp-oauth-guard/gateway
 */
export { startGateway, type RunningGateway, type StartGatewayOptions } from './server/start-gateway.js';
export { PROXY_HEAP_GROWING_PERCENT, tuneHeapForProxying } from './config/heap-growing-factor.js';
export type { PolicyCoverageReport } from './policy/policy-coverage-report.js';
export type { ListingFailure } from './upstream/upstream-listing-failure.js';
export type { PolicyReloadResult, PolicyRuleCounts } from './policy/policy-reload.js';
export type { UpstreamCatalog } from './upstream/upstream-catalog.js';
export { loadGatewayConfig, type GatewayConfig, type LoadGatewayConfigOptions } from './config/gateway-config.js';
export type { ServerConfig, ToolSelectionDefinition } from './config/server-config.js';
export type { SettingSource } from './config/setting-sources.js';
export type { SessionLimits } from './config/upstream-settings.js';
export { DEFAULT_METRICS_HOST, type MetricsConfig } from './config/metrics-config.js';
export type { SharedStoreConfig } from './config/shared-store-config.js';
export type { PinsConfig } from './config/pins-config.js';
export type { PinsMode } from './pins/tool-pins.js';
export type { SessionSealConfig } from './config/session-seal-config.js';
export type { ConnectedAccountsConfig, ConnectListsMode, TokenStoreConfig } from './config/connected-accounts-config.js';
export { createUpstreamProxy, type UpstreamProxyOptions } from './upstream/http/upstream-proxy.js';
export type { IdentityHeaderNames } from './upstream/http/identity-headers.js';
export {
  GATEWAY_JSONRPC_CODE,
  SESSION_NOT_FOUND_JSONRPC_CODE,
  type SessionRefusal,
  type SessionRefusalReason,
  type SealedSessionRefusalReason,
  type Upstream,
  type UpstreamExchange,
  type UpstreamFailure,
  type UpstreamFailureReason,
  type UpstreamForwarding,
  type UpstreamHooks,
  type UpstreamLifecycle,
  type UpstreamProxy,
  type UpstreamTransport,
} from './upstream/upstream.js';
export {
  clientCredentials,
  staticCredentials,
  UPSTREAM_AUTH_MODES,
  type UpstreamAuthMode,
  type UpstreamCredentials,
} from './upstream-auth/upstream-credentials.js';
export type { CallerFlow, CallerFlowAnswer, CallerFlowRequest } from './upstream-auth/caller-flow.js';
export type { KeptLists } from './upstream-auth/kept-lists.js';
export type { KeptProfile, KeptProfiles } from './upstream-auth/kept-profile.js';
export { tokenExchangeCredentials, TOKEN_EXCHANGE_GRANT_TYPE, type TokenExchangeOptions } from './upstream-auth/token-exchange.js';
export { createUpstreamTokenClient, UpstreamTokenRefusedError, type IssuedToken, type TokenRequest, type UpstreamTokenClient, type UpstreamTokenClientOptions } from './upstream-auth/upstream-token-client.js';
export { createUpstreamTargetResolver, type UpstreamTarget, type UpstreamTargetOptions } from './upstream-auth/upstream-resource-metadata.js';
export { createUpstreamCredentials, type UpstreamAuthConfig } from './upstream-auth/upstream-auth-config.js';
export { createStdioUpstream, UPSTREAM_BUSY_JSONRPC_CODE, type StdioUpstream, type StdioUpstreamOptions } from './upstream/stdio/stdio-upstream.js';
export type { ChildEndReason, ChildLogEvent } from './upstream/stdio/stdio-child.js';
export { createStdioStartOutcomes, type StdioStartOutcome, type StdioStartOutcomes, type StdioStartOutcomesOptions, type StdioStartWatch } from './upstream/stdio/stdio-start-outcome.js';
export { childEnvironment, CALLER_CLIENT_ID_ENV, CALLER_SUBJECT_ENV } from './upstream/stdio/child-environment.js';
export { splitCommandLine } from './config/command-line.js';
export { createRequestLog, type RequestLog, type RequestLogEntry, type RequestLogOptions } from './server/request-log.js';
