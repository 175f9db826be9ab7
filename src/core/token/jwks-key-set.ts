import {
  createLocalJWKSet,
  createRemoteJWKSet,
  customFetch,
  errors as joseErrors,
  type CryptoKey,
  type FlattenedJWSInput,
  type JWSHeaderParameters,
  type JSONWebKeySet,
  type RemoteJWKSet,
} from 'jose';
import { AuthorizationServerUnavailableError, GuardError } from '../kernel/errors.js';
import type { JwksFetchResult } from './token-verifier.js';
import { traceAuthorizationServerFetch } from './authorization-server-span.js';

/** Options of {@link createJwksKeySet}. */
export interface JwksKeySetOptions {
  /** The JWKS location, or how to learn it (issuer discovery, which has its own backoff) on first use. */
  jwksUri: URL | (() => Promise<URL>);
  /** Timeout of one JWKS fetch, in milliseconds (integer). */
  httpTimeoutMs: number;
  /**
   * Minimum time between two JWKS fetches, in milliseconds, whatever their outcome and whatever the traffic:
   * an unknown `kid`, an expired set and a failed fetch all wait for it.
   */
  cooldownMs: number;
  /** Maximum age of the fetched set, in milliseconds; an older set is refetched and, until that succeeds, unused. */
  maxAgeMs: number;
  /** Current time in milliseconds since the epoch. Default `Date.now`. */
  now?: () => number;
  /** Told how each JWKS request ended, for metrics; must not throw. Default none. */
  onFetch?: (result: JwksFetchResult) => void;
}

/**
 * The key resolver `jwtVerify` calls with a token's protected header.
 *
 * @throws jose's `JWKSNoMatchingKey` or `JWKSMultipleMatchingKeys` (the token's problem) and
 *   `JOSENotSupported` (an `alg` no JWK can serve), unchanged.
 * @throws AuthorizationServerUnavailableError (503, `Retry-After` = seconds until the next fetch may start) when
 *   the set cannot be fetched, or when the last fetch failed and the token names a key the set lacks.
 */
export interface JwksKeySet {
  (protectedHeader: JWSHeaderParameters, token: FlattenedJWSInput): Promise<CryptoKey>;
  /**
   * The key this set already resolved for a header with the same `alg` and `kid`, when the set is still fresh:
   * what the call would resolve to, with no promise. `undefined` when it must be asked (a first token, a new
   * `kid`, a set past `maxAgeMs`); never a guess.
   */
  known(protectedHeader: JWSHeaderParameters): CryptoKey | undefined;
}

/**
 * A fetched key set, when it was fetched, and the keys it resolved by `alg` and then `kid`. jose picks a key from
 * those two header parameters only (a `kid` that is not a string matches nothing, and is never remembered), and
 * a fetched set never changes, so a key it resolved once is its answer for that pair until the set is replaced.
 * Only resolved keys are remembered: per allowed algorithm, at most one entry per `kid` of the set and one for no
 * `kid`, whatever tokens arrive.
 */
interface FetchedKeys {
  readonly resolve: ReturnType<typeof createLocalJWKSet>;
  readonly fetchedAtMs: number;
  readonly resolved: Map<string, Map<string | undefined, CryptoKey>>;
}

/** Resolves a header's key from `set`, remembering it there. */
async function resolveFrom(set: FetchedKeys, protectedHeader: JWSHeaderParameters, token: FlattenedJWSInput): Promise<CryptoKey> {
  const { alg, kid } = protectedHeader;
  const key = await set.resolve(protectedHeader, token);
  // Compact tokens have no unprotected header; anything else is not remembered.
  if (typeof alg === 'string' && (kid === undefined || typeof kid === 'string') && token.header === undefined) {
    let byKid = set.resolved.get(alg);
    if (byKid === undefined) set.resolved.set(alg, (byKid = new Map()));
    byKid.set(kid, key);
  }
  return key;
}

/**
 * An issuer's signing keys, fetched with jose's `createRemoteJWKSet` (its `reload()`: timeout, no redirects,
 * JWKS validation) and resolved with jose's `createLocalJWKSet`, under one rule jose does not keep: **at most one
 * fetch starts per `cooldownMs`**. jose restarts its cooldown only after a successful fetch, so while the JWKS
 * endpoint failed, every token with an unknown `kid` (a junk token needs no valid signature) caused a new
 * request to the authorization server. Here the clock starts when a fetch starts, success or not.
 *
 * - Concurrent callers share the fetch in progress.
 * - A token whose `kid` is in a set younger than `maxAgeMs` is served from it, even while fetches fail.
 * - An unknown `kid` refetches when the cooldown allows. Otherwise it is the token's problem after a successful
 *   fetch (jose's `JWKSNoMatchingKey`, then 401), and the authorization server's after a failed one (503):
 *   a key just rotated in cannot be told from a junk `kid` while the JWKS is unreachable.
 * - A set older than `maxAgeMs` is refetched, and not used once that failed (503): `maxAgeMs` bounds how long a
 *   key the issuer withdrew stays accepted, outage or not.
 *
 * Nothing is fetched until the first call. Each JWKS request is an HTTP client span (`mcp_guard.call` = `jwks`).
 */
export function createJwksKeySet(options: JwksKeySetOptions): JwksKeySet {
  const now = options.now ?? Date.now;
  const { cooldownMs, maxAgeMs } = options;
  let remote: RemoteJWKSet | undefined;
  let keys: FetchedKeys | undefined;
  /** No fetch starts before this time. */
  let nextFetchAtMs = 0;
  /** The outcome of the last fetch, when it failed. */
  let lastFailure: unknown;
  let pending: Promise<void> | undefined;

  const unavailable = (cause: unknown): AuthorizationServerUnavailableError =>
    new AuthorizationServerUnavailableError(
      "the authorization server's signing keys (JWKS) are unavailable",
      Math.max(1, Math.ceil((nextFetchAtMs - now()) / 1000)),
      cause,
    );

  const openRemote = async (): Promise<RemoteJWKSet> => {
    if (remote !== undefined) return remote;
    const url = typeof options.jwksUri === 'function' ? await options.jwksUri() : options.jwksUri;
    // Only jose's fetch is used (`reload()`); its own freshness and cooldown rules are replaced by the above.
    remote ??= openRemoteJwks(url, options.httpTimeoutMs);
    return remote;
  };

  const fetchKeys = async (): Promise<void> => {
    let set: RemoteJWKSet;
    try {
      set = await openRemote();
    } catch (error) {
      // Discovery failed: no JWKS request was made, so the JWKS cooldown is not spent. Discovery backs off itself.
      throw error instanceof GuardError ? error : unavailable(error);
    }
    nextFetchAtMs = now() + cooldownMs;
    try {
      keys = { resolve: createLocalJWKSet(await reloadJwks(set)), fetchedAtMs: now(), resolved: new Map() };
      lastFailure = undefined;
      options.onFetch?.('success');
    } catch (error) {
      lastFailure = error;
      options.onFetch?.('failure');
      throw unavailable(error);
    }
  };

  /** Waits for the fetch in progress, or starts one; callers check the cooldown first. */
  const refresh = (): Promise<void> => {
    pending ??= fetchKeys().finally(() => {
      pending = undefined;
    });
    return pending;
  };

  const mayFetch = (): boolean => pending !== undefined || now() >= nextFetchAtMs;

  const resolve = async (protectedHeader: JWSHeaderParameters, token: FlattenedJWSInput): Promise<CryptoKey> => {
    if (keys === undefined || now() >= keys.fetchedAtMs + maxAgeMs) {
      if (mayFetch()) await refresh();
      // Not fetchable yet: the set is usable only as the result of the last fetch (then it is younger than the
      // cooldown, as when `maxAgeMs` < `cooldownMs`); after a failed fetch, an expired set is not.
      else if (keys === undefined || lastFailure !== undefined) throw unavailable(lastFailure);
    }
    const current = keys as FetchedKeys;
    try {
      return await resolveFrom(current, protectedHeader, token);
    } catch (error) {
      if (!(error instanceof joseErrors.JWKSNoMatchingKey)) throw error;
      // The issuer may have rotated its keys since the set was fetched.
      if (mayFetch()) {
        await refresh();
        return resolveFrom(keys as FetchedKeys, protectedHeader, token);
      }
      if (lastFailure !== undefined) throw unavailable(lastFailure);
      throw error;
    }
  };
  const known = (protectedHeader: JWSHeaderParameters): CryptoKey | undefined => {
    // A set past its age is refetched (or refused) by the call, never answered from here.
    if (keys === undefined || now() >= keys.fetchedAtMs + maxAgeMs || typeof protectedHeader.alg !== 'string') return undefined;
    const { kid } = protectedHeader;
    return kid === undefined || typeof kid === 'string' ? keys.resolved.get(protectedHeader.alg)?.get(kid) : undefined;
  };
  return Object.assign(resolve, { known });
}

/**
 * Fetches a key set once, as {@link createJwksKeySet} does (jose's fetch: the timeout, no redirects, the JWKS
 * checked to be one), for tools that show its keys, such as `mcp-oauth-guard check`.
 *
 * @example
 * const { keys } = await fetchJwks(new URL('https://auth.example.com/jwks'), 5_000);
 * @param httpTimeoutMs - Timeout of the request, in milliseconds.
 * @throws jose's errors (`JWKSTimeout`, `JWKSInvalid`, a `JOSEError` for a status other than 200) or fetch's
 *   `TypeError` when the server cannot be reached.
 */
export function fetchJwks(url: URL, httpTimeoutMs: number): Promise<JSONWebKeySet> {
  return reloadJwks(openRemoteJwks(url, httpTimeoutMs));
}

/** Fetches `set` now and returns what it got. */
async function reloadJwks(set: RemoteJWKSet): Promise<JSONWebKeySet> {
  await set.reload();
  const jwks = set.jwks();
  if (jwks === undefined) throw new joseErrors.JWKSInvalid('JSON Web Key Set missing after a successful fetch');
  return jwks;
}

function openRemoteJwks(url: URL, httpTimeoutMs: number): RemoteJWKSet {
  return createRemoteJWKSet(url, { timeoutDuration: httpTimeoutMs, [customFetch]: tracedJwksFetch });
}

/** jose's own fetch (its default), as an HTTP client span. */
const tracedJwksFetch = traceAuthorizationServerFetch('jwks', (url: string, init: RequestInit) => fetch(url, init));
