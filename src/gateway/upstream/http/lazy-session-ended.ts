/**
 * A session the gateway opened before the upstream's was ended (its client's DELETE, shutdown) while a request of it
 * was waiting for the upstream's session to open: that request gets the answer for a session that no longer exists,
 * 404 with JSON-RPC -32001 (MCP 2025-11-25, Streamable HTTP, "Session Management"), and is not sent on.
 */
export class LazySessionEndedError extends Error {
  constructor() {
    super('the session was ended while its upstream session was being opened');
  }
}
