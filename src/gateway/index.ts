/**
 * Entry point `mcp-oauth-guard/gateway`: the gateway as a library — the upstream proxy and the stdio upstream
 * (MCP HTTP handlers for the request pipeline) and `startGateway`, configured from the same settings as the CLI.
 * Re-exports only.
 *
 * @module mcp-oauth-guard/gateway
 */
export { startGateway, type RunningGateway, type StartGatewayOptions } from './start-gateway.js';
export { PROXY_HEAP_GROWING_PERCENT, tuneHeapForProxying } from './heap-growing-factor.js';
export type { PolicyCoverageReport } from './policy-coverage-report.js';
export type { ListingFailure } from './upstream-listing-failure.js';
export type { PolicyReloadResult, PolicyRuleCounts } from './policy-reload.js';
export type { UpstreamCatalog } from './upstream-catalog.js';
export { loadGatewayConfig, type GatewayConfig } from './gateway-config.js';
export { DEFAULT_METRICS_HOST, type MetricsConfig } from './metrics-config.js';
export type { SharedStoreConfig } from './shared-store-config.js';
export type { SessionSealConfig } from './session-seal-config.js';
export {
  createUpstreamProxy,
  GATEWAY_JSONRPC_CODE,
  SESSION_NOT_FOUND_JSONRPC_CODE,
  type IdentityHeaderNames,
  type SessionRefusal,
  type SessionRefusalReason,
  type SealedSessionRefusalReason,
  type UpstreamProxy,
  type UpstreamProxyOptions,
  type UpstreamFailure,
  type UpstreamFailureReason,
  type UpstreamExchange,
} from './upstream-proxy.js';
export {
  clientCredentials,
  staticCredentials,
  UPSTREAM_AUTH_MODES,
  type UpstreamAuthMode,
  type UpstreamCredentials,
} from './upstream-credentials.js';
export { tokenExchangeCredentials, TOKEN_EXCHANGE_GRANT_TYPE, type TokenExchangeOptions } from './token-exchange.js';
export { createUpstreamTokenClient, UpstreamTokenRefusedError, type IssuedToken, type TokenRequest, type UpstreamTokenClient, type UpstreamTokenClientOptions } from './upstream-token-client.js';
export { createUpstreamTargetResolver, type UpstreamTarget, type UpstreamTargetOptions } from './upstream-resource-metadata.js';
export { createUpstreamCredentials, type UpstreamAuthConfig } from './upstream-auth-config.js';
export { createStdioUpstream, UPSTREAM_BUSY_JSONRPC_CODE, type StdioUpstream, type StdioUpstreamOptions } from './stdio-upstream.js';
export type { ChildEndReason, ChildLogEvent } from './stdio-child.js';
export { createStdioStartOutcomes, type StdioStartOutcome, type StdioStartOutcomes, type StdioStartOutcomesOptions, type StdioStartWatch } from './stdio-start-outcome.js';
export { childEnvironment, CALLER_CLIENT_ID_ENV, CALLER_SUBJECT_ENV } from './child-environment.js';
export { splitCommandLine } from './command-line.js';
export { createRequestLog, type RequestLog, type RequestLogEntry, type RequestLogOptions } from './request-log.js';
