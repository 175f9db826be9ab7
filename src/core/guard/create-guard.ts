import type { AuthInfo } from '../kernel/auth-info.js';
import { protectedResourceMetadataUrls } from '../kernel/canonical-resource.js';
import { readAccessToken, type ReadAccessTokenOptions } from '../token/authorization-header.js';
import { compilePolicy, isCompiledPolicy, type CompiledPolicy } from '../policy/compile-policy.js';
import { createTokenVerifier, DEFAULT_CLOCK_TOLERANCE_SECONDS } from '../token/create-token-verifier.js';
import { createDpopAuthenticator, type DpopRequest } from '../dpop/dpop-authenticator.js';
import { DPOP_SIGNING_ALGORITHMS } from '../dpop/dpop-proof.js';
import { boundedText, type DecisionEvent, type DecisionReason, type DecisionRequest } from '../kernel/decision.js';
import { collectConfigurationProblems } from '../kernel/configuration-problems.js';
import { ConfigurationError, GuardError, RequestRejectedError, type BearerErrorCode } from '../kernel/errors.js';
import { policyRefusal } from '../policy/insufficient-scope.js';
import { ruleErrorWarnings } from '../policy/rule-error-log.js';
import type { RuleErrorHook } from '../policy/evaluate-policy.js';
import { warningSink } from '../kernel/log-options.js';
import { introspectionRateLimitWarnings } from '../token/introspection-rate-limit-log.js';
import { DEFAULT_INTROSPECTION_CACHE_TTL_SECONDS } from '../token/verifier-defaults.js';
import type { GuardOptions, HiddenTarget } from './guard-options.js';
import type { PolicyDefinition } from '../policy/policy-definition.js';
import { JsonRpcErrorCode, jsonRpcError, type JsonRpcErrorResponse, type JsonRpcId, type JsonRpcMessage } from '../wire/jsonrpc.js';
import { checkMcpRequestHeaders, type McpRequestHeaders } from '../mcp/mcp-request-headers.js';
import { checkRequestTarget } from '../mcp/check-request-target.js';
import { checkRequestRevision } from '../mcp/check-request-revision.js';
import { createOriginCheck } from './origin-check.js';
import { parseJsonRpcMessage, type ParsedBody } from '../mcp/parse-json-rpc-message.js';
import { createResponseFilter } from '../policy/response-filter.js';
import { buildProtectedResourceMetadata, type ProtectedResourceMetadata } from './protected-resource-metadata.js';
import { createMemoryReplayCache } from '../limits/replay-cache.js';
import { parseRateLimit, type RateLimit } from '../limits/rate-limit.js';
import { createRateLimitCheck } from '../limits/rate-limit-check.js';
import { createMemoryRateLimiter, type RateLimiter } from '../limits/rate-limiter.js';
import { resolveGuardOptions, type ResolvedGuardOptions, type SettingNames } from './resolve-guard-options.js';
import { checkBearerUse, dpopRequired, resolveDpopMode, type DpopMode } from '../token/token-binding.js';
import { cachedOrVerify, type TokenVerifier } from '../token/token-verifier.js';
import { formatBearerChallenge, formatDpopChallenge } from './www-authenticate.js';
import { exposeName, splitExposedName } from '../mcp/exposed-names.js';
import { unknownNameRefusal } from '../mcp/unknown-name.js';

/** An HTTP answer the adapter writes as is. */
export interface GuardHttpResponse {
  status: number;
  headers: Record<string, string>;
  body: JsonRpcErrorResponse;
}

/** Request facts the decision hook is told about. */
export interface DecisionContext {
  /** The request, as `onDecision` may see it (no credentials): see {@link DecisionRequest}. */
  request?: DecisionRequest;
  httpMethod: string;
  message?: JsonRpcMessage;
  auth?: AuthInfo;
  requiredScopes?: readonly string[];
  /** The policy rule that decided (see `DecisionEvent.rule`). */
  rule?: string;
  /** The condition of the deciding rule: the one that refused, or on an allow the one that held (see `DecisionEvent.condition`). */
  condition?: string;
  /** The server the request is for, with several behind one endpoint (see `DecisionEvent.server`). */
  server?: string;
  /** On a deny, the message the client was told. */
  detail?: string;
}

/** Options of {@link Guard.setPolicy}. */
export interface SetPolicyOptions {
  /** Where the definition came from (e.g. `policy file /etc/mcp/policy.json`), appended to error messages. Default: none. */
  source?: string;
}

/**
 * The framework-agnostic resource server: everything an adapter (Express, or any other) needs to
 * protect an MCP endpoint, precomputed once per policy. Adapters take {@link Guard.snapshot} when a request
 * arrives and call on it, in order: `checkOrigin`, `authenticate`, `parseMessage`, `authorize`, then hand the
 * message to the MCP handler and pass list results through `filterResponse`. Any step may throw a
 * `GuardError`; `errorResponse` turns it into the answer.
 */
export interface Guard {
  readonly options: ResolvedGuardOptions;
  /** Canonical resource URI (RFC 8707 §2): metadata `resource` and required audience. */
  readonly resource: string;
  /** Path the MCP endpoint is served at. */
  readonly resourcePath: string;
  /** URL of the path-suffixed metadata document, as sent in `resource_metadata` (RFC 9728 §5.1). */
  readonly resourceMetadataUrl: string;
  /** Well-known paths the metadata is served at: path-suffixed, then root (RFC 9728 §3.1). */
  readonly metadataPaths: readonly string[];
  /** The metadata document (RFC 9728 §2) and its serialized form, computed once per policy (`scopes_supported`). */
  readonly metadata: ProtectedResourceMetadata;
  readonly metadataJson: string;
  /**
   * The compiled policy in force; `policy.definition` is what it was compiled from (`options.policy` stays the one
   * given at creation). See {@link Guard.setPolicy}.
   */
  readonly policy: CompiledPolicy;
  readonly verifier: TokenVerifier;
  /** What the guard does with DPoP (RFC 9449): `off`, `allow` or `require` (see {@link DpopMode}). */
  readonly dpop: DpopMode;
  /** Throws 403 when `Origin` is present and not allowed. */
  checkOrigin(origin: string | undefined): void;
  /**
   * Reads the access token (the `Authorization` header only: `Bearer`, or `DPoP` unless `dpop` is `off`) and
   * verifies it: the identity itself when nothing must be waited for (a Bearer token in the cache, or a new JWT
   * whose issuer's key is already held: no promise on the hot path), else a promise. A `DPoP` request also has its proof checked (RFC 9449 §4.3, §7), which needs `request`: the method
   * and the `DPoP` header values; without it such requests are refused. Its `clientAddress`, when given, bounds
   * the introspection refusals per client address (`introspection.refusalsPerAddress`). Throws or rejects with
   * 400/401/429/503 `GuardError`s.
   */
  authenticate(authorization: string | string[] | undefined, url: string, request?: DpopRequest): AuthInfo | Promise<AuthInfo>;
  /** Parses one JSON-RPC message (400 on bad JSON, bad JSON-RPC, batches, excessive depth). */
  parseMessage(body: string): ParsedBody;
  /**
   * Checks one message, in this order: mirrored headers (2026-07-28; 400, -32020), the request's revision (a
   * method it removed: 404, -32601; a missing or invalid `_meta`: 400, -32602), its target (a name or URI the
   * policy cannot read exactly as it will be served, a URI not in its resolved form included: 400, -32602), and
   * the scope policy (403, `insufficient_scope`). Returns the protocol version and the scopes the message
   * required, with the rule, its condition and the server (see `DecisionEvent`) when the policy names them. A
   * message that passes is forwarded unchanged: what was authorized is what the handler gets.
   */
  authorize(message: JsonRpcMessage, auth: AuthInfo, headers: McpRequestHeaders): { protocolVersion?: string; requiredScopes: readonly string[]; rule?: string; condition?: string; server?: string };
  /** Checks that the token has the base scopes (for GET/DELETE, which carry no message). */
  authorizeBase(auth: AuthInfo): readonly string[];
  /**
   * The refusals of {@link Guard.authorize} that do not depend on which targets are hidden (`hiddenTarget`), for an
   * adapter to give at once before it waits for what decides that (a handler's `holdBeforeDecision`): the same
   * header, revision and target checks, then the policy, when it refuses the message whether its target is hidden
   * or not (a caller without the base scopes, a method rule it fails). Such a refusal is the one a hidden target
   * gets (by the rules every name meets), so that it never tells whether the target is there. Returns when the
   * outcome may depend on it: `authorize` decides after the wait. Without `hiddenTarget`, the whole decision.
   */
  refuseBeforeHold(message: JsonRpcMessage, auth: AuthInfo, headers: McpRequestHeaders): void;
  /**
   * Counts an authorized request against the rate limits (`rateLimit`, and the policy's `rateLimits.tools` for a
   * `tools/call`): throws or rejects with a 429 `GuardError` (`Retry-After`) over a limit, 503 when a shared
   * store is unavailable. Undefined when no limit is set, so adapters skip it at no cost; with the in-memory
   * limiter it returns without a promise.
   */
  readonly checkRateLimit: ((message: JsonRpcMessage | undefined, auth: AuthInfo) => void | Promise<void>) | undefined;
  /**
   * Filters the list results in a response (tools, prompts, resources, resource templates) to what the caller
   * may use, by the shape of the result, whatever request or id it carries (`request` only adds an empty list for
   * a list answer lacking its key, and the URI of a read; pass `UNKNOWN_REQUEST` when none is known). A public
   * read result not known to answer a read of a public resource becomes private. With `lists: "all"` lists are
   * left as written and only the read rule applies. See `response-filter.ts`.
   */
  filterResponse(request: JsonRpcMessage, response: JsonRpcMessage, auth: AuthInfo, protocolVersion?: string): JsonRpcMessage;
  /** The HTTP answer for an error; unknown errors become a 500 with no detail. Never includes a token. */
  errorResponse(error: unknown, id?: JsonRpcId | null): GuardHttpResponse;
  /**
   * Reports a decision to `onDecision`, if set; never throws. Returns the event when a hook or the audit trail
   * (`audit`) wants one, else undefined (no event is made for nobody).
   */
  report(decision: 'allow' | 'deny', reason: DecisionReason, status: number, context: DecisionContext): DecisionEvent | undefined;
  /** Runs issuer discovery now; rejects if the authorization server cannot be reached. */
  ready(): Promise<void>;
  /**
   * Puts a new policy in force for every request that arrives from now on, without a restart. The definition is
   * validated and compiled first, exactly as at creation: an invalid one throws the same `ConfigurationError`
   * (named as the policy was, e.g. `MCP_AUTH_POLICY` or `options.policy`) and the policy in force stays. A policy
   * compiled already (by `compilePolicy` or `compilePolicySet`) is put in force as it is (`options` unused).
   *
   * Everything derived from the policy follows at once: authorization, list filtering (and the pipeline's reuse
   * of filtered lists), the per-tool rate limits (the counters are kept), the bare 401 challenge's `scope`
   * (unless `challengeScopes` is set) and the metadata's `scopes_supported`. Requests in progress finish under
   * the policy they started with (see {@link Guard.snapshot}); sessions and cached tokens are kept. Calling it on
   * a snapshot changes the guard the snapshot came from.
   *
   * @returns The compiled policy now in force.
   * @throws ConfigurationError naming the setting and the path at fault; nothing is changed then.
   * @example
   * import { loadPolicyFile } from 'mcp-oauth-guard/core';
   * process.on('SIGHUP', () => {
   *   try {
   *     router.guard.setPolicy(loadPolicyFile('policy.json'));
   *   } catch (error) {
   *     console.error(`policy not reloaded: ${(error as Error).message}`); // the policy in force stays
   *   }
   * });
   */
  setPolicy(definition: PolicyDefinition | CompiledPolicy, options?: SetPolicyOptions): CompiledPolicy;
  /**
   * This guard with the policy in force now held fixed: adapters take it when a request arrives, so that the
   * request is authorized, rate limited and filtered under one policy even if {@link Guard.setPolicy} runs
   * meanwhile. The same object until the next `setPolicy`, so taking it costs a property read.
   *
   * @example
   * const pinned = guard.snapshot();
   * const { requiredScopes } = pinned.authorize(message, auth, headers);
   */
  snapshot(): Guard;
}

const BASE_ONLY_MESSAGE: JsonRpcMessage = Object.freeze({ jsonrpc: '2.0', id: 0, result: {} }) as JsonRpcMessage;

/**
 * Builds a {@link Guard}. Validates every option first: one `ConfigurationError` names every bad option (see its
 * `problems`), each by the name it was configured under.
 */
export function createGuard(options: GuardOptions, names: SettingNames = {}): Guard {
  const policySetting = names.policy ?? 'options.policy';
  const onRuleError = guardRuleErrorLog(options);
  const settings = readGuardSettings(options, names, policySetting, onRuleError);
  const { resolved, verifier, dpopMode } = settings;
  const { url: resourceMetadataUrl, paths: metadataPaths } = protectedResourceMetadataUrls(resolved.resource);
  const authentication = createAuthentication(settings, names);
  // Made on first need and kept across policies, so that a reload does not hand every caller a fresh count.
  let limiter: RateLimiter | undefined;
  const maxJsonDepth = resolved.maxJsonDepth;
  const parts: GuardParts = {
    ...settings,
    resourceMetadataUrl,
    metadataPaths,
    authentication,
    parseMessage: (body) => parseJsonRpcMessage(body, maxJsonDepth),
    report: createDecisionReporter(resolved.onDecision, resolved.auditSettings !== undefined),
    ready: (): Promise<void> => verifier.ready(),
    rateLimiter: () => (limiter ??= resolved.rateLimiter ?? createMemoryRateLimiter()),
    setPolicy,
  };

  // The one place that holds the policy in force: replaced whole, so a snapshot never sees half of a change.
  let inForce = bindPolicy(parts, settings.initialPolicy);
  function setPolicy(definition: PolicyDefinition | CompiledPolicy, setOptions: SetPolicyOptions = {}): CompiledPolicy {
    const compiled = isCompiledPolicy(definition)
      ? definition
      : compilePolicy(definition, policySetting, setOptions.source === undefined ? { onRuleError } : { onRuleError, source: setOptions.source });
    inForce = bindPolicy(parts, compiled);
    return compiled;
  }

  return {
    options: resolved,
    resource: resolved.resource,
    resourcePath: resolved.resourcePath,
    resourceMetadataUrl,
    metadataPaths,
    get metadata() {
      return inForce.metadata;
    },
    get metadataJson() {
      return inForce.metadataJson;
    },
    get policy() {
      return inForce.policy;
    },
    verifier,
    dpop: dpopMode,
    checkOrigin: settings.checkOrigin,
    authenticate: authentication.authenticate,
    parseMessage: parts.parseMessage,
    authorize: (message, auth, headers) => inForce.authorize(message, auth, headers),
    authorizeBase: (auth) => inForce.authorizeBase(auth),
    refuseBeforeHold: (message, auth, headers) => inForce.refuseBeforeHold(message, auth, headers),
    get checkRateLimit() {
      return inForce.checkRateLimit;
    },
    filterResponse: (request, response, auth, protocolVersion) => inForce.filterResponse(request, response, auth, protocolVersion),
    errorResponse: (error, id) => inForce.errorResponse(error, id),
    report: parts.report,
    ready: parts.ready,
    setPolicy,
    snapshot: () => inForce,
  };
}

/** The options, validated and resolved together: see {@link createGuard}. */
interface GuardSettings {
  resolved: ResolvedGuardOptions;
  initialPolicy: CompiledPolicy;
  verifier: TokenVerifier;
  dpopMode: DpopMode;
  checkOrigin: Guard['checkOrigin'];
  callerLimit: RateLimit | undefined;
}

/** Reads every option, collecting the problems of all of them into one `ConfigurationError`. */
/**
 * Where a policy rule that could not be decided is logged: a rate-limited warning (see `rule-error-log.ts`) through
 * the guard's logger at level `warn`, else stderr.
 */
function guardRuleErrorLog(options: GuardOptions): RuleErrorHook {
  return ruleErrorWarnings(warningSink(typeof options === 'object' && options !== null ? options : undefined));
}

function readGuardSettings(options: GuardOptions, names: SettingNames, policySetting: string, onRuleError: RuleErrorHook): GuardSettings {
  return collectConfigurationProblems((problems) => {
    const resolved = problems.check(() => resolveGuardOptions(options, names));
    if (typeof options !== 'object' || options === null) problems.throwIfAny();
    const initialPolicy = problems.check(() => (isCompiledPolicy(options.policy) ? options.policy : compilePolicy(options.policy ?? {}, policySetting, { onRuleError })));
    const dpopMode = problems.check(() => resolveDpopMode(options.dpop, names.dpop ?? 'options.dpop'));
    const callerLimit = problems.check(() => (options.rateLimit === undefined ? undefined : parseRateLimit(options.rateLimit, names.rateLimit ?? 'options.rateLimit')));
    if (options.rateLimiter !== undefined && typeof (options.rateLimiter as { consume?: unknown }).consume !== 'function') {
      problems.add(names.rateLimiter ?? 'options.rateLimiter', 'must be an object with a consume(key, limit) method');
    }
    // These two need the issuers and the canonical resource, so they run only once those are valid.
    const verifier =
      resolved && problems.check(() => withSettingNames(names, () => createTokenVerifier({ ...resolved, issuer: undefined, issuers: resolved.issuers, resource: resolved.resource, boundTokens: 'return' })));
    const checkOrigin = resolved && problems.check(() => createOriginCheck(resolved.allowedOrigins, new URL(resolved.resource).origin, names.allowedOrigins ?? 'options.allowedOrigins'));
    problems.throwIfAny();
    return { resolved: resolved!, initialPolicy: initialPolicy!, verifier: verifier!, dpopMode: dpopMode!, checkOrigin: checkOrigin!, callerLimit };
  });
}

/** Reading and verifying the access token, and which refusals go in the DPoP challenge. */
interface Authentication {
  readonly authenticate: Guard['authenticate'];
  /** Whether the resource accepts Bearer tokens (not when DPoP is `require`d) and DPoP-bound ones (unless `off`). */
  readonly offersBearer: boolean;
  readonly offersDpop: boolean;
  /** `error`, remembered as a DPoP refusal when `auth`'s token is DPoP-bound. */
  refusalFor(error: GuardError, auth: AuthInfo): GuardError;
  /** Whether `error` refused a request that used the DPoP scheme (or a DPoP-bound token). */
  isDpopRefusal(error: GuardError): boolean;
}

/** The token side of the guard (RFC 6750, RFC 9449): the same for every policy. */
function createAuthentication({ resolved, verifier, dpopMode }: GuardSettings, names: SettingNames): Authentication {
  // DPoP (RFC 9449): which schemes are offered, and the proof side of authentication.
  const offersBearer = dpopMode !== 'require';
  const offersDpop = dpopMode !== 'off';
  const replayCache = offersDpop ? (resolved.dpopReplayCache ?? createMemoryReplayCache()) : undefined;
  if (replayCache !== undefined && typeof (replayCache as { claim?: unknown }).claim !== 'function') {
    throw new ConfigurationError(names.dpopReplayCache ?? 'options.dpopReplayCache', 'must be an object with a claim(jti, expiresAtMs) method');
  }
  const authenticateDpop =
    replayCache === undefined
      ? undefined
      : createDpopAuthenticator({
          resource: resolved.resource,
          replayCache,
          clockToleranceSeconds: resolved.clockToleranceSeconds ?? DEFAULT_CLOCK_TOLERANCE_SECONDS,
          mode: dpopMode,
        });
  const readOptions: ReadAccessTokenOptions = {
    dpop: offersDpop,
    missingTokenMessage:
      dpopMode === 'require'
        ? 'Authorization required: send a DPoP-bound OAuth 2.1 access token as "Authorization: DPoP <token>" with a DPoP proof header'
        : undefined,
  };
  /**
   * Refusals of requests that used the DPoP scheme (or a DPoP-bound token), whose error goes in the DPoP
   * challenge. Errors are made per request, except one shared by concurrent verifications of the same token.
   */
  const dpopRefusals = new WeakSet<GuardError>();
  const noteRefusal = introspectionWarnings(resolved, names);
  const rememberDpopRefusal = (error: unknown): never => {
    noteRefusal?.(error);
    if (error instanceof GuardError) dpopRefusals.add(error);
    throw error;
  };
  // Only with introspection: without it, a verification's promise gets no rejection handler of the guard's.
  const refused =
    noteRefusal === undefined
      ? undefined
      : (error: unknown): never => {
          noteRefusal(error);
          throw error;
        };
  return {
    offersBearer,
    offersDpop,
    authenticate(authorization, url, request) {
      const { scheme, token } = readAccessToken({ authorization }, url, readOptions);
      if (scheme === 'DPoP') return (authenticateDpop as NonNullable<typeof authenticateDpop>)(token, request, verifier).catch(rememberDpopRefusal);
      if (dpopMode === 'require') throw dpopRequired();
      // Hot path: a cached Bearer token, or a new JWT whose key is held, is answered with no promise.
      const auth = cachedOrVerify(verifier, token, request);
      return auth instanceof Promise ? auth.then((verified) => checkBearerUse(verified, dpopMode), refused) : checkBearerUse(auth, dpopMode);
    },
    refusalFor(error, auth) {
      if (offersDpop && auth.extra.claims['cnf'] !== undefined) dpopRefusals.add(error);
      return error;
    },
    isDpopRefusal: (error) => dpopRefusals.has(error),
  };
}

/**
 * The warning of an introspection endpoint answering 429 (see `introspection-rate-limit-log.ts`), naming the settings
 * as they were given, through the guard's logger at level `warn`; undefined without introspection.
 */
function introspectionWarnings(resolved: ResolvedGuardOptions, names: SettingNames): ((error: unknown) => void) | undefined {
  const introspection = resolved.introspection;
  if (introspection === undefined) return undefined;
  const nameOf = (key: string): string => names[`introspection.${key}`] ?? `options.introspection.${key}`;
  return introspectionRateLimitWarnings(warningSink(resolved), {
    cacheTtl: nameOf('cacheTtlSeconds'),
    refusalsPerAddress: nameOf('refusalsPerAddress'),
    clientId: nameOf('clientId'),
    cacheTtlSeconds: introspection.cacheTtlSeconds ?? DEFAULT_INTROSPECTION_CACHE_TTL_SECONDS,
  });
}

/**
 * `Guard.report`: the decision event for `onDecision` and the audit trail, without credentials; never throws. A hook
 * gets a plain object with every field set; the audit trail alone, which never reads `requiredScopes` nor `detail`,
 * gets them built on read.
 */
function createDecisionReporter(onDecision: ResolvedGuardOptions['onDecision'], audited: boolean): Guard['report'] {
  return (decision, reason, status, ctx) => {
    if (!onDecision) return audited ? fillDecisionEvent(new AuditedDecisionEvent(decision, reason, status, ctx), ctx) : undefined;
    const event = fillDecisionEvent<DecisionEvent>({ decision, reason, status, httpMethod: ctx.httpMethod }, ctx);
    if (ctx.requiredScopes) event.requiredScopes = [...ctx.requiredScopes];
    if (ctx.rule !== undefined) event.rule = boundedText(ctx.rule);
    if (ctx.condition !== undefined) event.condition = boundedText(ctx.condition, 512);
    if (ctx.server !== undefined) event.server = ctx.server;
    if (ctx.detail !== undefined) event.detail = boundedText(ctx.detail, 512);
    try {
      onDecision(event, ctx.request);
    } catch {
      // Auditing must never break serving.
    }
    return event;
  };
}

/** Sets the caller's and the request's fields of `event`, in the order a hook has always seen them. */
function fillDecisionEvent<Event extends DecisionEvent>(event: Event, ctx: DecisionContext): Event {
  const message = ctx.message as { method?: unknown; params?: Record<string, unknown> } | undefined;
  if (ctx.auth) {
    if (ctx.auth.extra.sub !== undefined) event.subject = ctx.auth.extra.sub;
    event.clientId = ctx.auth.clientId;
    event.grantedScopes = ctx.auth.scopes;
  }
  if (typeof message?.method === 'string') event.method = boundedText(message.method);
  const target = message?.params?.name ?? message?.params?.uri;
  if (typeof target === 'string') event.name = boundedText(target);
  return event;
}

/**
 * The decision event when no hook sees it (the audit trail only): `requiredScopes` copied and `detail` bounded when
 * read, not on every request; the rest as a hook's event has it.
 */
class AuditedDecisionEvent implements DecisionEvent {
  subject?: string;
  clientId?: string;
  grantedScopes?: string[];
  method?: string;
  name?: string;
  rule?: string;
  condition?: string;
  server?: string;
  readonly httpMethod: string;
  readonly #required: readonly string[] | undefined;
  readonly #detail: string | undefined;

  constructor(
    readonly decision: DecisionEvent['decision'],
    readonly reason: DecisionReason,
    readonly status: number,
    ctx: DecisionContext,
  ) {
    this.httpMethod = ctx.httpMethod;
    this.#required = ctx.requiredScopes;
    this.#detail = ctx.detail;
    if (ctx.rule !== undefined) this.rule = boundedText(ctx.rule);
    if (ctx.condition !== undefined) this.condition = boundedText(ctx.condition, 512);
    if (ctx.server !== undefined) this.server = ctx.server;
  }

  get requiredScopes(): string[] | undefined {
    return this.#required === undefined ? undefined : [...this.#required];
  }

  get detail(): string | undefined {
    return this.#detail === undefined ? undefined : boundedText(this.#detail, 512);
  }
}

/** What does not depend on the policy: shared by every snapshot. */
interface GuardParts extends GuardSettings {
  resourceMetadataUrl: string;
  metadataPaths: readonly string[];
  authentication: Authentication;
  parseMessage: Guard['parseMessage'];
  report: Guard['report'];
  ready: Guard['ready'];
  /** The limiter, made on first need and kept across policies. */
  rateLimiter(): RateLimiter;
  setPolicy: Guard['setPolicy'];
}

/** The guard under one compiled policy: everything derived from the policy is computed here, once. */
function bindPolicy(parts: GuardParts, policy: CompiledPolicy): Guard {
  const { resolved, resourceMetadataUrl, dpopMode, callerLimit, authentication } = parts;
  const metadata = buildProtectedResourceMetadata({
    resource: resolved.resource,
    authorizationServers: resolved.authorizationServers,
    scopesSupported: policy.scopesSupported,
    resourceName: resolved.resourceName,
    resourceDocumentation: resolved.resourceDocumentation,
    ...(dpopMode === 'off' ? {} : { dpopSigningAlgValues: DPOP_SIGNING_ALGORITHMS, dpopBoundAccessTokensRequired: dpopMode === 'require' }),
  });
  // offline_access is never asked for in a challenge (MCP 2026-07-28 authorization).
  const challengeScopes = (resolved.challengeScopes ?? policy.requiredScopes).filter((s) => s !== 'offline_access');
  const limited = callerLimit !== undefined || policy.toolRateLimits.size > 0 || policy.toolRateLimit !== undefined;
  const challengeFor = createChallenges(resourceMetadataUrl, challengeScopes, authentication);
  const { refusalFor } = authentication;

  const snapshot: Guard = Object.freeze({
    options: resolved,
    resource: resolved.resource,
    resourcePath: resolved.resourcePath,
    resourceMetadataUrl,
    metadataPaths: parts.metadataPaths,
    metadata,
    metadataJson: JSON.stringify(metadata),
    policy,
    verifier: parts.verifier,
    dpop: dpopMode,
    checkOrigin: parts.checkOrigin,
    authenticate: authentication.authenticate,
    parseMessage: parts.parseMessage,
    authorize(message: JsonRpcMessage, auth: AuthInfo, headers: McpRequestHeaders) {
      const protocolVersion = checkMcpRequestHeaders(headers, message);
      // Target checks and scopes apply only to a well-formed request its revision has.
      checkRequestRevision(message, protocolVersion);
      checkRequestTarget(message);
      // A hidden target answers as a name that exists nowhere would: decided by the rules such a name meets (the
      // method's, `*`), never by its own (a condition's 403 would tell it exists), then unknown.
      const hidden = resolved.hiddenTarget?.(message);
      if (hidden !== undefined) {
        const unnamed = policy.authorize(withUnnamedTarget(message), auth);
        if (!unnamed.allowed) throw refusalFor(policyRefusal(unnamed, message, () => policy.insufficientScopeError(unnamed, auth, message)), auth);
        throw unknownTargetError(hidden, message);
      }
      const decision = policy.authorize(message, auth);
      if (!decision.allowed) throw refusalFor(policyRefusal(decision, message, () => policy.insufficientScopeError(decision, auth, message)), auth);
      const unknown = policy.unknownTarget?.(message);
      if (unknown !== undefined) throw unknownTargetError(unknown, message);
      const { requiredScopes, rule, condition, server } = decision;
      if (rule === undefined && server === undefined) return { protocolVersion, requiredScopes };
      if (server === undefined) return condition === undefined ? { protocolVersion, requiredScopes, rule } : { protocolVersion, requiredScopes, rule, condition };
      return { protocolVersion, requiredScopes, rule, condition, server };
    },
    authorizeBase(auth: AuthInfo) {
      // A message with no method needs exactly the base scopes, unaffected by any methods["*"] rule.
      const decision = policy.authorize(BASE_ONLY_MESSAGE, auth);
      if (!decision.allowed) throw refusalFor(policyRefusal(decision, undefined, () => policy.insufficientScopeError(decision, auth, undefined)), auth);
      return decision.requiredScopes;
    },
    refuseBeforeHold(message: JsonRpcMessage, auth: AuthInfo, headers: McpRequestHeaders) {
      checkRequestRevision(message, checkMcpRequestHeaders(headers, message));
      checkRequestTarget(message);
      const unnamed = resolved.hiddenTarget === undefined ? message : withUnnamedTarget(message);
      // A message that names no target is decided alike whatever is hidden; one that does, refused only when it
      // would be refused both as named and as unnamed, and then as unnamed (what a hidden target gets).
      const decision = policy.authorize(unnamed, auth);
      if (decision.allowed || (unnamed !== message && policy.authorize(message, auth).allowed)) return;
      throw refusalFor(policyRefusal(decision, message, () => policy.insufficientScopeError(decision, auth, message)), auth);
    },
    checkRateLimit: limited
      ? createRateLimitCheck({ callerLimit, toolLimits: policy.toolRateLimits, ...(policy.toolRateLimit === undefined ? {} : { toolLimit: policy.toolRateLimit }), limiter: parts.rateLimiter() })
      : undefined,
    filterResponse: createResponseFilter(policy, resolved.lists),
    errorResponse(error: unknown, id: JsonRpcId | null = null) {
      if (error instanceof GuardError) {
        const headers: Record<string, string> = { ...error.headers };
        const challenge = challengeFor(error);
        if (challenge) headers['WWW-Authenticate'] = challenge;
        const data = error.bearerError ? { error: error.bearerError } : error.data;
        return { status: error.status, headers, body: jsonRpcError(id, error.jsonRpcCode, error.message, data) };
      }
      return { status: 500, headers: {}, body: jsonRpcError(id, JsonRpcErrorCode.InternalError, 'Internal error') };
    },
    report: parts.report,
    ready: parts.ready,
    setPolicy: parts.setPolicy,
    snapshot: () => snapshot,
  });
  return snapshot;
}

/**
 * The `WWW-Authenticate` value for a refusal. A bare 401 offers every scheme the resource accepts. An error goes
 * in the challenge of the scheme the request used (the DPoP one when Bearer is not offered); a 401 then also
 * offers the other accepted scheme, bare, so that the client knows both (RFC 9449 §7.1–7.2).
 */
function createChallenges(resourceMetadata: string, challengeScopes: readonly string[], authentication: Authentication): (error: GuardError) => string | undefined {
  const { offersBearer, offersDpop } = authentication;
  const bareBearerChallenge = formatBearerChallenge({ resourceMetadata, scopes: challengeScopes });
  const bareDpopChallenge = formatDpopChallenge({ resourceMetadata, scopes: challengeScopes, algs: DPOP_SIGNING_ALGORITHMS });
  // Bearer first: a client that reads only the first challenge is a Bearer client (RFC 9449 §7.2 shows this order).
  const bareChallenge = [...(offersBearer ? [bareBearerChallenge] : []), ...(offersDpop ? [bareDpopChallenge] : [])].join(', ');
  return (error) => {
    if (error.status === 401 && error.bearerError === undefined) return bareChallenge;
    if (error.bearerError === undefined) return undefined;
    const scopes =
      error.bearerError === 'insufficient_scope' && 'challengeScopes' in error
        ? (error.challengeScopes as readonly string[])
        : challengeScopes;
    const params = { resourceMetadata, scopes, errorDescription: error.message };
    const inDpop = offersDpop && (!offersBearer || error.bearerError === 'invalid_dpop_proof' || authentication.isDpopRefusal(error));
    if (inDpop) {
      const own = formatDpopChallenge({ ...params, algs: DPOP_SIGNING_ALGORITHMS, error: error.bearerError });
      return error.status === 401 && offersBearer ? `${bareBearerChallenge}, ${own}` : own;
    }
    const own = formatBearerChallenge({ ...params, error: error.bearerError as BearerErrorCode });
    return error.status === 401 && offersDpop ? `${own}, ${bareDpopChallenge}` : own;
  };
}

/**
 * The refusal of a call to a tool or prompt the endpoint does not expose or hides: what a server answers for a name
 * it does not know (HTTP 200, JSON-RPC -32602 `Unknown tool: …`), the gateway's own refusal ({@link unknownNameRefusal}).
 * A hidden target may name another reason and its server for the report (see `HiddenTarget`); the answer is the same.
 */
function unknownTargetError(target: 'tool' | 'prompt' | HiddenTarget, message: JsonRpcMessage): RequestRejectedError {
  const params = (message as { params?: { name?: unknown; ref?: { name?: unknown } } }).params;
  const hidden: HiddenTarget = typeof target === 'string' ? { kind: target } : target;
  const { code, message: text } = unknownNameRefusal(hidden.kind, String(params?.name ?? params?.ref?.name ?? ''));
  // Only a reason that says the target is hidden is reported: any other (a JavaScript caller's) reads as unknown.
  const reason = hidden.reason === 'tool_pin_mismatch' ? hidden.reason : 'target_unknown';
  return new RequestRejectedError(text, { status: 200, reason, jsonRpcCode: code, ...(hidden.server === undefined ? {} : { server: hidden.server }) });
}

/**
 * Runs `build`, reporting a `ConfigurationError` under the name the user configured: the token verifier
 * names its settings by option path (`jwksUri`, `introspection.endpoint`), which becomes
 * `MCP_AUTH_JWKS_URI` for options loaded from the environment, `options.jwksUri` otherwise.
 */
function withSettingNames<T>(names: SettingNames, build: () => T): T {
  try {
    return build();
  } catch (error) {
    if (!(error instanceof ConfigurationError)) throw error;
    const detail = error.message.startsWith(`${error.setting}: `) ? error.message.slice(error.setting.length + 2) : error.message;
    const top = error.setting.split('.')[0] as keyof GuardOptions;
    const renamed = names[error.setting as keyof SettingNames] ?? (names[top] !== undefined && error.setting === top ? names[top] : undefined);
    throw new ConfigurationError(renamed ?? `options.${error.setting}`, detail);
  }
}

/** The character no policy names a rule by, standing for a target that exists nowhere. */
const UNNAMED = '\u0000';

/**
 * `message` with its tool or prompt name replaced by one no rule names, keeping a `<server>__` prefix so that the
 * name still reaches that server's rules (its `*`), as a name the server does not have would.
 */
function withUnnamedTarget(message: JsonRpcMessage): JsonRpcMessage {
  const params = (message as { params?: Record<string, unknown> }).params;
  if (params === undefined) return message;
  const rename = (name: unknown): unknown => {
    if (typeof name !== 'string') return name;
    const exposed = splitExposedName(name);
    return exposed === undefined ? UNNAMED : exposeName(exposed.server, UNNAMED);
  };
  const ref = params.ref as Record<string, unknown> | undefined;
  if (typeof params.name === 'string') return { ...message, params: { ...params, name: rename(params.name) } } as JsonRpcMessage;
  if (ref !== undefined && typeof ref === 'object' && typeof ref.name === 'string') return { ...message, params: { ...params, ref: { ...ref, name: rename(ref.name) } } } as JsonRpcMessage;
  return message;
}
