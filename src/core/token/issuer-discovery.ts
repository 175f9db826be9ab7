import { parseAbsoluteUrl } from '../kernel/settings.js';
import type * as client from 'openid-client';
import { AuthorizationServerUnavailableError, ConfigurationError } from '../kernel/errors.js';
import { isLoopbackHost } from '../kernel/canonical-resource.js';
import { traceAuthorizationServerFetch, type AuthorizationServerCall } from './authorization-server-span.js';

/** Default wait before a failed discovery is attempted again, in milliseconds. */
export const DEFAULT_DISCOVERY_RETRY_MS = 5_000;

/**
 * Client id given to openid-client's `discovery()`, which wants one although fetching metadata involves no
 * client. Only the server metadata of the result is used.
 */
const DISCOVERY_CLIENT_ID = 'mcp-oauth-guard';

/** Options of {@link createIssuerDiscovery}. */
export interface IssuerDiscoveryOptions {
  /** Issuer identifier (RFC 8414 §2), checked with {@link assertSecureUrl} by the caller. */
  issuer: string;
  /** Timeout of each metadata request, in milliseconds. */
  timeoutMs: number;
  /** Wait after a failure before the next attempt, in milliseconds. Default {@link DEFAULT_DISCOVERY_RETRY_MS}. */
  retryMs?: number;
  /** Current time in milliseconds since the epoch. Default `Date.now`. */
  now?: () => number;
}

/**
 * Returns the issuer's metadata, discovered on the first call and memoized. Concurrent first calls share one
 * discovery. After a failure, calls within `retryMs` fail at once (no request to the authorization server);
 * the first call after that tries again.
 *
 * @throws AuthorizationServerUnavailableError (503, `Retry-After` = seconds until the next attempt).
 */
export type DiscoverIssuer = () => Promise<client.ServerMetadata>;

/**
 * Creates the memoized discovery of {@link DiscoverIssuer}. Nothing is fetched until the first call.
 */
export function createIssuerDiscovery(options: IssuerDiscoveryOptions): DiscoverIssuer {
  const retryMs = options.retryMs ?? DEFAULT_DISCOVERY_RETRY_MS;
  const now = options.now ?? Date.now;
  let metadata: client.ServerMetadata | undefined;
  let pending: Promise<client.ServerMetadata> | undefined;
  let failedUntil = 0;
  let lastFailure: unknown;

  return () => {
    if (metadata !== undefined) return Promise.resolve(metadata);
    if (pending !== undefined) return pending;
    const nowMs = now();
    if (nowMs < failedUntil) {
      return Promise.reject(
        new AuthorizationServerUnavailableError(
          'authorization server metadata is unavailable',
          Math.max(1, Math.ceil((failedUntil - nowMs) / 1000)),
          lastFailure,
        ),
      );
    }
    pending = discoverIssuerMetadata(options.issuer, options.timeoutMs).then(
      (found) => {
        metadata = found;
        pending = undefined;
        return found;
      },
      (error: unknown) => {
        pending = undefined;
        failedUntil = now() + retryMs;
        lastFailure = error;
        throw new AuthorizationServerUnavailableError(
          'authorization server metadata is unavailable',
          Math.max(1, Math.ceil(retryMs / 1000)),
          error,
        );
      },
    );
    return pending;
  };
}

/**
 * Fetches an issuer's metadata once, without memoization: RFC 8414 `/.well-known/oauth-authorization-server`
 * first (inserted before the issuer's path, RFC 8414 §3.1), then OpenID Connect Discovery
 * `/.well-known/openid-configuration` (appended to the path), through openid-client's `discovery()`.
 *
 * The second location is tried only when the first answered but unusably (404, not JSON, wrong issuer…); a
 * timeout or a refused connection would only repeat. Plain http is allowed for loopback issuers only.
 *
 * The discovered `issuer` must equal the configured one character for character (RFC 8414 §3.3): openid-client
 * compares the two after URL normalization, which lets `https://as` and `https://as/` pass, yet tokens carry
 * one exact spelling in `iss`, which is matched exactly later; a mismatch found here is a clearer error.
 *
 * @param issuer - The issuer identifier.
 * @param timeoutMs - Timeout of each request, in milliseconds.
 * @returns The server metadata (RFC 8414 §2), with `jwks_uri` and `introspection_endpoint` when published.
 * @throws IssuerDiscoveryError when no location gave usable metadata (each one's URL and answer in `failures`),
 *   IssuerMismatchError (a ConfigurationError naming `issuer`) when the metadata spells the issuer differently, or a
 *   ConfigurationError naming `jwks_uri` or `introspection_endpoint` for an insecure endpoint.
 */
export async function discoverIssuerMetadata(issuer: string, timeoutMs: number): Promise<client.ServerMetadata> {
  const server = new URL(issuer);
  // Loaded at the first discovery: reading or checking a configuration, or printing help, needs no OAuth client.
  const openid = await import('openid-client');
  const discoveryOptions = (algorithm: 'oauth2' | 'oidc'): client.DiscoveryRequestOptions => ({
    algorithm,
    [openid.customFetch]: createTimeoutFetch(timeoutMs, 'discovery'),
    timeout: toOpenIdClientTimeout(timeoutMs),
    execute: isLoopbackHttpUrl(server) ? [openid.allowInsecureRequests] : [],
  });

  const failures: DiscoveryFailure[] = [];
  let config: client.Configuration | undefined;
  for (const algorithm of ['oauth2', 'oidc'] as const) {
    try {
      config = await openid.discovery(server, DISCOVERY_CLIENT_ID, undefined, undefined, discoveryOptions(algorithm));
      break;
    } catch (error) {
      failures.push(classifyDiscoveryFailure(wellKnownUrl(server, algorithm), error, timeoutMs, openid.ClientError));
      if (algorithm === 'oidc' || !isWorthFallingBack(error, openid.ClientError)) throw new IssuerDiscoveryError(issuer, failures, error);
    }
  }

  const metadata = (config as client.Configuration).serverMetadata();
  if (metadata.issuer !== issuer) throw new IssuerMismatchError(issuer, metadata.issuer);
  if (metadata.jwks_uri !== undefined) assertSecureUrl('jwks_uri', metadata.jwks_uri);
  if (metadata.introspection_endpoint !== undefined) assertSecureUrl('introspection_endpoint', metadata.introspection_endpoint);
  return metadata;
}

/**
 * The metadata names an `issuer` that differs from the configured one, though only in a way URL normalization hides
 * (a trailing slash on a path-less URL, the case of the host). RFC 8414 §3.3 compares them exactly, and so do the
 * `iss` checks of every token.
 */
export class IssuerMismatchError extends ConfigurationError {
  /** The issuer as configured. */
  readonly configured: string;
  /** The issuer as the authorization server's metadata spells it. */
  readonly discovered: string;
  constructor(configured: string, discovered: string) {
    super('issuer', `the authorization server calls itself "${discovered}", not "${configured}"; configure exactly that string, as tokens carry it in "iss"`);
    this.configured = configured;
    this.discovered = discovered;
  }
}

/** What kind of answer one metadata request got, for tools that suggest a fix (`mcp-oauth-guard check`). */
export type DiscoveryFailureKind =
  /** No connection: refused, unknown host, TLS failure, or an http URL refused. */
  | 'unreachable'
  /** No answer within the timeout. */
  | 'timeout'
  /** An HTTP status other than 200; 404 means no metadata document at that URL. */
  | 'http_status'
  /** A 200 whose body is not JSON (an HTML page, a login form). */
  | 'not_json'
  /** JSON metadata naming another issuer, past URL normalization (`http` for `https`, another path). */
  | 'issuer_mismatch'
  /** Anything else: JSON that is no metadata document (no `issuer`), an unexpected error. */
  | 'invalid';

/** One metadata location tried, and what it answered. */
export interface DiscoveryFailure {
  /** The URL requested. */
  readonly url: string;
  readonly kind: DiscoveryFailureKind;
  /** What happened, in words; never a response body beyond the `issuer` it named. */
  readonly description: string;
  /** The HTTP status, for `http_status` and `not_json`. */
  readonly status?: number;
  /** The `issuer` the metadata named, for `issuer_mismatch`. */
  readonly discoveredIssuer?: string;
}

/**
 * Discovery failed at every location tried. The message names each URL and what it answered (an HTTP status, a
 * network error, a timeout, an `issuer` that differs), for the operator's log; clients only ever see a 503.
 */
export class IssuerDiscoveryError extends Error {
  /** One line per location tried: `GET <url>: <what happened>`. */
  readonly attempts: readonly string[];
  /** The same, as data: one entry per location tried, in order. */
  readonly failures: readonly DiscoveryFailure[];
  constructor(issuer: string, failures: readonly DiscoveryFailure[], cause: unknown) {
    const attempts = failures.map((failure) => `GET ${failure.url}: ${failure.description}`);
    super(`discovery of issuer ${issuer} failed: ${attempts.join('; ')}`, { cause });
    this.name = 'IssuerDiscoveryError';
    this.attempts = attempts;
    this.failures = failures;
  }
}

/** The metadata URL openid-client requests: RFC 8414 §3.1 inserts the well-known path, OpenID appends it. */
function wellKnownUrl(issuer: URL, algorithm: 'oauth2' | 'oidc'): string {
  const path = issuer.pathname === '/' ? '' : issuer.pathname;
  if (algorithm === 'oauth2') return `${issuer.origin}/.well-known/oauth-authorization-server${path}`;
  return `${issuer.origin}${path.replace(/\/$/, '')}/.well-known/openid-configuration`;
}

/** What one discovery request came to; never a response body beyond the `issuer` it named. */
function classifyDiscoveryFailure(url: string, error: unknown, timeoutMs: number, ClientError: typeof client.ClientError): DiscoveryFailure {
  const failure = (kind: DiscoveryFailureKind, description: string, extra: { status?: number; discoveredIssuer?: string } = {}): DiscoveryFailure => ({ url, kind, description, ...extra });
  if (error instanceof ClientError) {
    if (error.code === 'OAUTH_TIMEOUT' || error.code === 'OAUTH_ABORT') return failure('timeout', `no answer within ${timeoutMs} ms`);
    const cause = error.cause as { status?: unknown; body?: { issuer?: unknown }; attribute?: unknown } | undefined;
    if (error.code === 'OAUTH_JSON_ATTRIBUTE_COMPARISON_FAILED' && cause?.attribute === 'issuer') {
      const discoveredIssuer = String(cause.body?.issuer);
      return failure('issuer_mismatch', `the metadata names issuer ${JSON.stringify(discoveredIssuer)}, which is not the configured issuer (compared exactly, RFC 8414 section 3.3)`, { discoveredIssuer });
    }
    if (cause instanceof Response) {
      if (error.code === 'OAUTH_RESPONSE_IS_NOT_JSON') {
        return failure('not_json', `HTTP ${cause.status} with content-type ${JSON.stringify(cause.headers.get('content-type') ?? 'none')}, not JSON metadata`, { status: cause.status });
      }
      return failure('http_status', `HTTP ${cause.status}${cause.status === 404 ? ' (no metadata document here)' : ''}`, { status: cause.status });
    }
    if (error.code === 'OAUTH_PARSE_ERROR') return failure('not_json', 'the body is not JSON', { status: 200 });
    return failure('invalid', error.message);
  }
  if (error instanceof TypeError) {
    const cause = error.cause as { code?: unknown; message?: unknown } | undefined;
    const detail = typeof cause?.code === 'string' ? cause.code : typeof cause?.message === 'string' ? cause.message : undefined;
    return failure('unreachable', detail === undefined ? error.message : `${error.message} (${detail})`);
  }
  if (error instanceof DOMException && (error.name === 'TimeoutError' || error.name === 'AbortError')) return failure('timeout', `no answer within ${timeoutMs} ms`);
  return failure('invalid', error instanceof Error ? error.message : String(error));
}

/**
 * Checks that a URL the guard will call is absolute https, or http on a loopback host (127.0.0.0/8, `::1`,
 * `localhost`, RFC 8252 §7.3) for local development. Credentials and fragments are refused.
 *
 * @param setting - The option name reported on error, e.g. `issuer` or `jwksUri`.
 * @param value - The URL as configured or discovered.
 * @returns The parsed URL.
 * @throws ConfigurationError naming `setting`.
 */
export function assertSecureUrl(setting: string, value: string): URL {
  const url = parseAbsoluteUrl(value, setting, `"${value}" is not an absolute URL; use an https URL (http only on loopback hosts)`);
  if (url.protocol !== 'https:' && !isLoopbackHttpUrl(url)) {
    throw new ConfigurationError(
      setting,
      url.protocol === 'http:'
        ? `http is allowed on loopback hosts only (127.0.0.1, [::1], localhost); use https for ${url.host}`
        : `must be an https URL (got ${url.protocol})`,
    );
  }
  if (url.username !== '' || url.password !== '') throw new ConfigurationError(setting, 'must not contain credentials');
  if (url.hash !== '' || value.includes('#')) throw new ConfigurationError(setting, 'must not contain a fragment');
  return url;
}

/** True for `http:` URLs on 127.0.0.0/8, `[::1]`, `localhost` or a `.localhost` name (RFC 6761 §6.3). */
export function isLoopbackHttpUrl(url: URL): boolean {
  return url.protocol === 'http:' && isLoopbackHost(url.hostname);
}

/**
 * A `fetch` for openid-client (`customFetch`) that aborts after `timeoutMs` milliseconds. openid-client's own
 * `timeout` is in whole seconds as far as Node's `AbortSignal.timeout` is concerned (it multiplies by 1000 and
 * Node refuses a fractional delay), so millisecond precision is applied here instead. Each request is an HTTP
 * client span whose `mcp_guard.call` is `call`.
 */
export function createTimeoutFetch(timeoutMs: number, call: AuthorizationServerCall): client.CustomFetch {
  return traceAuthorizationServerFetch(call, (url, init: client.CustomFetchOptions) => {
    const timeout = AbortSignal.timeout(timeoutMs);
    // openid-client's body types are what fetch accepts at run time; the DOM typings are narrower.
    const request = { ...init, signal: init.signal ? AbortSignal.any([init.signal, timeout]) : timeout } as RequestInit;
    return fetch(url, request);
  });
}

/** openid-client's `timeout` (seconds): a whole-second upper bound behind {@link createTimeoutFetch}. */
export function toOpenIdClientTimeout(timeoutMs: number): number {
  return Math.max(1, Math.ceil(timeoutMs / 1000));
}

/** A timeout or an unreachable host would fail the same way at the second location. */
function isWorthFallingBack(error: unknown, ClientError: typeof client.ClientError): boolean {
  if (error instanceof TypeError) return false; // fetch() network failure, or a refused http URL
  if (error instanceof ClientError && (error.code === 'OAUTH_TIMEOUT' || error.code === 'OAUTH_ABORT')) return false;
  return true;
}
