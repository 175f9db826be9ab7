/**
 * Thrown by the `connected` credentials for a caller who cannot connect an account at all, so that the answer is a
 * refusal (403) naming why, never the connect flow (no link, no ticket):
 *
 * - `no_user`: the token names no user (no issuer or no subject: a client acting for itself), so there is nobody
 *   to bind an account to;
 * - `other_issuer`: the token comes from one of the gateway's issuers other than the login issuer
 *   (`MCP_AUTH_LOGIN_ISSUER`), where the connect page cannot sign its user in.
 */
export class CallerCannotConnectError extends Error {
  /** The configuration file's server name, `""` for the single upstream. */
  readonly server: string;
  readonly reason: 'no_user' | 'other_issuer';
  /** For `other_issuer`: the caller's issuer and the login issuer (issuer URLs, never a subject). */
  readonly issuers?: { readonly caller: string; readonly login: string };
  constructor(server: string, reason: 'no_user' | 'other_issuer' = 'no_user', issuers?: { caller: string; login: string }) {
    const at = server === '' ? 'the upstream' : `server "${server}"`;
    super(reason === 'no_user' ? `the caller's token names no user (issuer and subject), so it cannot connect an account at ${at}` : `the caller's issuer is not the login issuer, so it cannot connect an account at ${at}`);
    this.name = 'CallerCannotConnectError';
    this.server = server;
    this.reason = reason;
    if (issuers !== undefined) this.issuers = { caller: issuers.caller, login: issuers.login };
  }
}
