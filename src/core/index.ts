/**
 * Entry point `mcp-oauth-guard/core`: the framework-free resource server and its building blocks, for
 * adapters to other frameworks and runtimes. Nothing here imports node:http or Express. Re-exports only.
 *
 * @module mcp-oauth-guard/core
 */
export { createGuard, type Guard, type GuardHttpResponse, type DecisionContext, type SetPolicyOptions } from './create-guard.js';
export type { GuardOptions } from './guard-options.js';
export { resolveGuardOptions, type ResolvedGuardOptions, type SettingNames } from './resolve-guard-options.js';
export { loadOptionsFromEnv, GUARD_ENV_VARIABLES, type EnvironmentVariables, type LoadOptionsFromEnvOptions } from './load-options-from-env.js';
export { ConfigurationProblems, collectConfigurationProblems } from './configuration-problems.js';
export { checkPolicyCoverage, type CoverageKind, type KindCoverage, type PolicyCoverage, type ServerCatalog, type UnmatchedRule } from './policy-coverage.js';
export { findUnknownSettings, describeUnknownSetting, refuseUnknownSettings, type UnknownSetting } from './unknown-settings.js';
export type { AuthInfo, AuthInfoExtra } from './auth-info.js';
export { DECISION_REQUEST_HEADERS, type DecisionEvent, type DecisionHook, type DecisionReason, type DecisionRequest } from './decision.js';
export type { HandlerContext, HandlerResult, McpMessageHandler } from './handler.js';
export type { PolicyDefinition, RateLimitsDefinition, ScopeRule, NamedScopeRules } from './policy-definition.js';
export type { TokenVerifier, TokenVerifierOptions, VerificationContext, IntrospectionOptions, TokenCacheOptions, TokenVerificationResult, JwksFetchResult } from './token-verifier.js';
export { createTokenVerifier } from './create-token-verifier.js';
export { cachedOrVerify } from './token-verifier.js';
export { explainFailure } from './explain-failure.js';
export { IssuerDiscoveryError, type DiscoveryFailure, type DiscoveryFailureKind } from './issuer-discovery.js';
export { extractBearerToken, type BearerTokenHeaders } from './bearer-token.js';
export { readAccessToken, type AccessTokenCredentials, type AuthorizationScheme, type ReadAccessTokenOptions } from './authorization-header.js';
export {
  verifyDpopProof,
  readDpopProofHeader,
  accessTokenHash,
  DPOP_SIGNING_ALGORITHMS,
  DPOP_PROOF_WINDOW_SECONDS,
  MAX_DPOP_JTI_LENGTH,
  type DpopProofExpectations,
  type VerifiedDpopProof,
} from './dpop-proof.js';
export type { DpopRequest } from './dpop-authenticator.js';
export { boundThumbprint, type DpopMode } from './token-binding.js';
export {
  createMemoryReplayCache,
  DEFAULT_REPLAY_CACHE_MAX_ENTRIES,
  DEFAULT_REPLAY_CACHE_MAX_ENTRIES_PER_CALLER,
  ReplayShareExceededError,
  type ReplayCache,
  type MemoryReplayCache,
  type MemoryReplayCacheOptions,
} from './replay-cache.js';
export { parseRateLimit, type RateLimit } from './rate-limit.js';
export {
  createMemoryRateLimiter,
  DEFAULT_RATE_LIMITER_MAX_ENTRIES,
  type RateLimiter,
  type MemoryRateLimiter,
  type MemoryRateLimiterOptions,
} from './rate-limiter.js';
export { createRateLimitCheck, rateLimitKey, type RateLimitCheck, type RateLimitCheckOptions } from './rate-limit-check.js';
export { isScopeToken } from './scope-token.js';
export { compilePolicy, isListMethod, type AuthorizationDecision, type CompiledPolicy, type CompilePolicyOptions } from './compile-policy.js';
export { loadPolicyFile } from './load-policy-file.js';
export { dispatchTable, JsonRpcMethodError, type MethodHandler } from './dispatch-table.js';
export { canonicalizeResourceUri, protectedResourceMetadataUrls, isLoopbackHost } from './canonical-resource.js';
export { formatBearerChallenge, formatDpopChallenge, quoteHeaderValue, type BearerChallengeParams, type DpopChallengeParams } from './www-authenticate.js';
export { buildProtectedResourceMetadata, type ProtectedResourceMetadata } from './protected-resource-metadata.js';
export { parseJsonRpcMessage, type ParsedBody } from './parse-json-rpc-message.js';
export { decodeMirroredHeaderValue, encodeHeaderValue } from './header-value-encoding.js';
export { checkMcpRequestHeaders, type McpRequestHeaders } from './mcp-request-headers.js';
export { DEFAULT_JWT_ALGORITHMS, SUPPORTED_JWS_ALGORITHMS, isSupportedJwsAlgorithm } from './jws-algorithms.js';
export { isStatelessRevision, httpStatusForResponse, LATEST_SESSION_PROTOCOL_VERSION, STATELESS_PROTOCOL_VERSION } from './protocol-version.js';
export { createResponseFilter, isFilteredMethod, UNKNOWN_REQUEST, type ResponseFilter } from './response-filter.js';
export { createPendingRequestIds, pendingIdRefusal, type PendingIdRefusal, type PendingRequestIds, type PendingRequestIdsOptions } from './pending-request-ids.js';
export { createEventStreamRewriter, eventStreamData, type EventStreamRewriter, type EventStreamRewriterOptions } from './event-stream.js';
export {
  createSessionRegistry,
  callerKey,
  type BindOutcome,
  type BoundSession,
  type SessionRegistry,
  type SessionRegistryOptions,
  type SessionRefusalReason,
  type SessionReservation,
} from './session-registry.js';
export {
  createSessionSealer,
  parseSessionSecret,
  DEFAULT_SESSION_MAX_AGE_MS,
  type OpenedSession,
  type SealedSessionRefusalReason,
  type SessionSealer,
  type SessionSealerOptions,
  type SessionSealKey,
} from './session-seal.js';
export {
  GuardError,
  MissingTokenError,
  InvalidRequestError,
  InvalidTokenError,
  InvalidDpopProofError,
  InsufficientScopeError,
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
} from './errors.js';
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
} from './jsonrpc.js';
