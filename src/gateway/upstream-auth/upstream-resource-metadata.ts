/**
 * What a protected upstream says about itself (RFC 9728): the resource identifier tokens for it must carry as
 * audience, and the authorization server that issues them. The gateway reads it so that an operator need only
 * name the upstream URL.
 */
import { AuthorizationServerUnavailableError, ConfigurationError } from '../../core/kernel/errors.js';
import { createTimeoutFetch } from '../../core/token/issuer-discovery.js';
import { isScopeToken, scopeTokens } from '../../core/wire/scope-token.js';
import { JSON_MEDIA_TYPE, MCP_POST_ACCEPT } from '../../http/media-type.js';
import { challengeParameter } from './bearer-challenge.js';

/** Where the gateway gets tokens for the upstream, and for which resource. */
export interface UpstreamTarget {
  /** Issuer identifier of the upstream's authorization server. */
  issuer: string;
  /** The upstream's canonical resource URI, sent as `resource` (RFC 8707 §2). */
  resource: string;
  /** The `scopes_supported` of the upstream's metadata (RFC 9728 §2), when it published some. */
  scopesSupported?: readonly string[];
  /**
   * The `scope` of the upstream's 401 challenge to a request without a token (RFC 6750 §3), its scope tokens only;
   * read with {@link UpstreamTargetOptions.challengeScope}, when the challenge names one.
   */
  challengeScope?: string;
}

/** Options of {@link createUpstreamTargetResolver}. */
export interface UpstreamTargetOptions {
  /** The upstream MCP endpoint, e.g. `https://notes.example.com/mcp`. */
  upstream: URL;
  /** `MCP_AUTH_UPSTREAM_ISSUER`; when set it wins over the upstream's metadata. */
  issuer?: string;
  /** `MCP_AUTH_UPSTREAM_RESOURCE`; when set it wins over the upstream's metadata. */
  resource?: string;
  /**
   * Issuers the gateway itself trusts (`MCP_AUTH_ISSUER`): preferred among several the upstream names, and the
   * fallback. Empty (connected accounts): no fallback, an upstream that names no authorization server is an error.
   */
  gatewayIssuers: readonly string[];
  /** Timeout of each request to the upstream, in milliseconds. */
  timeoutMs: number;
  /** Wait after an upstream that could not be reached before asking again, in milliseconds. Default 5000. */
  retryMs?: number;
  /**
   * Also read the `scope` of the upstream's 401 challenge ({@link UpstreamTarget.challengeScope}): the scope MCP
   * clients ask for first. The upstream is then sent one request without a token even when its well-known
   * document answers. Default false.
   */
  challengeScope?: boolean;
}

/** Largest metadata document read, in bytes: a few hundred in practice. */
const MAX_METADATA_BYTES = 64 * 1024;

/**
 * Returns the upstream's target, memoized once known. Each value comes from, in order: its setting; the
 * upstream's RFC 9728 metadata, read from its well-known URI (`/.well-known/oauth-protected-resource<path>`,
 * RFC 9728 §3.1) or else from the `resource_metadata` of the `WWW-Authenticate` challenge an unauthenticated
 * request gets (RFC 9728 §5.1); failing that, the gateway's first issuer and the upstream URL itself.
 *
 * Metadata whose `resource` is on another origin than the upstream is ignored: the gateway sends the token to
 * the upstream, so a document naming another server's resource would only mint tokens for the wrong audience.
 * An upstream that cannot be reached is not an answer: the resolver throws (503 for the caller) and asks again
 * after `retryMs`, instead of settling on the fallback for good.
 *
 * @throws AuthorizationServerUnavailableError when the upstream cannot be reached.
 */
export function createUpstreamTargetResolver(options: UpstreamTargetOptions): () => Promise<UpstreamTarget> {
  const retryMs = options.retryMs ?? 5_000;
  let known: UpstreamTarget | undefined;
  let pending: Promise<UpstreamTarget> | undefined;
  let failedUntil = 0;
  const fallbackIssuer = (): string => {
    const issuer = options.issuer ?? options.gatewayIssuers[0];
    // Connected accounts give no issuers of the gateway's own: the user's authorization must come from the upstream's.
    if (issuer === undefined) throw new ConfigurationError('MCP_AUTH_UPSTREAM_ISSUER', "is needed: the upstream names no authorization server in its metadata (RFC 9728); set it to the issuer of the upstream's tokens");
    return issuer;
  };
  const fallbackResource = (): string => options.resource ?? options.upstream.href;
  if (options.issuer !== undefined && options.resource !== undefined) known = { issuer: options.issuer, resource: options.resource };

  return () => {
    if (known) return Promise.resolve(known);
    if (pending) return pending;
    if (Date.now() < failedUntil) {
      return Promise.reject(new AuthorizationServerUnavailableError('the upstream MCP server could not be reached for its metadata', Math.max(1, Math.ceil((failedUntil - Date.now()) / 1000))));
    }
    pending = readUpstreamMetadata(options.upstream, options.timeoutMs, options.challengeScope).then(
      ({ metadata, challengeScope }) => {
        pending = undefined;
        const issuers = metadata?.authorization_servers ?? [];
        known = {
          issuer: options.issuer ?? issuers.find((issuer) => options.gatewayIssuers.includes(issuer)) ?? issuers[0] ?? fallbackIssuer(),
          resource: options.resource ?? metadata?.resource ?? fallbackResource(),
          ...(metadata?.scopes_supported ? { scopesSupported: metadata.scopes_supported } : {}),
          ...(challengeScope !== undefined ? { challengeScope } : {}),
        };
        return known;
      },
      (error: unknown) => {
        pending = undefined;
        failedUntil = Date.now() + retryMs;
        throw new AuthorizationServerUnavailableError('the upstream MCP server could not be reached for its metadata', Math.max(1, Math.ceil(retryMs / 1000)), error);
      },
    );
    return pending;
  };
}

/** The parts of an RFC 9728 §2 document the gateway uses, checked. */
interface ResourceMetadata {
  resource: string;
  authorization_servers?: string[];
  scopes_supported?: string[];
}

/** What the upstream says of itself: its metadata when it publishes one usable, and its challenge's scope when asked. */
export interface UpstreamDiscovery {
  readonly metadata?: ResourceMetadata;
  readonly challengeScope?: string;
}

/** Most scope tokens kept from a challenge or a metadata document. */
const MAX_SCOPES = 100;

/**
 * The upstream's metadata (undefined when it publishes none usable), and with `readChallengeScope` the scope its
 * 401 challenge names. Rejects only when the upstream cannot be reached at all.
 */
export async function readUpstreamMetadata(upstream: URL, timeoutMs: number, readChallengeScope = false): Promise<UpstreamDiscovery> {
  const fetchWithTimeout = createTimeoutFetch(timeoutMs, 'discovery');
  const path = upstream.pathname === '/' ? '' : upstream.pathname;
  const wellKnown = await fetchMetadata(fetchWithTimeout, `${upstream.origin}/.well-known/oauth-protected-resource${path}`, upstream);
  if (wellKnown && !readChallengeScope) return { metadata: wellKnown };
  // An unauthenticated request's challenge: its scope, and where there is no document at the well-known URI, it
  // may point at one elsewhere.
  const challenge = await unauthenticatedChallenge(fetchWithTimeout, upstream);
  const scope = readChallengeScope ? scopeTokens(challengeParameter(challenge, 'scope')).slice(0, MAX_SCOPES).join(' ') : '';
  const found = scope === '' ? {} : { challengeScope: scope };
  if (wellKnown) return { metadata: wellKnown, ...found };
  const location = challengeParameter(challenge, 'resource_metadata');
  if (location === undefined) return found;
  let url: URL;
  try {
    url = new URL(location, upstream);
  } catch {
    return found;
  }
  // The challenge may only point at a document on the upstream's own origin.
  if (url.origin !== upstream.origin) return found;
  const metadata = await fetchMetadata(fetchWithTimeout, url.href, upstream);
  return metadata ? { metadata, ...found } : found;
}

/** The `WWW-Authenticate` header of the upstream's 401 to a `ping` without a token; undefined for any other answer. */
async function unauthenticatedChallenge(fetchWithTimeout: ReturnType<typeof createTimeoutFetch>, upstream: URL): Promise<string | undefined> {
  const probe = await fetchWithTimeout(upstream.href, {
    method: 'POST',
    headers: { 'content-type': JSON_MEDIA_TYPE, accept: MCP_POST_ACCEPT },
    body: JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'ping' }),
    redirect: 'manual',
  } as never);
  await probe.body?.cancel();
  return probe.status === 401 ? (probe.headers.get('www-authenticate') ?? undefined) : undefined;
}

async function fetchMetadata(fetchWithTimeout: ReturnType<typeof createTimeoutFetch>, url: string, upstream: URL): Promise<ResourceMetadata | undefined> {
  const res = await fetchWithTimeout(url, { method: 'GET', headers: { accept: JSON_MEDIA_TYPE }, redirect: 'manual' } as never);
  if (res.status !== 200 || Number(res.headers.get('content-length') ?? 0) > MAX_METADATA_BYTES) {
    await res.body?.cancel();
    return undefined;
  }
  let document: unknown;
  try {
    const text = await res.text();
    if (text.length > MAX_METADATA_BYTES) return undefined;
    document = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof document !== 'object' || document === null) return undefined;
  const { resource, authorization_servers: servers, scopes_supported: scopes } = document as Record<string, unknown>;
  if (typeof resource !== 'string' || URL.parse(resource)?.origin !== upstream.origin) return undefined;
  const issuers = Array.isArray(servers) ? servers.filter((s): s is string => typeof s === 'string' && URL.canParse(s)) : [];
  // Scope tokens are printable ASCII without space, quote or backslash (RFC 6749 §3.3); others are dropped.
  const scopesSupported = Array.isArray(scopes) ? scopes.filter(isScopeToken).slice(0, MAX_SCOPES) : [];
  return { resource, ...(issuers.length ? { authorization_servers: issuers } : {}), ...(scopesSupported.length ? { scopes_supported: scopesSupported } : {}) };
}

/** The `resource_metadata` auth-param of a `Bearer` (or `DPoP`) challenge, RFC 9728 §5.1. */
export function resourceMetadataParameter(header: string | null): string | undefined {
  return challengeParameter(header, 'resource_metadata');
}
