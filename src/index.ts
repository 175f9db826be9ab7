// Public API of mcp-oauth-guard. Re-exports only.
export { mcpOAuthGuard, type McpOAuthGuardOptions, type McpOAuthGuardRouter } from './express/mcp-oauth-guard.js';
export {
  httpHandler,
  isHttpHandler,
  type GuardedRequest,
  type HttpHandlerContext,
  type HttpHandlerOptions,
  type McpHttpHandler,
} from './http/http-handler.js';
export { fetchHandler, type FetchHandle, type FetchHandlerContext, type FetchHandlerOptions } from './http/fetch-handler.js';
export { createGuard, type Guard, type GuardHttpResponse, type DecisionContext } from './core/create-guard.js';
export type { GuardOptions } from './core/guard-options.js';
export { loadOptionsFromEnv, ENV_SETTING_NAMES, ASYMMETRIC_ALGORITHMS } from './core/load-options-from-env.js';
export { resolveGuardOptions, type ResolvedGuardOptions, type SettingNames } from './core/resolve-guard-options.js';
export type { AuthInfo, AuthInfoExtra } from './core/auth-info.js';
export type { DecisionEvent, DecisionHook, DecisionReason } from './core/decision.js';
export type { HandlerContext, HandlerResult, McpMessageHandler } from './core/handler.js';
export type { PolicyDefinition, ScopeRule, NamedScopeRules } from './core/policy-definition.js';
export type { TokenVerifier, TokenVerifierOptions, IntrospectionOptions, TokenCacheOptions } from './core/token-verifier.js';
export {
  GuardError,
  MissingTokenError,
  InvalidRequestError,
  InvalidTokenError,
  InsufficientScopeError,
  AuthorizationServerUnavailableError,
  RequestRejectedError,
  ConfigurationError,
  type BearerErrorCode,
} from './core/errors.js';
export {
  JsonRpcErrorCode,
  jsonRpcError,
  isJsonRpcNotification,
  isJsonRpcRequest,
  isJsonRpcResponse,
  type JsonRpcErrorObject,
  type JsonRpcErrorResponse,
  type JsonRpcId,
  type JsonRpcMessage,
  type JsonRpcNotification,
  type JsonRpcRequest,
  type JsonRpcResponse,
  type JsonRpcSuccess,
} from './core/jsonrpc.js';
export { canonicalizeResourceUri, protectedResourceMetadataUrls, isLoopbackHost } from './core/canonical-resource.js';
export { formatBearerChallenge, quoteHeaderValue, type BearerChallengeParams } from './core/www-authenticate.js';
export { buildProtectedResourceMetadata, type ProtectedResourceMetadata } from './core/protected-resource-metadata.js';
export { parseJsonRpcMessage, type ParsedBody } from './core/parse-json-rpc-message.js';
export { checkMcpRequestHeaders, decodeMirroredHeaderValue } from './core/mcp-request-headers.js';
export { createTokenVerifier } from './core/create-token-verifier.js';
export { extractBearerToken } from './core/bearer-token.js';
export { compilePolicy, type CompiledPolicy } from './core/compile-policy.js';
export { loadPolicyFile } from './core/load-policy-file.js';
export { dispatchTable, JsonRpcMethodError, type MethodHandler } from './core/dispatch-table.js';
export { filterListResponse, type FilterListResponseOptions } from './http/filter-list-response.js';
export {
  createUpstreamProxy,
  GATEWAY_JSONRPC_CODE,
  type IdentityHeaderNames,
  type UpstreamProxy,
  type UpstreamProxyOptions,
  type UpstreamFailure,
  type UpstreamFailureReason,
} from './gateway/upstream-proxy.js';
export { startGateway, type RunningGateway, type StartGatewayOptions } from './gateway/start-gateway.js';
export { loadGatewayConfig, parseGatewayArgs, gatewayHelp, GATEWAY_SETTINGS, type GatewayConfig } from './gateway/gateway-config.js';
export { createRequestLog, type RequestLog, type RequestLogEntry, type RequestLogOptions } from './gateway/request-log.js';
