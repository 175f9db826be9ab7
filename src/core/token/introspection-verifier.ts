import * as client from 'openid-client';
import type { DecisionReason } from '../kernel/decision.js';
import { AuthorizationServerUnavailableError, ConfigurationError, InvalidTokenError } from '../kernel/errors.js';
import { assertSecureUrl, createTimeoutFetch, toOpenIdClientTimeout } from './issuer-discovery.js';
import { describeClaimValue } from './jwt-verifier.js';

export { DEFAULT_INTROSPECTION_CACHE_TTL_SECONDS } from './verifier-defaults.js';

/** Options of {@link createIntrospectionVerifier}, already validated and defaulted by the caller. */
export interface IntrospectionVerifierOptions {
  /** Expected `iss` when the response has one, compared exactly. */
  issuer: string;
  /** Accepted audiences; the response's `aud` must contain one of them (RFC 8707 §2). Non-empty. */
  audiences: readonly string[];
  /** Client id of this resource server at the authorization server. */
  clientId: string;
  /** Its client secret, sent with `client_secret_basic` (RFC 6749 §2.3.1). */
  clientSecret: string;
  /** The issuer's metadata (RFC 8414), usually from issuer discovery; read once. */
  metadata: () => Promise<client.ServerMetadata>;
  /** Introspection endpoint override; default the metadata's `introspection_endpoint`. */
  endpoint?: URL;
  /** Timeout of each introspection request, in milliseconds. */
  timeoutMs: number;
  /** Clock skew tolerated on `exp` and `nbf`, in seconds. */
  clockToleranceSeconds: number;
  /** Current time in milliseconds since the epoch. Default `Date.now`. */
  now?: () => number;
}

/**
 * Introspects an opaque access token (RFC 7662) and returns the response once it is known to be an active
 * bearer token for this resource.
 *
 * Checks, in order: `active` is true (§2.2); a `token_type`, when given, of `Bearer` or `DPoP` (RFC 9449 §6.2; a
 * refresh token is no access token), and a `DPoP` one bound to a key (`cnf.jkt`); `iss`, when given, equals the
 * issuer; `exp` and
 * `nbf`, when given, hold with the clock tolerance; `aud` contains this resource or an extra audience.
 *
 * `aud` is required, although RFC 7662 makes it optional: MCP requires the resource server to check that the
 * token was issued for it (RFC 8707 §2), and an answer without `aud` cannot show that. Configure the
 * authorization server to include the audience (resource indicators) in introspection answers.
 *
 * @throws InvalidTokenError (401) with reason `token_inactive`, `token_type`, `token_issuer`, `token_expired`,
 *   `token_not_yet_valid`, `token_audience` or `token_claims`.
 * @throws AuthorizationServerUnavailableError (503) when the endpoint is unknown, unreachable, times out, or
 *   answers with an error (including a refused client authentication: that is a configuration fault here, not
 *   the caller's); an {@link IntrospectionRateLimitedError} when it answers 429.
 */
export type IntrospectToken = (token: string) => Promise<client.IntrospectionResponse>;

/**
 * Creates an {@link IntrospectToken} over openid-client's `tokenIntrospection`. The openid-client
 * `Configuration` is built once, on first use, from the issuer metadata.
 */
export function createIntrospectionVerifier(options: IntrospectionVerifierOptions): IntrospectToken {
  const now = options.now ?? Date.now;
  const tolerance = options.clockToleranceSeconds;
  const audiences = options.audiences;
  let config: client.Configuration | undefined;
  let pendingConfig: Promise<client.Configuration> | undefined;

  const configure = async (): Promise<client.Configuration> => {
    const metadata = await options.metadata();
    let endpoint = options.endpoint;
    if (endpoint === undefined) {
      if (metadata.introspection_endpoint === undefined) {
        throw new AuthorizationServerUnavailableError(
          'token introspection is unavailable',
          5,
          new ConfigurationError('introspection.endpoint', 'the issuer metadata has no introspection_endpoint; set it explicitly'),
        );
      }
      endpoint = new URL(metadata.introspection_endpoint);
    }
    const built = new client.Configuration(
      { ...metadata, introspection_endpoint: endpoint.href },
      options.clientId,
      options.clientSecret,
      client.ClientSecretBasic(options.clientSecret),
    );
    built.timeout = toOpenIdClientTimeout(options.timeoutMs);
    built[client.customFetch] = createTimeoutFetch(options.timeoutMs, 'introspection');
    // assertSecureUrl has limited plain http to loopback hosts.
    if (endpoint.protocol === 'http:') client.allowInsecureRequests(built);
    config = built;
    return built;
  };

  return async (token) => {
    const ready = config ?? (await (pendingConfig ??= configure().finally(() => (pendingConfig = undefined))));
    let response: client.IntrospectionResponse;
    try {
      response = await client.tokenIntrospection(ready, token);
    } catch (error) {
      const answer = httpAnswerOf(error);
      if (answer?.status === 429) throw new IntrospectionRateLimitedError(retryAfterSeconds(answer.headers.get('retry-after')), error);
      throw new AuthorizationServerUnavailableError('token introspection is unavailable', 5, error);
    }
    if (response.active !== true) throw invalid('access token is not active', 'token_inactive');

    // A `cnf` (sender-constrained token) is the guard's to judge, as for JWTs, with the scheme and proof it came with.
    const tokenType = typeof response.token_type === 'string' ? response.token_type.toLowerCase() : response.token_type;
    if (tokenType !== undefined && tokenType !== 'bearer' && tokenType !== 'dpop') {
      throw invalid('token is not an access token (token_type is neither Bearer nor DPoP)', 'token_type');
    }
    if (tokenType === 'dpop' && typeof (response.cnf as { jkt?: unknown } | undefined)?.jkt !== 'string') {
      throw invalid('token_type is DPoP but the token is bound to no key (cnf.jkt)', 'token_binding');
    }
    if (response.iss !== undefined && response.iss !== options.issuer) {
      throw invalid(`access token was issued by ${describeClaimValue(response.iss)} (iss), not by the expected issuer ${options.issuer}`, 'token_issuer');
    }

    const nowSeconds = now() / 1000;
    const { exp, nbf } = response;
    if (exp !== undefined) {
      if (typeof exp !== 'number') throw invalid('introspected claim "exp" is invalid', 'token_claims');
      if (exp <= nowSeconds - tolerance) throw invalid('access token expired', 'token_expired');
    }
    if (nbf !== undefined) {
      if (typeof nbf !== 'number') throw invalid('introspected claim "nbf" is invalid', 'token_claims');
      if (nbf > nowSeconds + tolerance) throw invalid('access token is not valid yet (nbf)', 'token_not_yet_valid');
    }
    if (!containsAudience(response.aud, audiences)) {
      const accepted = audiences.length === 1 ? (audiences[0] as string) : `one of ${audiences.join(', ')}`;
      throw invalid(`access token was issued for ${describeClaimValue(response.aud)} (aud), not for this resource: expected ${accepted}`, 'token_audience');
    }
    return response;
  };
}

/** Longest `Retry-After` taken from a rate-limiting introspection endpoint, in seconds: past it, a client gives up. */
export const MAX_INTROSPECTION_RETRY_AFTER_SECONDS = 300;

/**
 * The introspection endpoint answered 429 (RFC 6585 §4): it rate-limits the guard's client. Still the guard's 503
 * with `Retry-After` (the endpoint's own, in seconds from 1 to {@link MAX_INTROSPECTION_RETRY_AFTER_SECONDS}, else 5):
 * the caller's token is not at fault. Told apart so that the operator's log can say what to change.
 */
export class IntrospectionRateLimitedError extends AuthorizationServerUnavailableError {
  constructor(
    /** The `Retry-After` sent to the client, in seconds. */
    readonly retryAfterSeconds: number,
    cause?: unknown,
  ) {
    super('token introspection is unavailable: the authorization server is rate-limiting it', retryAfterSeconds, cause);
  }
}

/** The endpoint's HTTP answer behind an openid-client error (its `response`, or a `Response` among its causes). */
function httpAnswerOf(error: unknown): Response | undefined {
  for (let current = error, depth = 0; current !== null && typeof current === 'object' && depth < 4; depth++) {
    if (current instanceof Response) return current;
    const response = (current as { response?: unknown }).response;
    if (response instanceof Response) return response;
    current = (current as { cause?: unknown }).cause;
  }
  return undefined;
}

/** A `Retry-After` of delta-seconds (RFC 9110 §10.2.3) within bounds, else 5 (a date is not worth trusting a clock for). */
function retryAfterSeconds(value: string | null): number {
  const seconds = value !== null && /^\s*\d{1,6}\s*$/.test(value) ? Number(value) : NaN;
  return seconds >= 1 ? Math.min(seconds, MAX_INTROSPECTION_RETRY_AFTER_SECONDS) : 5;
}

/**
 * Checks the introspection `endpoint` override.
 *
 * @throws ConfigurationError naming `introspection.endpoint`.
 */
export function resolveIntrospectionEndpoint(endpoint: string | undefined): URL | undefined {
  return endpoint === undefined ? undefined : assertSecureUrl('introspection.endpoint', endpoint);
}

function containsAudience(aud: unknown, accepted: readonly string[]): boolean {
  if (typeof aud === 'string') return accepted.includes(aud);
  if (Array.isArray(aud)) return aud.some((a) => typeof a === 'string' && accepted.includes(a));
  return false;
}

function invalid(message: string, reason: DecisionReason): InvalidTokenError {
  return new InvalidTokenError(message, reason);
}
