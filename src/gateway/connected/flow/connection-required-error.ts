/**
 * Thrown by the `connected` credentials when the caller has no usable connection to the upstream: the gateway
 * answers it with the connect flow (a URL elicitation or a tool result with the link), never with a 5xx.
 */

/** Why a connection is needed. */
export type ConnectionRequiredReason = 'not_connected' | 'expired' | 'insufficient_scope';

/** The caller must connect (or reconnect) their account at `server` before the request can go on. */
export class ConnectionRequiredError extends Error {
  /** The configuration file's server name, `""` for the single upstream. */
  readonly server: string;
  readonly reason: ConnectionRequiredReason;
  /** Scopes to ask for (space-separated), e.g. those an `insufficient_scope` challenge named. */
  readonly scope: string | undefined;
  constructor(server: string, reason: ConnectionRequiredReason, scope?: string) {
    super(`the caller has no usable connection to ${server === '' ? 'the upstream' : `server "${server}"`} (${reason})`);
    this.name = 'ConnectionRequiredError';
    this.server = server;
    this.reason = reason;
    this.scope = scope;
  }
}
