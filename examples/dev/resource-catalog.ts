/**
 * The resources (MCP server URLs) the development authorization server issues tokens for: the ones it was given,
 * those added while it runs, and, when asked to, any loopback URL, so that a new local MCP server needs no
 * restart. Refusals say which resource was refused, what is known, and how to add it.
 *
 * @module
 */
import { isLoopbackHost } from 'mcp-oauth-guard/core';
import type { ResourceServerInfo } from 'oidc-provider';
import type { ResourceOptions } from './authorization-server.js';

/** Where a refused resource is told how to get itself added; the development command names its flags. */
export interface ResourceCatalogOptions {
  /** Options of every loopback resource not configured on its own; undefined: only configured ones. */
  loopback?: ResourceOptions;
  /** Appended to the description of an unknown resource: how to add one. */
  unknownResourceHint?: string;
  /** Default access token lifetime, in seconds, for resources that set none. */
  accessTokenTtl: number;
  /** Signing algorithm of JWT access tokens. */
  signingAlg: string;
}

/** Configured resources by URL, the loopback wildcard, and the descriptions of refusals. */
export class ResourceCatalog {
  /** Resources configured by URL, as given (oidc-provider compares the requested string, and `aud` is it). */
  readonly configured = new Map<string, ResourceOptions>();

  constructor(private readonly options: ResourceCatalogOptions) {
    if (options.loopback && !options.loopback.scopes.length) throw new TypeError('loopbackResources.scopes must not be empty');
  }

  /** Adds (or replaces) a resource; RFC 8707 section 2: an absolute URI without a fragment. */
  add(resource: string, resourceOptions: ResourceOptions): void {
    const url = URL.parse(resource);
    if (!url || url.hash || resource.includes('#')) throw new TypeError(`resources: invalid resource URI ${resource}`);
    if (!resourceOptions.scopes.length) throw new TypeError(`resources[${resource}].scopes must not be empty`);
    this.configured.set(resource, { ...resourceOptions, scopes: [...resourceOptions.scopes] });
  }

  /** The options of a resource: configured, else loopback when the wildcard is on, else undefined. */
  lookup(resource: string): ResourceOptions | undefined {
    return this.configured.get(resource) ?? (this.options.loopback && isLoopbackResource(resource) ? this.options.loopback : undefined);
  }

  /** What oidc-provider needs to issue a token for the resource, or undefined for an unknown one. */
  info(resource: string): ResourceServerInfo | undefined {
    const entry = this.lookup(resource);
    if (!entry) return undefined;
    const format = entry.accessTokenFormat ?? 'jwt';
    return {
      scope: entry.scopes.join(' '),
      audience: resource,
      accessTokenTTL: entry.accessTokenTtl ?? this.options.accessTokenTtl,
      accessTokenFormat: format,
      ...(format === 'jwt' ? { jwt: { sign: { alg: this.options.signingAlg } } } : {}),
    };
  }

  /** Why a resource is refused (`invalid_target`'s description): what it is, what is known, how to add it. */
  describeUnknown(resource: string): string {
    const known = [...this.configured.keys()];
    const accepted = [
      ...(known.length ? [known.join(', ')] : []),
      ...(this.options.loopback ? ['any http(s) URL on 127.0.0.1, localhost or [::1]'] : []),
    ];
    const why = this.options.loopback && !isLoopbackResource(resource) ? ' is not a loopback URL, and' : '';
    const hint = this.options.unknownResourceHint ? `; ${this.options.unknownResourceHint}` : '';
    return `the resource ${resource}${why} is not one this authorization server issues tokens for (it knows ${accepted.join(' and ') || 'none'})${hint}`;
  }
}

/** An `http:` or `https:` URL, without a fragment, whose host is a loopback address or name. */
export function isLoopbackResource(resource: string): boolean {
  const url = URL.parse(resource);
  return url !== null && (url.protocol === 'http:' || url.protocol === 'https:') && !resource.includes('#') && isLoopbackHost(url.hostname);
}
