/**
 * What a protected upstream says about itself (RFC 9728): the resource identifier tokens for it must carry as
 * audience, and the authorization server that issues them. The gateway reads it so that an operator need only
 * name the upstream URL.
 */
import { AuthorizationServerUnavailableError, ConfigurationError } from '../../core/kernel/errors.js';
import { createTimeoutFetch } from '../../core/token/issuer-discovery.js';
import { JSON_MEDIA_TYPE, MCP_POST_ACCEPT } from '../../http/media-type.js';

/** Where the gateway gets tokens for the upstream, and for which resource. */
export interface UpstreamTarget {
  /** Issuer identifier of the upstream's authorization server. */
  issuer: string;
  /** The upstream's canonical resource URI, sent as `resource` (RFC 8707 §2). */
  resource: string;
  /** The `scopes_supported` of the upstream's metadata (RFC 9728 §2), when it published some. */
  scopesSupported?: readonly string[];
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
    pending = readUpstreamMetadata(options.upstream, options.timeoutMs).then(
      (metadata) => {
        pending = undefined;
        const issuers = metadata?.authorization_servers ?? [];
        known = {
          issuer: options.issuer ?? issuers.find((issuer) => options.gatewayIssuers.includes(issuer)) ?? issuers[0] ?? fallbackIssuer(),
          resource: options.resource ?? metadata?.resource ?? fallbackResource(),
          ...(metadata?.scopes_supported ? { scopesSupported: metadata.scopes_supported } : {}),
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

/**
 * The upstream's metadata, or undefined when it publishes none usable. Rejects only when the upstream cannot be
 * reached at all.
 */
export async function readUpstreamMetadata(upstream: URL, timeoutMs: number): Promise<ResourceMetadata | undefined> {
  const fetchWithTimeout = createTimeoutFetch(timeoutMs, 'discovery');
  const path = upstream.pathname === '/' ? '' : upstream.pathname;
  const wellKnown = await fetchMetadata(fetchWithTimeout, `${upstream.origin}/.well-known/oauth-protected-resource${path}`, upstream);
  if (wellKnown) return wellKnown;
  // No document at the well-known URI: an unauthenticated request's challenge may point at one elsewhere.
  const probe = await fetchWithTimeout(upstream.href, {
    method: 'POST',
    headers: { 'content-type': JSON_MEDIA_TYPE, accept: MCP_POST_ACCEPT },
    body: JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'ping' }),
    redirect: 'manual',
  } as never);
  await probe.body?.cancel();
  const location = probe.status === 401 ? resourceMetadataParameter(probe.headers.get('www-authenticate')) : undefined;
  if (location === undefined) return undefined;
  let url: URL;
  try {
    url = new URL(location, upstream);
  } catch {
    return undefined;
  }
  // The challenge may only point at a document on the upstream's own origin.
  if (url.origin !== upstream.origin) return undefined;
  return fetchMetadata(fetchWithTimeout, url.href, upstream);
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
  const scopesSupported = Array.isArray(scopes) ? scopes.filter((s): s is string => typeof s === 'string' && /^[\x21\x23-\x5b\x5d-\x7e]+$/.test(s)).slice(0, 100) : [];
  return { resource, ...(issuers.length ? { authorization_servers: issuers } : {}), ...(scopesSupported.length ? { scopes_supported: scopesSupported } : {}) };
}

/** The `resource_metadata` auth-param of a `Bearer` (or `DPoP`) challenge, RFC 9728 §5.1. */
export function resourceMetadataParameter(header: string | null): string | undefined {
  if (header === null) return undefined;
  const match = /(?:^|[\s,])resource_metadata\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s,]+))/i.exec(header);
  if (!match) return undefined;
  return match[1] !== undefined ? match[1].replace(/\\(.)/g, '$1') : match[2];
}
