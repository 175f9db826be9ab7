import { compileUriLookup, type UriLookup } from '../../core/wire/uri-template.js';

/** Two servers claiming one resource URI or template: the first in the configuration file keeps it. */
export interface ResourceClaimConflict {
  /** The URI or template claimed twice. */
  readonly uri: string;
  /** The server that keeps it (first in the file). */
  readonly kept: string;
  /** The server whose claim is ignored. */
  readonly ignored: string;
}

/**
 * Which server a resource URI belongs to, learnt from what each server lists (`resources/list` URIs and
 * `resources/templates/list` templates): `resources/read`, subscriptions and completions of a resource go to the
 * server that listed the URI, else to the one whose template matches it (the most specific template, as the
 * policy picks one). When two servers claim the same URI or template, the first in the configuration file keeps
 * it, and the claim is reported once.
 *
 * Bounded: at most `maxClaims` are kept per server.
 *
 * @example
 * const routes = new ResourceRoutes(['notes', 'files']);
 * routes.learn('notes', ['notes://a'], ['notes://{id}']);
 * routes.serverOf('notes://b'); // 'notes'
 */
export class ResourceRoutes {
  private readonly uris = new Map<string, Set<string>>();
  private readonly templates = new Map<string, Set<string>>();
  private lookup: UriLookup<string> = compileUriLookup<string>([]);
  private readonly reported = new Set<string>();

  /**
   * @param servers - The servers' names in configuration order (the order that settles a conflict).
   * @param onConflict - Told of each conflict once.
   */
  constructor(
    private readonly servers: readonly string[],
    private readonly onConflict: (conflict: ResourceClaimConflict) => void = () => {},
    private readonly maxClaims = 10_000,
  ) {}

  /**
   * Adds what `server` claims: URIs it lists, or (with `kind: 'templates'`) templates. Claims add up across pages
   * and callers (a server may list differently for each), up to `maxClaims` per server; past it, the server's
   * claims start again from this listing.
   */
  learn(server: string, claimed: readonly string[], kind: 'uris' | 'templates'): void {
    const table = kind === 'uris' ? this.uris : this.templates;
    let claims = table.get(server);
    const added = claimed.filter((uri) => !claims?.has(uri));
    if (added.length === 0) return;
    if (claims === undefined || claims.size + added.length > this.maxClaims) table.set(server, (claims = new Set()));
    for (const uri of added.slice(0, this.maxClaims - claims.size)) claims.add(uri);
    // Built now rather than on the next lookup, so that a conflict is reported when it appears (at start-up, for
    // what the servers list then).
    this.lookup = this.build();
  }

  /** The server that `uri` (a URI, or a template string) belongs to; undefined when none claims it. */
  serverOf(uri: string): string | undefined {
    return this.lookup.find(uri);
  }

  private build(): UriLookup<string> {
    const owner = new Map<string, string>();
    for (const server of this.servers) {
      for (const table of [this.uris, this.templates]) {
        for (const uri of table.get(server) ?? []) {
          const kept = owner.get(uri);
          if (kept === undefined) owner.set(uri, server);
          else if (kept !== server) this.report({ uri, kept, ignored: server });
        }
      }
    }
    try {
      return compileUriLookup(owner);
    } catch {
      // A malformed template listed by a server: keep the exact URIs, drop the templates.
      return compileUriLookup([...owner].filter(([uri]) => !uri.includes('{')));
    }
  }

  private report(conflict: ResourceClaimConflict): void {
    const key = `${conflict.uri}\n${conflict.ignored}`;
    if (this.reported.has(key) || this.reported.size >= this.maxClaims) return;
    this.reported.add(key);
    this.onConflict(conflict);
  }
}
