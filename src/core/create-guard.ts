import type { AuthInfo } from './auth-info.js';
import { protectedResourceMetadataUrls } from './canonical-resource.js';
import { extractBearerToken } from './bearer-token.js';
import { compilePolicy, type CompiledPolicy } from './compile-policy.js';
import { createTokenVerifier } from './create-token-verifier.js';
import type { DecisionEvent, DecisionReason } from './decision.js';
import { ConfigurationError, GuardError } from './errors.js';
import type { GuardOptions } from './guard-options.js';
import { jsonRpcError, type JsonRpcErrorResponse, type JsonRpcId, type JsonRpcMessage } from './jsonrpc.js';
import { checkMcpRequestHeaders, type McpRequestHeaders } from './mcp-request-headers.js';
import { checkRequestTarget } from './check-request-target.js';
import { createOriginCheck } from './origin-check.js';
import { parseJsonRpcMessage, type ParsedBody } from './parse-json-rpc-message.js';
import { createResponseFilter } from './response-filter.js';
import { buildProtectedResourceMetadata, type ProtectedResourceMetadata } from './protected-resource-metadata.js';
import { resolveGuardOptions, type ResolvedGuardOptions, type SettingNames } from './resolve-guard-options.js';
import type { TokenVerifier } from './token-verifier.js';
import { formatBearerChallenge } from './www-authenticate.js';

/** An HTTP answer the adapter writes as is. */
export interface GuardHttpResponse {
  status: number;
  headers: Record<string, string>;
  body: JsonRpcErrorResponse;
}

/** Request facts the decision hook is told about. */
export interface DecisionContext {
  /** The adapter's request, passed on to `onDecision`. */
  request?: object;
  httpMethod: string;
  message?: JsonRpcMessage;
  auth?: AuthInfo;
  requiredScopes?: readonly string[];
  /** On a deny, the message the client was told. */
  detail?: string;
}

/**
 * The framework-agnostic resource server: everything an adapter (Express, or any other) needs to
 * protect an MCP endpoint, precomputed once. Adapters call, in order: `checkOrigin`, `authenticate`,
 * `parseMessage`, `authorize`, then hand the message to the MCP handler and pass list results through
 * `filterResult`. Any step may throw a `GuardError`; `errorResponse` turns it into the answer.
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
  /** The metadata document (RFC 9728 §2) and its serialized form, computed once. */
  readonly metadata: ProtectedResourceMetadata;
  readonly metadataJson: string;
  readonly policy: CompiledPolicy;
  readonly verifier: TokenVerifier;
  /** Throws 403 when `Origin` is present and not allowed. */
  checkOrigin(origin: string | undefined): void;
  /**
   * Reads the Bearer token (header only) and verifies it: the identity itself for a token already in the
   * cache (no promise on the hot path), else a promise. Throws or rejects with 400/401/503 `GuardError`s.
   */
  authenticate(authorization: string | string[] | undefined, url: string): AuthInfo | Promise<AuthInfo>;
  /** Parses one JSON-RPC message (400 on bad JSON, bad JSON-RPC, batches, excessive depth). */
  parseMessage(body: string): ParsedBody;
  /**
   * Checks mirrored headers (2026-07-28) and the scope policy for one message. Returns the protocol
   * version and the scopes the message required. Throws 400 (-32020) or 403 (`insufficient_scope`).
   */
  authorize(message: JsonRpcMessage, auth: AuthInfo, headers: McpRequestHeaders): { protocolVersion?: string; requiredScopes: readonly string[] };
  /** Checks that the token has the base scopes (for GET/DELETE, which carry no message). */
  authorizeBase(auth: AuthInfo): readonly string[];
  /**
   * Filters a list result (tools, prompts, resources, resource templates) to what the caller may use.
   * Only a success response whose id equals the request's id (by value and type) is touched.
   */
  filterResponse(request: JsonRpcMessage, response: JsonRpcMessage, auth: AuthInfo, protocolVersion?: string): JsonRpcMessage;
  /** The HTTP answer for an error; unknown errors become a 500 with no detail. Never includes a token. */
  errorResponse(error: unknown, id?: JsonRpcId | null): GuardHttpResponse;
  /** Reports a decision to `onDecision`, if set; never throws. */
  report(decision: 'allow' | 'deny', reason: DecisionReason, status: number, context: DecisionContext): void;
  /** Runs issuer discovery now; rejects if the authorization server cannot be reached. */
  ready(): Promise<void>;
}

const BASE_ONLY_MESSAGE: JsonRpcMessage = Object.freeze({ jsonrpc: '2.0', id: 0, result: {} }) as JsonRpcMessage;

/** Builds a {@link Guard}. Validates every option first (throws `ConfigurationError` naming it). */
export function createGuard(options: GuardOptions, names: SettingNames = {}): Guard {
  const resolved = resolveGuardOptions(options, names);
  const policy = compilePolicy(resolved.policy ?? {}, names.policy ?? 'options.policy');
  const verifier = withSettingNames(names, () => createTokenVerifier({ ...resolved, issuer: undefined, issuers: resolved.issuers, resource: resolved.resource }));
  const { url: resourceMetadataUrl, paths: metadataPaths } = protectedResourceMetadataUrls(resolved.resource);
  const metadata = buildProtectedResourceMetadata({
    resource: resolved.resource,
    authorizationServers: resolved.authorizationServers,
    scopesSupported: policy.scopesSupported,
    resourceName: resolved.resourceName,
    resourceDocumentation: resolved.resourceDocumentation,
  });
  const metadataJson = JSON.stringify(metadata);
  const checkOrigin = createOriginCheck(resolved.allowedOrigins, new URL(resolved.resource).origin, names.allowedOrigins ?? 'options.allowedOrigins');
  // offline_access is never asked for in a challenge (MCP 2026-07-28 authorization).
  const challengeScopes = (resolved.challengeScopes ?? policy.requiredScopes).filter((s) => s !== 'offline_access');
  const bareChallenge = formatBearerChallenge({ resourceMetadata: resourceMetadataUrl, scopes: challengeScopes });
  const onDecision = resolved.onDecision;
  const maxJsonDepth = resolved.maxJsonDepth;
  const filterResponse = createResponseFilter(policy);

  function challengeFor(error: GuardError): string | undefined {
    if (error.status === 401 && error.bearerError === undefined) return bareChallenge;
    if (error.bearerError === undefined) return undefined;
    const scopes =
      error.bearerError === 'insufficient_scope' && 'challengeScopes' in error
        ? (error.challengeScopes as readonly string[])
        : challengeScopes;
    return formatBearerChallenge({
      resourceMetadata: resourceMetadataUrl,
      scopes,
      error: error.bearerError,
      errorDescription: error.message,
    });
  }


  return {
    options: resolved,
    resource: resolved.resource,
    resourcePath: resolved.resourcePath,
    resourceMetadataUrl,
    metadataPaths,
    metadata,
    metadataJson,
    policy,
    verifier,
    checkOrigin,
    authenticate(authorization, url) {
      const token = extractBearerToken({ authorization }, url);
      return verifier.cached?.(token) ?? verifier.verify(token);
    },
    parseMessage(body) {
      return parseJsonRpcMessage(body, maxJsonDepth);
    },
    authorize(message, auth, headers) {
      const protocolVersion = checkMcpRequestHeaders(headers, message);
      checkRequestTarget(message);
      const decision = policy.authorize(message, auth);
      if (!decision.allowed) throw policy.insufficientScopeError(decision, auth, message);
      return { protocolVersion, requiredScopes: decision.requiredScopes };
    },
    authorizeBase(auth) {
      // A message with no method needs exactly the base scopes, unaffected by any methods["*"] rule.
      const decision = policy.authorize(BASE_ONLY_MESSAGE, auth);
      if (!decision.allowed) throw policy.insufficientScopeError(decision, auth, undefined);
      return decision.requiredScopes;
    },
    filterResponse,
    errorResponse(error, id = null) {
      if (error instanceof GuardError) {
        const headers: Record<string, string> = { ...error.headers };
        const challenge = challengeFor(error);
        if (challenge) headers['WWW-Authenticate'] = challenge;
        const data = error.bearerError ? { error: error.bearerError } : undefined;
        return { status: error.status, headers, body: jsonRpcError(id, error.jsonRpcCode, error.message, data) };
      }
      return { status: 500, headers: {}, body: jsonRpcError(id, -32603, 'Internal error') };
    },
    report(decision, reason, status, ctx) {
      if (!onDecision) return;
      const message = ctx.message as { method?: unknown; params?: Record<string, unknown> } | undefined;
      const event: DecisionEvent = { decision, reason, status, httpMethod: ctx.httpMethod };
      if (ctx.auth) {
        if (ctx.auth.extra.sub !== undefined) event.subject = ctx.auth.extra.sub;
        event.clientId = ctx.auth.clientId;
        event.grantedScopes = ctx.auth.scopes;
      }
      if (typeof message?.method === 'string') event.method = bounded(message.method);
      const target = message?.params?.name ?? message?.params?.uri;
      if (typeof target === 'string') event.name = bounded(target);
      if (ctx.requiredScopes) event.requiredScopes = [...ctx.requiredScopes];
      if (ctx.detail !== undefined) event.detail = bounded(ctx.detail, 512);
      try {
        onDecision(event, ctx.request);
      } catch {
        // Auditing must never break serving.
      }
    },
    ready() {
      return verifier.ready();
    },
  };
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

/** Client-chosen strings reach audit logs: keep one request from writing a megabyte-long line. */
function bounded(value: string, max = 256): string {
  return value.length > max ? `${value.slice(0, max)}…` : value;
}
