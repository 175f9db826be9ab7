import type { AuthInfo } from '../kernel/auth-info.js';

/** What a verifier may know of the request a token came with, besides the token. */
export interface VerificationContext {
  /**
   * The client's network address (the connection's peer, as `socket.remoteAddress` gives it), which bounds the
   * introspection calls one address can cause before it is authenticated. Unknown (no bound per address) when
   * absent. Behind a reverse proxy it is the proxy's.
   */
  readonly clientAddress?: string;
}

/**
 * Verifies an access token for this resource server. Implementations throw `InvalidTokenError`
 * (401) for any token problem and `AuthorizationServerUnavailableError` (503) when the authorization
 * server, its JWKS or its introspection endpoint cannot be reached. They never log the token.
 */
export interface TokenVerifier {
  verify(token: string, context?: VerificationContext): Promise<AuthInfo>;
  /**
   * The identity of a token in the cache (unexpired; a JWT from its second verification), synchronously;
   * `undefined` when it must be verified. Lets adapters skip a promise on the hot path. Optional for custom verifiers.
   */
  cached?(token: string): AuthInfo | undefined;
  /**
   * The identity synchronously when nothing must be waited for (a cached token; a new JWT whose issuer's key is
   * already held), else the promise of `verify(token)`. Hashes the token once, and reports to
   * `onTokenVerification` exactly as `verify` does. A refusal known at once is thrown, not returned as a rejected
   * promise. Optional for custom verifiers; use {@link cachedOrVerify}, which falls back to `cached` and `verify`.
   *
   * The guard authenticates through this method when it is present, so code that wraps a verifier's `verify`
   * must wrap (or remove) `cachedOrVerify` and `cached` as well.
   */
  cachedOrVerify?(token: string, context?: VerificationContext): AuthInfo | Promise<AuthInfo>;
  /** Runs issuer discovery now (otherwise it runs on first use). Rejects with the discovery error. */
  ready(): Promise<void>;
}

/**
 * The identity of `token`: synchronously when `verifier` can answer at once (no promise on the hot path), else a
 * native promise of its verification (a custom verifier's thenable is wrapped in one), so `instanceof Promise`
 * tells the two apart. May throw, as well as reject, with the verifier's errors.
 *
 * @example
 * const auth = cachedOrVerify(verifier, token);
 * return auth instanceof Promise ? auth.then(use) : use(auth);
 */
export function cachedOrVerify(verifier: TokenVerifier, token: string, context?: VerificationContext): AuthInfo | Promise<AuthInfo> {
  const answer = verifier.cachedOrVerify !== undefined ? verifier.cachedOrVerify(token, context) : (verifier.cached?.(token) ?? verifier.verify(token, context));
  if (answer instanceof Promise || typeof (answer as { then?: unknown }).then !== 'function') return answer;
  return Promise.resolve(answer);
}

/** Options for opaque-token introspection (RFC 7662). */
export interface IntrospectionOptions {
  /** Client id this resource server authenticates with at the introspection endpoint. */
  clientId: string;
  /** Client secret (`client_secret_basic`). */
  clientSecret: string;
  /** Introspection endpoint; default: the issuer metadata's `introspection_endpoint` (RFC 8414 §2). */
  endpoint?: string;
  /**
   * How long an `active` introspection answer is reused, in seconds (capped by `exp`). Default 60. A refusal (an
   * answer `active: false`, or one not valid for this resource) is reused for 10 s, or this long if shorter; an
   * unreachable or failing endpoint is never cached.
   */
  cacheTtlSeconds?: number;
  /**
   * Most introspection refusals (`active: false`, or an answer not valid for this resource) one client address
   * can cause, as a rate (`"20/s"`, the syntax of `rateLimit`), or `false` for no bound. Only refusals count: a
   * token the endpoint accepts never does, nor a token in the cache, a refusal reused, or an outage. While an
   * address is past it, its requests with new tokens are refused with 429 and `Retry-After` before any call
   * (valid new tokens from that address included, until the window ends). IPv6 addresses count per /64. Behind
   * a reverse proxy every client shares the proxy's address: one client sending junk then delays the new
   * tokens of the others by up to one window; raise it, or bound clients at the proxy. Default `"20/s"`.
   */
  refusalsPerAddress?: string | false;
  /**
   * The issuer whose introspection endpoint answers for opaque tokens, which name no issuer of their own.
   * Default: the issuer, when only one is configured; required (a start-up error otherwise) with several.
   */
  issuer?: string;
}

/** Options of the verified-token cache. */
export interface TokenCacheOptions {
  /** Maximum entries; least recently used are evicted first. Default 10 000. */
  maxEntries?: number;
  /**
   * Maximum estimated memory of the cached identities, in bytes (the claims kept for `AuthInfo`, never the
   * token itself); least recently used are evicted first. Default 33 554 432 (32 MiB).
   */
  maxBytes?: number;
  /** Upper bound on how long a verified JWT is reused, in seconds, whatever its `exp`. Default 300. */
  maxTtlSeconds?: number;
}

/** Options of {@link TokenVerifier}. */
export interface TokenVerifierOptions {
  /**
   * Issuer identifier (RFC 8414 §2); `iss` must equal it exactly, with no trailing-slash or case "fixing"
   * (RFC 8414 §3.3). https, or http on a loopback host only. Give either `issuer` or `issuers`.
   */
  issuer?: string;
  /**
   * Several trusted issuers (a migration between identity providers, or Entra v1 and v2 side by side). A JWT's
   * unverified `iss` selects one, exactly as spelt; a token naming no listed issuer is refused before anything is
   * fetched, and each issuer's metadata and keys are discovered on its own, on first use. Opaque tokens are
   * introspected at `introspection.issuer`.
   */
  issuers?: readonly string[];
  /** This server's canonical resource URI (RFC 8707 §2); `aud` must contain it or one of `audiences`. */
  resource: string;
  /** Extra accepted audiences. Default none. */
  audiences?: readonly string[];
  /** JWKS URI override; default: discovered `jwks_uri` (RFC 8414, then OpenID Connect Discovery). */
  jwksUri?: string;
  /** JWS algorithms accepted. Default: asymmetric only (RS*, PS*, ES*, EdDSA). `none` and HS* are always refused. */
  algorithms?: readonly string[];
  /**
   * Clock skew tolerated for `exp`, `nbf`, `iat`, in seconds. For a DPoP proof's `iat`: added to the 60 s it may be
   * in the past, and all it may be ahead of the server's clock. Default 5.
   */
  clockToleranceSeconds?: number;
  /** Require RFC 9068 JWT access tokens: `typ` at+jwt, `client_id`, `iat`, `jti`, `sub`. Default false. */
  strictJwtAccessTokens?: boolean;
  /** Enables opaque tokens via RFC 7662 introspection. Default off (opaque tokens are invalid). */
  introspection?: IntrospectionOptions;
  /** Timeout of every outbound call (discovery, JWKS, introspection), in milliseconds. Default 5000. */
  httpTimeoutMs?: number;
  /**
   * Minimum time between two JWKS fetches of an issuer, in milliseconds, whatever the traffic and whether the last
   * fetch succeeded or failed: an unknown `kid` refetches at most this often, and while the JWKS endpoint fails,
   * requests that need it get 503 with `Retry-After` (tokens whose `kid` is in the cached set keep working).
   * Default 30 000.
   */
  jwksCooldownMs?: number;
  /**
   * Maximum age of the cached JWKS before it is refetched, in milliseconds; a set that could not be refreshed past
   * it is no longer used (503), so a key the issuer withdrew is not accepted longer, outage or not. Default 600 000.
   */
  jwksCacheMaxAgeMs?: number;
  /**
   * What to do with a sender-constrained token (a `cnf` claim, RFC 7800: DPoP's `cnf.jkt`, mTLS's `x5t#S256`):
   * `refuse` it as `invalid_token` (reason `token_binding`), since a caller that goes on to treat it as a bearer
   * token would drop the proof of possession it requires; or `return` it for the caller to check the binding, as
   * the guard does for DPoP (RFC 9449 §7). Default `refuse`.
   */
  boundTokens?: 'refuse' | 'return';
  /**
   * Cache of verified tokens, or `false` to verify every request. Default `{}` (enabled). A JWT enters it when it
   * is verified again within the next 2 to 4 × `maxEntries` new tokens (at most 1 048 576 to 2 097 152; first uses
   * are remembered in two Bloom filters of 2 bytes per `maxEntries` each, 1 KiB to 1 MiB each; concurrent first
   * uses of one token are one use, sharing one verification): a token sent once, such as one minted for each
   * request, costs one signature check and takes no entry from a token in use. A few percent of new tokens pass
   * for seen and enter on their first use. An introspected token enters on its first use, since a second
   * introspection call costs a round trip.
   */
  tokenCache?: TokenCacheOptions | false;
  /**
   * Told what became of every token check, for metrics (see {@link TokenVerificationResult}). Called on the
   * request's path, synchronously for a cached token and for a new JWT whose key is held: keep it to a counter
   * increment. Errors it throws are
   * ignored. Default none.
   */
  onTokenVerification?: (result: TokenVerificationResult) => void;
  /**
   * Told the outcome of every JWKS request (at most one per `jwksCooldownMs` and issuer), for metrics. Errors it
   * throws are ignored. Default none.
   */
  onJwksFetch?: (result: JwksFetchResult) => void;
}

/**
 * What became of one token check: `cache_hit`, a verified identity reused; `verified`, checked now and
 * accepted; `refused`, not valid for this resource (401); `unavailable`, could not be checked because the
 * authorization server, its keys or its introspection endpoint failed (503).
 */
export type TokenVerificationResult = 'cache_hit' | 'verified' | 'refused' | 'unavailable';

/** How one JWKS request ended: `success` (a valid key set was received) or `failure`. */
export type JwksFetchResult = 'success' | 'failure';
