/**
 * Entry point `mcp-oauth-guard`: what a middleware user needs. Re-exports only.
 * The framework-free guard and its building blocks are in `mcp-oauth-guard/core`; the `node:http` pipeline and
 * its building blocks, without Express, in `mcp-oauth-guard/http`; the gateway as a library in
 * `mcp-oauth-guard/gateway`; the SDK adapters in `mcp-oauth-guard/sdk` and `mcp-oauth-guard/sdk2`.
 *
 * Names marked deprecated are building blocks that earlier 0.1 builds exported here: they still work, and leave
 * this entry in 0.2 (docs/development.md, "Moving from 0.1").
 *
 * @module mcp-oauth-guard
 */
export { mcpOAuthGuard, type McpOAuthGuardOptions, type McpOAuthGuardRouter } from './express/mcp-oauth-guard.js';
export { createRequestPipeline, type McpHandler, type RequestPipeline } from './http/request-pipeline.js';
// The guard itself, for createRequestPipeline; its building blocks are in mcp-oauth-guard/core.
export { createGuard } from './core/guard/create-guard.js';
export {
  httpHandler,
  /** @deprecated Import it from `mcp-oauth-guard/http`; it leaves the main entry in 0.2. */
  isHttpHandler,
  type GuardedRequest,
  type HttpHandlerContext,
  type HttpHandlerOptions,
  type McpHttpHandler,
} from './http/http-handler.js';
export { decisionRequestOf } from './http/decision-request.js';
export { answerClientErrors } from './http/client-error.js';
export { fetchHandler, type FetchHandle, type FetchHandlerContext, type FetchHandlerOptions } from './http/fetch-handler.js';
export {
  /** @deprecated Import it from `mcp-oauth-guard/http`; it leaves the main entry in 0.2. */
  filterListResponse,
  /** @deprecated Import it from `mcp-oauth-guard/http`; it leaves the main entry in 0.2. */
  type FilterListResponseOptions,
  /** @deprecated Import it from `mcp-oauth-guard/http`; it leaves the main entry in 0.2. */
  type ListAnswerMemo,
} from './http/filter-written-response.js';
export {
  loadOptionsFromEnv,
  /** @deprecated Import it from `mcp-oauth-guard/core`; it leaves the main entry in 0.2. */
  GUARD_ENV_VARIABLES,
  type EnvironmentVariables,
  type LoadOptionsFromEnvOptions,
} from './core/guard/load-options-from-env.js';
export {
  /** @deprecated Import it from `mcp-oauth-guard/core`; it leaves the main entry in 0.2. */
  ConfigurationProblems,
  /** @deprecated Import it from `mcp-oauth-guard/core`; it leaves the main entry in 0.2. */
  collectConfigurationProblems,
} from './core/kernel/configuration-problems.js';
export { checkPolicyCoverage, type CoverageKind, type KindCoverage, type PolicyCoverage, type ServerCatalog, type UnmatchedRule } from './core/policy/policy-coverage.js';
export {
  /** @deprecated Import it from `mcp-oauth-guard/core`; it leaves the main entry in 0.2. */
  findUnknownSettings,
  /** @deprecated Import it from `mcp-oauth-guard/core`; it leaves the main entry in 0.2. */
  describeUnknownSetting,
  /** @deprecated Import it from `mcp-oauth-guard/core`; it leaves the main entry in 0.2. */
  refuseUnknownSettings,
  /** @deprecated Import it from `mcp-oauth-guard/core`; it leaves the main entry in 0.2. */
  type UnknownSetting,
} from './core/kernel/unknown-settings.js';
export { explainFailure } from './core/kernel/explain-failure.js';
export { dispatchTable, JsonRpcMethodError, type MethodHandler } from './core/mcp/dispatch-table.js';
export type {
  Guard,
  /** @deprecated Import it from `mcp-oauth-guard/core`; it leaves the main entry in 0.2. */
  GuardHttpResponse,
  /** @deprecated Import it from `mcp-oauth-guard/core`; it leaves the main entry in 0.2. */
  DecisionContext,
  SetPolicyOptions,
} from './core/guard/create-guard.js';
export type { GuardOptions, HiddenTarget } from './core/guard/guard-options.js';
export type { AuditDestination, AuditOptions, AuditSink } from './core/audit/audit-options.js';
export type { AuditRecord } from './core/audit/audit-record.js';
export { LOG_LEVELS, type GuardLogger, type GuardLogOptions, type LogLevel } from './core/kernel/log-options.js';
export type { ListedServerCatalog } from './core/policy/read-server-catalog.js';
export type { SettingNames } from './core/guard/resolve-guard-options.js';
export type { AuthInfo, AuthInfoExtra } from './core/kernel/auth-info.js';
export { DECISION_REQUEST_HEADERS, type DecisionEvent, type DecisionHook, type DecisionReason, type DecisionRequest } from './core/kernel/decision.js';
export type { HandlerContext, HandlerResult, McpMessageHandler } from './core/mcp/handler.js';
export type { PolicyDefinition, RateLimitsDefinition, ScopeRule, NamedScopeRules, ConditionalRule } from './core/policy/policy-definition.js';
export type { TokenVerifierOptions, IntrospectionOptions, TokenCacheOptions, TokenVerificationResult, JwksFetchResult } from './core/token/token-verifier.js';
export type { DpopMode } from './core/token/token-binding.js';
export type { ListsMode } from './core/policy/lists-mode.js';
export { createMemoryReplayCache, ReplayShareExceededError, type ReplayCache, type MemoryReplayCache, type MemoryReplayCacheOptions } from './core/limits/replay-cache.js';
export { createMemoryRateLimiter, type RateLimiter, type MemoryRateLimiter, type MemoryRateLimiterOptions } from './core/limits/rate-limiter.js';
export type { RateLimit } from './core/limits/rate-limit.js';
export {
  GuardError,
  MissingTokenError,
  InvalidRequestError,
  InvalidTokenError,
  InvalidDpopProofError,
  InsufficientScopeError,
  ConditionDeniedError,
  AuthorizationServerUnavailableError,
  RequestRejectedError,
  RateLimitedError,
  ConfigurationError,
  type ConfigurationProblem,
  UNAUTHORIZED_JSONRPC_CODE,
  FORBIDDEN_JSONRPC_CODE,
  UNAVAILABLE_JSONRPC_CODE,
  RATE_LIMITED_JSONRPC_CODE,
  type BearerErrorCode,
  type ChallengeErrorCode,
} from './core/kernel/errors.js';
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
} from './core/wire/jsonrpc.js';
