import { checkDuration, checkNumber, checkStringList, parseAbsoluteUrl } from '../kernel/settings.js';
import type { ServerMetadata } from 'openid-client';
import type { JWTPayload } from 'jose';
import type { AuthInfo } from '../kernel/auth-info.js';
import { buildAuthInfo } from './auth-info-from-claims.js';
import { AuthorizationServerUnavailableError, ConfigurationError, InvalidTokenError } from '../kernel/errors.js';
import { createIntrospectionVerifier, resolveIntrospectionEndpoint, type IntrospectToken } from './introspection-verifier.js';
import { assertSecureUrl, createIssuerDiscovery, type DiscoverIssuer } from './issuer-discovery.js';
import { checkIssuers } from './issuer-identifier.js';
import { DEFAULT_CLOCK_TOLERANCE_SECONDS, DEFAULT_HTTP_TIMEOUT_MS, DEFAULT_INTROSPECTION_CACHE_TTL_SECONDS, DEFAULT_JWKS_CACHE_MAX_AGE_MS, DEFAULT_JWKS_COOLDOWN_MS } from './verifier-defaults.js';
import { estimateIdentityBytes } from '../kernel/identity-size.js';
import { DEFAULT_INTROSPECTION_REFUSAL_TTL_SECONDS, createIntrospectionBounds, type IntrospectionBounds } from './introspection-bounds.js';
import { createJwtVerifier, describeClaimValue, resolveJwtAlgorithms, type VerifyJwt } from './jwt-verifier.js';
import { createSecondUseFilter, type SecondUseFilter } from '../limits/second-use-filter.js';
import { DEFAULT_TOKEN_CACHE_MAX_ENTRIES, createTokenCache, type TokenCache } from './token-cache.js';
import { peekJwtClaims, type PeekedJwtClaims } from '../jwt/verify-compact-jwt.js';
import { tokenDigest } from '../wire/token-digest.js';
import { checkBearerUse } from './token-binding.js';
import type { JwksFetchResult, TokenVerificationResult, TokenVerifier, TokenVerifierOptions, VerificationContext } from './token-verifier.js';

export { estimateIdentityBytes } from '../kernel/identity-size.js';

// The defaults live apart, so that a settings table or `--help` can name them without loading a verifier.
export { DEFAULT_CLOCK_TOLERANCE_SECONDS, DEFAULT_HTTP_TIMEOUT_MS, DEFAULT_JWKS_CACHE_MAX_AGE_MS, DEFAULT_JWKS_COOLDOWN_MS } from './verifier-defaults.js';

/**
 * Creates the {@link TokenVerifier} of a resource server: JWT access tokens (RFC 9068) are checked locally
 * against their issuer's JWKS; other tokens are introspected (RFC 7662) when `introspection` is configured and
 * refused otherwise. Verified identities are cached until `exp` (bounded by the cache's TTL, entries and bytes; a JWT
 * from its second use).
 *
 * Every option is checked here, at start-up, and everything derivable is computed once: each issuer's metadata
 * is discovered on first use (or by `ready()`), never per request, and only when `jwksUri` or the
 * introspection endpoint is not configured. A cached token costs a SHA-256 digest, a map lookup and a clock read.
 *
 * A JWT's unverified `iss` picks the issuer (of one or several), compared exactly; one naming no trusted issuer is
 * refused (`token_issuer`) before any request to anyone. The token is then verified with that issuer's keys
 * only, so a token claiming issuer A but signed by issuer B fails. Opaque tokens carry no issuer and go to the
 * introspection endpoint of `introspection.issuer`.
 *
 * Routing by token shape: three dot-separated parts (compact JWS) go to JWT verification, unless the token's
 * issuer is the introspecting one, publishes no `jwks_uri` and no `jwksUri` is set; five parts (compact JWE,
 * RFC 7516 §7.1) and anything else go to introspection when configured, else they are `invalid_token` (reason
 * `token_invalid`).
 *
 * The cache is keyed by a digest of the token and keeps only the identity (claims, scopes, client); each answer
 * is a fresh frozen {@link AuthInfo} carrying the presented token, sharing the frozen `scopes` and `extra` of
 * every request with the same token. A JWT whose issuer's key is already held is verified with no promise at all
 * (`cachedOrVerify` answers it synchronously); concurrent requests with the same token while it waits (for keys,
 * for introspection) share one verification. A JWT's refusal is not cached: it is checked again, locally (an
 * unknown `kid` refetches the JWKS at most once per `jwksCooldownMs`). An introspection refusal (`active: false`,
 * or an answer not valid for this resource) is reused for 10 s from the token's second refusal (or
 * `introspection.cacheTtlSeconds` if shorter; never an unreachable or failing endpoint), and a client address
 * (`context.clientAddress`) past `introspection.refusalsPerAddress` refusals gets 429 for new tokens until its
 * window ends: see `createIntrospectionBounds`.
 *
 * @throws ConfigurationError naming the faulty setting (`issuer`, `issuers`, `resource`, `audiences`, `jwksUri`,
 *   `algorithms`, `clockToleranceSeconds`, `httpTimeoutMs`, `jwksCooldownMs`, `jwksCacheMaxAgeMs`,
 *   `introspection.clientId`, `introspection.clientSecret`, `introspection.endpoint`, `introspection.issuer`,
 *   `introspection.cacheTtlSeconds`, `introspection.refusalsPerAddress`, `tokenCache.maxEntries`, `tokenCache.maxBytes`, `tokenCache.maxTtlSeconds`,
 *   `onTokenVerification`, `onJwksFetch`, `boundTokens`). Sender-constrained tokens (`cnf`) are refused unless
 *   `boundTokens` is `return`.
 */
export function createTokenVerifier(options: TokenVerifierOptions): TokenVerifier {
  const setup = resolveVerifierSetup(options);
  const { issuers, trusted, introspect, introspectionBounds, cache, report } = setup;
  const verifyByIntrospection = introspectionVerification(setup);
  const admitJwt = jwtAdmission(setup);

  /**
   * A new token verified on the spot when nothing has to wait: a JWT whose issuer's key is at hand, from an issuer
   * known to publish keys. Else what the asynchronous way ({@link verifyUncached}) needs: the JWT's claims and
   * issuer, already read ({@link MustWait}), or `undefined` for a token that is not a JWT. Refusals are thrown.
   */
  const verifyUncachedNow = (token: string, key: string): AuthInfo | MustWait | undefined => {
    if (countDots(token) !== 2) return undefined;
    // With one trusted issuer too: a token from elsewhere is refused for its issuer, with no JWKS fetch for its
    // unknown kid, and not as a bad signature when its kid happens to match one of ours.
    const peeked = peekClaims(token);
    const issuer = selectIssuer(peeked.claims.iss, trusted, issuers);
    const verified = issuer.mayIntrospectJwts && !issuer.publishesJwks ? undefined : issuer.verifyJwt.now(token, peeked);
    return verified === undefined ? new MustWait(peeked, issuer) : admitJwt(token, key, verified.payload);
  };

  /** A new token that must wait: a JWT, read already ({@link verifyUncachedNow}), or any other token. */
  const verifyUncached = async (token: string, key: string, jwt: MustWait | undefined, context: VerificationContext | undefined): Promise<AuthInfo> => {
    if (jwt !== undefined) {
      const { issuer, peeked } = jwt;
      // An issuer without a JWKS can still be served when it introspects its (JWT-shaped) tokens.
      if (issuer.mayIntrospectJwts && !issuer.publishesJwks) {
        if ((await issuer.discover()).jwks_uri === undefined) return verifyByIntrospection!(token, key, context);
        issuer.publishesJwks = true;
      }
      return admitJwt(token, key, (await issuer.verifyJwt(token, peeked)).payload);
    }
    if (introspect !== undefined) return verifyByIntrospection!(token, key, context);
    throw new InvalidTokenError(
      countDots(token) === 4 ? 'encrypted (JWE) access tokens are not supported' : 'access token is not a JWT and introspection is not configured',
      'token_invalid',
    );
  };

  // Concurrent requests with the same new token (a client fanning out right after sign-in) share one
  // verification: one signature check, one introspection call. Entries live only while in flight.
  const inFlight = new Map<string, Promise<AuthInfo>>();

  const cached = (token: string, key: string): AuthInfo | undefined => {
    const identity = cache?.get(key);
    if (identity === undefined) return undefined;
    report?.('cache_hit');
    return withToken(identity, token);
  };

  // Each caller's outcome is reported, also when it shared another caller's verification.
  const reportVerified = (info: AuthInfo): AuthInfo => {
    (report as Observer<TokenVerificationResult>)('verified');
    return info;
  };
  const reportRefused = (error: unknown): never => {
    (report as Observer<TokenVerificationResult>)(error instanceof InvalidTokenError ? 'refused' : 'unavailable');
    throw error;
  };

  /** {@link verifyUncachedNow}, reported as `verify` reports when it decided. */
  const verifyNowReported = (token: string, key: string): AuthInfo | MustWait | undefined => {
    let info: AuthInfo | MustWait | undefined;
    try {
      info = verifyUncachedNow(token, key);
    } catch (error) {
      if (report === undefined) throw error;
      return reportRefused(error);
    }
    if (report !== undefined && info !== undefined && !(info instanceof MustWait)) report('verified');
    return info;
  };

  /** The verification of a token not in the cache, shared with concurrent requests for the same token. */
  const verifyKeyed = (token: string, key: string, context: VerificationContext | undefined, jwt?: MustWait): Promise<AuthInfo> => {
    let pending = inFlight.get(key);
    if (pending === undefined) {
      pending = verifyUncached(token, key, jwt, context).finally(() => inFlight.delete(key));
      inFlight.set(key, pending);
    }
    return report === undefined ? pending : pending.then(reportVerified, reportRefused);
  };

  // One digest per request, and no promise unless something must be waited for: a cached token, or a new JWT
  // whose issuer's key is at hand, is answered synchronously (a refusal is then thrown).
  const cachedOrVerify = (token: string, context?: VerificationContext): AuthInfo | Promise<AuthInfo> => {
    const key = tokenDigest(token);
    const hit = cached(token, key);
    if (hit !== undefined) return hit;
    // A verification in progress (waiting for keys) is joined.
    if (inFlight.has(key)) return verifyKeyed(token, key, context);
    // A token the introspection endpoint refused moments ago is refused again without asking.
    const refused = introspectionBounds?.refused(key);
    if (refused !== undefined) {
      if (report === undefined) throw refused;
      return reportRefused(refused);
    }
    const now = verifyNowReported(token, key);
    if (now === undefined) return verifyKeyed(token, key, context);
    return now instanceof MustWait ? verifyKeyed(token, key, context, now) : now;
  };

  return {
    verify(token: string, context?: VerificationContext): Promise<AuthInfo> {
      try {
        const answer = cachedOrVerify(token, context);
        return answer instanceof Promise ? answer : Promise.resolve(answer);
      } catch (error) {
        return Promise.reject(error);
      }
    },
    cached(token: string): AuthInfo | undefined {
      return cache === undefined ? undefined : cached(token, tokenDigest(token));
    },
    cachedOrVerify,
    ready: () => discoverIssuers(trusted),
  };
}

/** The token verifier's options, checked, and what they build once: the trusted issuers, introspection, the cache. */
interface VerifierSetup {
  readonly issuers: readonly string[];
  readonly trusted: ReadonlyMap<string, TrustedIssuer>;
  /** The resource as a URL, for the identities built. */
  readonly resourceUrl: URL;
  /** Introspection of opaque tokens (and of JWTs of an issuer without JWKS); undefined when not configured. */
  readonly introspect: IntrospectToken | undefined;
  readonly introspectionTtlSeconds: number;
  readonly introspectionBounds: IntrospectionBounds | undefined;
  /** Refuses a sender-constrained token unless the caller checks the binding itself (see `boundTokens`). */
  readonly accept: (info: AuthInfo) => AuthInfo;
  readonly cache: TokenCache<CachedIdentity> | undefined;
  /** Which JWTs have been seen before: a JWT is cached from its second use. */
  readonly jwtFirstUses: SecondUseFilter | undefined;
  readonly report: Observer<TokenVerificationResult> | undefined;
}

/**
 * Checks every option of {@link createTokenVerifier} and builds what they describe, once.
 *
 * @throws ConfigurationError naming the faulty setting.
 */
function resolveVerifierSetup(options: TokenVerifierOptions): VerifierSetup {
  if (options === null || typeof options !== 'object') throw new ConfigurationError('options', 'token verifier options are required');

  const issuers = checkIssuers(options.issuer, options.issuers, { issuer: 'issuer', issuers: 'issuers' });

  const resource = requireString('resource', options.resource);
  const resourceUrl = parseAbsoluteUrl(resource, 'resource', `"${resource}" is not an absolute URL`);
  const audiences = [resource, ...readAudiences(options.audiences)];

  const jwksUri = options.jwksUri === undefined ? undefined : assertSecureUrl('jwksUri', options.jwksUri);
  if (jwksUri !== undefined && issuers.length > 1) {
    throw new ConfigurationError('jwksUri', "names one issuer's keys; with several issuers, leave it unset and each issuer's jwks_uri is discovered from its metadata");
  }
  const algorithms = resolveJwtAlgorithms(options.algorithms);
  const clockToleranceSeconds = checkNumber(options.clockToleranceSeconds, 'clockToleranceSeconds', DEFAULT_CLOCK_TOLERANCE_SECONDS);
  const httpTimeoutMs = checkDuration(options.httpTimeoutMs, 'httpTimeoutMs', DEFAULT_HTTP_TIMEOUT_MS);
  const jwksCooldownMs = checkNumber(options.jwksCooldownMs, 'jwksCooldownMs', DEFAULT_JWKS_COOLDOWN_MS);
  const jwksCacheMaxAgeMs = checkNumber(options.jwksCacheMaxAgeMs, 'jwksCacheMaxAgeMs', DEFAULT_JWKS_CACHE_MAX_AGE_MS);
  const strictJwtAccessTokens = options.strictJwtAccessTokens ?? false;
  if (typeof strictJwtAccessTokens !== 'boolean') throw new ConfigurationError('strictJwtAccessTokens', 'must be true or false');
  const report = observer('onTokenVerification', options.onTokenVerification);
  const onJwksFetch = observer('onJwksFetch', options.onJwksFetch);

  const introspection = options.introspection;
  let introspectionEndpoint: URL | undefined;
  let introspectionTtlSeconds = DEFAULT_INTROSPECTION_CACHE_TTL_SECONDS;
  let introspectionIssuer: string | undefined;
  let introspectionBounds: IntrospectionBounds | undefined;
  if (introspection !== undefined) {
    requireString('introspection.clientId', introspection.clientId);
    requireString('introspection.clientSecret', introspection.clientSecret);
    introspectionEndpoint = resolveIntrospectionEndpoint(introspection.endpoint);
    introspectionTtlSeconds = checkNumber(introspection.cacheTtlSeconds, 'introspection.cacheTtlSeconds', DEFAULT_INTROSPECTION_CACHE_TTL_SECONDS);
    introspectionIssuer = resolveIntrospectionIssuer(introspection.issuer, issuers);
    // A refusal is reused no longer than an acceptance would be, and not at all without a token cache.
    const refusalTtlSeconds = options.tokenCache === false ? 0 : Math.min(DEFAULT_INTROSPECTION_REFUSAL_TTL_SECONDS, introspectionTtlSeconds);
    introspectionBounds = createIntrospectionBounds({ refusalTtlSeconds, refusalsPerAddress: introspection.refusalsPerAddress });
  }

  const boundTokens = options.boundTokens ?? 'refuse';
  if (boundTokens !== 'refuse' && boundTokens !== 'return') throw new ConfigurationError('boundTokens', 'must be "refuse" or "return"');
  const accept = (info: AuthInfo): AuthInfo => {
    return boundTokens === 'refuse' ? checkBearerUse(info, 'off') : info;
  };

  const cacheOptions = options.tokenCache ?? {};
  const cache: TokenCache<CachedIdentity> | undefined = cacheOptions === false ? undefined : createTokenCache(cacheOptions);
  // A JWT is cached on its second use: a token seen once (one minted per request, say) would only evict a useful
  // entry and leave old-generation garbage behind, and checking it again costs only a signature check.
  const jwtFirstUses = cacheOptions === false ? undefined : createSecondUseFilter(2 * (cacheOptions.maxEntries ?? DEFAULT_TOKEN_CACHE_MAX_ENTRIES));

  const trusted = new Map<string, TrustedIssuer>();
  for (const issuer of issuers) {
    const introspects = issuer === introspectionIssuer;
    // Discovery only when something is left to learn from the issuer's metadata.
    const needsDiscovery = jwksUri === undefined || (introspects && introspectionEndpoint === undefined);
    const discover: DiscoverIssuer = needsDiscovery
      ? createIssuerDiscovery({ issuer, timeoutMs: httpTimeoutMs })
      : fixedMetadata({ issuer, jwks_uri: jwksUri?.href, introspection_endpoint: introspectionEndpoint?.href });
    const verifyJwt = createJwtVerifier({
      issuer,
      audiences,
      algorithms,
      clockToleranceSeconds,
      strictJwtAccessTokens,
      jwksUri: jwksUri ?? (() => discover().then(readJwksUri)),
      httpTimeoutMs,
      jwksCooldownMs,
      jwksCacheMaxAgeMs,
      onJwksFetch,
    });
    trusted.set(issuer, { issuer, discover, verifyJwt, introspects, mayIntrospectJwts: introspection !== undefined && introspects && jwksUri === undefined, publishesJwks: false });
  }

  const introspect: IntrospectToken | undefined =
    introspection === undefined || introspectionIssuer === undefined
      ? undefined
      : createIntrospectionVerifier({
          issuer: introspectionIssuer,
          audiences,
          clientId: introspection.clientId,
          clientSecret: introspection.clientSecret,
          metadata: (trusted.get(introspectionIssuer) as TrustedIssuer).discover,
          endpoint: introspectionEndpoint,
          timeoutMs: httpTimeoutMs,
          clockToleranceSeconds,
        });
  return { issuers, trusted, resourceUrl, introspect, introspectionTtlSeconds, introspectionBounds, accept, cache, jwtFirstUses, report };
}

/**
 * A token verified by introspection: the answer is cached for `introspectionTtlSeconds`, a refusal remembered by the
 * introspection bounds. Undefined when introspection is not configured.
 */
function introspectionVerification(setup: VerifierSetup): ((token: string, key: string, context: VerificationContext | undefined) => Promise<AuthInfo>) | undefined {
  const { introspect, introspectionBounds, introspectionTtlSeconds, accept, cache, resourceUrl } = setup;
  if (introspect === undefined) return undefined;
  return async (token, key, context) => {
    const bounds = introspectionBounds as IntrospectionBounds;
    bounds.admit(context);
    try {
      const response = await introspect(token);
      const info = accept(buildAuthInfo(token, response, { resource: resourceUrl, tokenType: 'introspection' }));
      cache?.set(key, identityOf(info), { ttlSeconds: introspectionTtlSeconds, bytes: estimateIdentityBytes(response) });
      return info;
    } catch (error) {
      // Only the authorization server's answer is remembered, never its outage (AuthorizationServerUnavailableError).
      if (error instanceof InvalidTokenError) bounds.remember(key, error, context);
      throw error;
    }
  };
}

/** The identity of a JWT whose signature and claims checked out; cached from its second use. */
function jwtAdmission(setup: VerifierSetup): (token: string, key: string, payload: JWTPayload) => AuthInfo {
  const { accept, cache, jwtFirstUses, resourceUrl } = setup;
  return (token, key, payload) => {
    const info = accept(buildAuthInfo(token, payload, { resource: resourceUrl, tokenType: 'jwt' }));
    if (jwtFirstUses?.seenBefore(key) === true) cache?.set(key, identityOf(info), { bytes: estimateIdentityBytes(payload) });
    return info;
  };
}

/**
 * Discovers every trusted issuer (`TokenVerifier.ready`): resolves when all answered; else rejects with the one
 * failure, or with a 503 whose `cause` aggregates them (its Retry-After the shortest).
 */
async function discoverIssuers(trusted: ReadonlyMap<string, TrustedIssuer>): Promise<void> {
  const outcomes = await Promise.allSettled([...trusted.values()].map((issuer) => issuer.discover()));
  const failures = outcomes.flatMap((outcome) => (outcome.status === 'rejected' ? [outcome.reason as unknown] : []));
  if (failures.length === 1) throw failures[0];
  if (failures.length > 1) {
    const retryAfter = Math.min(...failures.map((failure) => Number((failure as AuthorizationServerUnavailableError).headers?.['Retry-After']) || 5));
    throw new AuthorizationServerUnavailableError(
      'authorization server metadata is unavailable',
      retryAfter,
      new AggregateError(failures, `${failures.length} of ${outcomes.length} issuers could not be discovered`),
    );
  }
}

/** A JWT that cannot be verified without waiting (keys to fetch, discovery), with its claims and issuer already read. */
class MustWait {
  constructor(
    readonly peeked: PeekedJwtClaims,
    readonly issuer: TrustedIssuer,
  ) {}
}

/** A metrics hook, made safe to call on the request's path. */
type Observer<T> = (result: T) => void;

/**
 * The hook `value`, wrapped so that an error it throws cannot fail a request; `undefined` when none is set.
 *
 * @throws ConfigurationError naming `setting` when `value` is set and not a function.
 */
function observer<T extends TokenVerificationResult | JwksFetchResult>(setting: string, value: ((result: T) => void) | undefined): Observer<T> | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'function') throw new ConfigurationError(setting, 'must be a function (result) => void');
  return (result) => {
    try {
      value(result);
    } catch {
      // Metrics must never break serving.
    }
  };
}

/** One trusted issuer and what verifies its tokens; built at start-up, talking to the network on first use. */
interface TrustedIssuer {
  readonly issuer: string;
  readonly discover: DiscoverIssuer;
  readonly verifyJwt: VerifyJwt;
  /** Whether opaque tokens are introspected at this issuer. */
  readonly introspects: boolean;
  /** Whether JWTs of this issuer are introspected when its metadata has no `jwks_uri` (it introspects, and no `jwksUri` is set). */
  readonly mayIntrospectJwts: boolean;
  /** Set once its metadata showed a `jwks_uri`: its JWTs are then always verified locally. */
  publishesJwks: boolean;
}

/** What the cache keeps of a verified token: its identity, never the token. */
type CachedIdentity = Omit<AuthInfo, 'token'>;

function identityOf(info: AuthInfo): CachedIdentity {
  const { token: _token, ...identity } = info;
  return identity;
}

function withToken(identity: CachedIdentity, token: string): AuthInfo {
  return Object.freeze({ token, ...identity });
}

/** A JWT's claims, unverified, read once: they pick the issuer, and the verifier checks them after the signature. */
function peekClaims(token: string): PeekedJwtClaims {
  try {
    return peekJwtClaims(token);
  } catch (error) {
    throw new InvalidTokenError('access token is malformed or cannot be verified', 'token_invalid', error);
  }
}

/**
 * The trusted issuer a JWT's unverified `iss` names, compared exactly; else `token_issuer`. Only a trusted issuer is
 * ever contacted: any other value is refused here, before a metadata or JWKS request.
 */
function selectIssuer(iss: unknown, trusted: ReadonlyMap<string, TrustedIssuer>, issuers: readonly string[]): TrustedIssuer {
  const issuer = typeof iss === 'string' ? trusted.get(iss) : undefined;
  if (issuer !== undefined) return issuer;
  throw new InvalidTokenError(
    typeof iss === 'string'
      ? `access token was issued by ${describeClaimValue(iss)} (iss), which is not a trusted issuer: expected one of ${issuers.join(', ')}`
      : `access token has ${iss === undefined ? 'no iss' : 'an iss that is not a string'}; expected one of ${issuers.join(', ')}`,
    'token_issuer',
  );
}

/** The introspecting issuer: the one configured, or the only issuer. */
function resolveIntrospectionIssuer(configured: unknown, issuers: readonly string[]): string {
  if (configured === undefined) {
    if (issuers.length === 1) return issuers[0] as string;
    throw new ConfigurationError(
      'introspection.issuer',
      `is required with several issuers: opaque tokens name no issuer, so say which one introspects them (one of ${issuers.join(', ')})`,
    );
  }
  if (typeof configured !== 'string' || !issuers.includes(configured)) {
    throw new ConfigurationError('introspection.issuer', `must be one of the configured issuers, exactly as spelt: ${issuers.join(', ')}`);
  }
  return configured;
}

function fixedMetadata(metadata: ServerMetadata): DiscoverIssuer {
  const resolved = Promise.resolve(metadata);
  return () => resolved;
}

function readJwksUri(metadata: ServerMetadata): URL {
  if (metadata.jwks_uri === undefined) {
    throw new AuthorizationServerUnavailableError(
      "the authorization server's signing keys (JWKS) are unavailable",
      5,
      new ConfigurationError('jwksUri', 'the issuer metadata has no jwks_uri; set jwksUri or configure introspection'),
    );
  }
  // Checked by discovery (https, or http on loopback).
  return new URL(metadata.jwks_uri);
}

/** Number of `.` in the token: 2 for a compact JWS, 4 for a compact JWE. Stops counting past 4. */
function countDots(token: string): number {
  let dots = 0;
  for (let i = token.indexOf('.'); i !== -1 && dots <= 4; i = token.indexOf('.', i + 1)) dots++;
  return dots;
}

function requireString(setting: string, value: unknown): string {
  if (typeof value !== 'string' || value.length === 0) throw new ConfigurationError(setting, 'is required (a non-empty string)');
  return value;
}

function readAudiences(value: readonly string[] | undefined): string[] {
  return checkStringList(value, 'audiences') ?? [];
}

