/**
 * Thrown by the `connected` credentials for a caller whose token names no user (no issuer or no subject: a client
 * acting for itself). Connecting an account would not help, since there is nobody to bind the account to, so this is
 * a refusal (403), not the connect flow.
 */
export class CallerCannotConnectError extends Error {
  /** The configuration file's server name, `""` for the single upstream. */
  readonly server: string;
  constructor(server: string) {
    super(`the caller's token names no user (issuer and subject), so it cannot connect an account at ${server === '' ? 'the upstream' : `server "${server}"`}`);
    this.name = 'CallerCannotConnectError';
    this.server = server;
  }
}
