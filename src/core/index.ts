/**
 * Entry point `mcp-oauth-guard/core`: the framework-free resource server and its building blocks, for
 * adapters to other frameworks and runtimes. Nothing here imports node:http or Express. Re-exports only.
 *
 * @module mcp-oauth-guard/core
 */
export { createGuard, type Guard, type GuardHttpResponse, type DecisionContext, type SetPolicyOptions } from './guard/create-guard.js';
export type { GuardOptions, HiddenTarget } from './guard/guard-options.js';
export { REDACTED_MARKER, type JsonPointer } from './audit/json-pointer.js';
export { TRUNCATED_MARKER, type AuditRecord } from './audit/audit-record.js';
export type { AuditDestination, AuditOptions, AuditSink, ResolvedAuditDestination, ResolvedAuditOptions } from './audit/audit-options.js';
export { LOG_LEVELS, type GuardLogger, type GuardLogOptions, type LogLevel } from './kernel/log-options.js';
export type { ListedServerCatalog } from './policy/read-server-catalog.js';
export { resolveGuardOptions, type ResolvedGuardOptions, type SettingNames } from './guard/resolve-guard-options.js';
export { loadOptionsFromEnv, GUARD_ENV_VARIABLES, type EnvironmentVariables, type LoadOptionsFromEnvOptions } from './guard/load-options-from-env.js';
export { ConfigurationProblems, collectConfigurationProblems } from './kernel/configuration-problems.js';
export { readSetting, parseIntegerSetting } from './kernel/settings.js';
export { checkPolicyCoverage, type CoverageKind, type KindCoverage, type PolicyCoverage, type ServerCatalog, type UnmatchedRule } from './policy/policy-coverage.js';
export { findUnknownSettings, describeUnknownSetting, refuseUnknownSettings, type UnknownSetting } from './kernel/unknown-settings.js';
export type { AuthInfo, AuthInfoExtra } from './kernel/auth-info.js';
export { DECISION_REQUEST_HEADERS, type DecisionEvent, type DecisionHook, type DecisionReason, type DecisionRequest } from './kernel/decision.js';
export type { HandlerContext, HandlerResult, McpMessageHandler } from './mcp/handler.js';
export type { PolicyDefinition, RateLimitsDefinition, ScopeRule, NamedScopeRules, ConditionalRule } from './policy/policy-definition.js';
export type { TokenVerifier, TokenVerifierOptions, VerificationContext, IntrospectionOptions, TokenCacheOptions, TokenVerificationResult, JwksFetchResult } from './token/token-verifier.js';
export { createTokenVerifier } from './token/create-token-verifier.js';
export { cachedOrVerify } from './token/token-verifier.js';
export { explainFailure } from './kernel/explain-failure.js';
export { IssuerDiscoveryError, type DiscoveryFailure, type DiscoveryFailureKind } from './token/issuer-discovery.js';
export { extractBearerToken, type BearerTokenHeaders } from './token/bearer-token.js';
export { readAccessToken, type AccessTokenCredentials, type AuthorizationScheme, type ReadAccessTokenOptions } from './token/authorization-header.js';
export {
  verifyDpopProof,
  readDpopProofHeader,
  accessTokenHash,
  DPOP_SIGNING_ALGORITHMS,
  DPOP_PROOF_WINDOW_SECONDS,
  MAX_DPOP_JTI_LENGTH,
  type DpopProofExpectations,
  type VerifiedDpopProof,
} from './dpop/dpop-proof.js';
export type { DpopRequest } from './dpop/dpop-authenticator.js';
export { boundThumbprint, type DpopMode } from './token/token-binding.js';
export {
  createMemoryReplayCache,
  DEFAULT_REPLAY_CACHE_MAX_ENTRIES,
  DEFAULT_REPLAY_CACHE_MAX_ENTRIES_PER_CALLER,
  ReplayShareExceededError,
  type ReplayCache,
  type MemoryReplayCache,
  type MemoryReplayCacheOptions,
} from './limits/replay-cache.js';
export { parseRateLimit, type RateLimit, type ToolRateLimit } from './limits/rate-limit.js';
export {
  createMemoryRateLimiter,
  DEFAULT_RATE_LIMITER_MAX_ENTRIES,
  type RateLimiter,
  type MemoryRateLimiter,
  type MemoryRateLimiterOptions,
} from './limits/rate-limiter.js';
export { createRateLimitCheck, rateLimitKey, type RateLimitCheck, type RateLimitCheckOptions } from './limits/rate-limit-check.js';
export { isScopeToken } from './wire/scope-token.js';
export { compilePolicy, isListMethod, type AuthorizationDecision, type CompiledPolicy, type CompilePolicyOptions } from './policy/compile-policy.js';
export { compilePolicySet, type PolicySetOptions, type PolicySetServer } from './policy/policy-set.js';
export { compileToolSelection, type ToolSelection, type ToolSelectionDefinition } from './policy/tool-selection.js';
export { EXPOSED_NAME_SEPARATOR, exposeName, splitExposedName, type ExposedName } from './mcp/exposed-names.js';
export { loadPolicyFile } from './policy/load-policy-file.js';
export { dispatchTable, JsonRpcMethodError, type MethodHandler } from './mcp/dispatch-table.js';
export { canonicalizeResourceUri, protectedResourceMetadataUrls, isLoopbackHost } from './kernel/canonical-resource.js';
export { formatBearerChallenge, formatDpopChallenge, quoteHeaderValue, type BearerChallengeParams, type DpopChallengeParams } from './guard/www-authenticate.js';
export { buildProtectedResourceMetadata, type ProtectedResourceMetadata } from './guard/protected-resource-metadata.js';
export { parseJsonRpcMessage, type ParsedBody } from './mcp/parse-json-rpc-message.js';
export { decodeMirroredHeaderValue, encodeHeaderValue } from './wire/header-value-encoding.js';
export { checkMcpRequestHeaders, type McpRequestHeaders } from './mcp/mcp-request-headers.js';
export { DEFAULT_JWT_ALGORITHMS, SUPPORTED_JWS_ALGORITHMS, isSupportedJwsAlgorithm } from './jwt/jws-algorithms.js';
export { isStatelessRevision, httpStatusForResponse, LATEST_SESSION_PROTOCOL_VERSION, STATELESS_PROTOCOL_VERSION } from './mcp/protocol-version.js';
export { answerRewrites, createResponseFilter, isFilteredMethod, UNKNOWN_REQUEST, type AnswerRewrites, type ResponseFilter } from './policy/response-filter.js';
export { LISTS_MODES, type ListsMode } from './policy/lists-mode.js';
export { createPendingRequestIds, pendingIdRefusal, type PendingIdRefusal, type PendingRequestIds, type PendingRequestIdsOptions } from './mcp/pending-request-ids.js';
export { createEventStreamRewriter, eventStreamData, type EventStreamRewriter, type EventStreamRewriterOptions } from './wire/event-stream.js';
export { callerKey, callerOrIssuerKey } from './kernel/caller-key.js';
export {
  createSessionRegistry,
  type BindOutcome,
  type BoundInUse,
  type BoundSession,
  type SessionRegistry,
  type SessionRegistryOptions,
  type SessionRefusalReason,
  type SessionReservation,
} from './session/session-registry.js';
export {
  createSessionSealer,
  parseSessionSecret,
  DEFAULT_SESSION_MAX_AGE_MS,
  type OpenedSession,
  type SealedSessionRefusalReason,
  type SessionSealer,
  type SessionSealerOptions,
  type SessionSealKey,
} from './session/session-seal.js';
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
} from './kernel/errors.js';
export {
  JsonRpcErrorCode,
  jsonRpcError,
  isJsonRpcNotification,
  isJsonRpcRequest,
  isJsonRpcResponse,
  requestIdOf,
  type JsonRpcErrorObject,
  type JsonRpcErrorResponse,
  type JsonRpcId,
  type JsonRpcMessage,
  type JsonRpcNotification,
  type JsonRpcRequest,
  type JsonRpcResponse,
  type JsonRpcSuccess,
} from './wire/jsonrpc.js';
