// Entry point `mcp-oauth-guard/gateway`: the gateway as a library — the upstream proxy (an MCP HTTP handler
// for the request pipeline) and `startGateway`, configured from the same settings as the CLI. Re-exports only.
export { startGateway, type RunningGateway, type StartGatewayOptions } from './start-gateway.js';
export { loadGatewayConfig, type GatewayConfig } from './gateway-config.js';
export {
  createUpstreamProxy,
  GATEWAY_JSONRPC_CODE,
  SESSION_NOT_FOUND_JSONRPC_CODE,
  type IdentityHeaderNames,
  type SessionRefusal,
  type SessionRefusalReason,
  type UpstreamProxy,
  type UpstreamProxyOptions,
  type UpstreamFailure,
  type UpstreamFailureReason,
} from './upstream-proxy.js';
export { createRequestLog, type RequestLog, type RequestLogEntry, type RequestLogOptions } from './request-log.js';
