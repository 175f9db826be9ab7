/**
 * An error the authorization server sent back on the redirect (RFC 6749 §4.1.2.1), kept with its own words.
 *
 * @module
 */

/**
 * The authorization server answered the authorization request with an error on the redirect URI (RFC 6749
 * §4.1.2.1): `error` (e.g. `access_denied`, `invalid_scope`, `invalid_target`), and its optional
 * `error_description` and `error_uri`. The message carries all three, so printing it shows the server's own
 * explanation.
 *
 * @example
 * ```ts
 * import { AuthorizationRedirectError } from 'mcp-oauth-guard/client';
 *
 * try {
 *   await listener.waitForCode(state);
 * } catch (error) {
 *   if (error instanceof AuthorizationRedirectError && error.error === 'access_denied') {
 *     console.error(`refused: ${error.errorDescription ?? 'no reason given'}`);
 *   }
 * }
 * ```
 */
export class AuthorizationRedirectError extends Error {
  /** The `error` code of the redirect, e.g. `access_denied`. */
  readonly error: string;
  /** The redirect's `error_description`: the authorization server's own words, for a person to read. */
  readonly errorDescription: string | undefined;
  /** The redirect's `error_uri`: a page about the error. */
  readonly errorUri: string | undefined;

  /**
   * @param error - the redirect's `error` parameter
   * @param errorDescription - its `error_description`, if any
   * @param errorUri - its `error_uri`, if any
   */
  constructor(error: string, errorDescription?: string, errorUri?: string) {
    const description = errorDescription ? `: ${errorDescription}` : ' (the authorization server gave no error_description)';
    super(`the authorization server refused: ${error}${description}${errorUri ? ` (see ${errorUri})` : ''}`);
    this.name = 'AuthorizationRedirectError';
    this.error = error;
    this.errorDescription = errorDescription || undefined;
    this.errorUri = errorUri || undefined;
  }

  /**
   * The error a redirect carries, or `undefined` when it carries none.
   *
   * @param redirect - the URL the authorization server redirected to
   * @example
   * ```ts
   * const refused = AuthorizationRedirectError.fromRedirect(new URL('http://127.0.0.1:5000/callback?error=access_denied'));
   * ```
   */
  static fromRedirect(redirect: URL): AuthorizationRedirectError | undefined {
    const error = redirect.searchParams.get('error');
    if (!error) return undefined;
    return new AuthorizationRedirectError(error, redirect.searchParams.get('error_description') ?? undefined, redirect.searchParams.get('error_uri') ?? undefined);
  }
}
