/**
 * The answer to a step-up that cannot succeed: the user connected again for the scopes the upstream asked for,
 * and the upstream's authorization server granted less. Another connect link would send the user round in a loop;
 * the caller is told plainly instead (see `scopeNotGrantedAnswer`).
 */

/** The upstream refused the user's token for want of `scope`, which a connection made for it did not get. */
export class ScopeNotGrantedError extends Error {
  /** The configuration file's server name, `""` for the single upstream. */
  readonly server: string;
  /** The scopes the upstream asked for (space-separated scope tokens). */
  readonly scope: string;
  constructor(server: string, scope: string) {
    super(`the upstream's authorization server did not grant the scope asked for ${server === '' ? 'the upstream' : `server "${server}"`}`);
    this.name = 'ScopeNotGrantedError';
    this.server = server;
    this.scope = scope;
  }
}
