/**
 * The two ways an MCP call of the demo client fails: a JSON-RPC error answer, or an HTTP answer it could not
 * turn into a result.
 *
 * @module
 */

/** A JSON-RPC error answered by the MCP server. */
export class McpRpcError extends Error {
  /** JSON-RPC error code. */
  readonly code: number;
  /** JSON-RPC error data. */
  readonly data: unknown;
  constructor(code: number, message: string, data?: unknown) {
    super(message);
    this.name = 'McpRpcError';
    this.code = code;
    this.data = data;
  }
}

/** An HTTP answer the client could not turn into a JSON-RPC result (after any re-authorization). */
export class McpHttpError extends Error {
  /** HTTP status. */
  readonly status: number;
  /** `WWW-Authenticate` header, if any. */
  readonly wwwAuthenticate: string | null;
  constructor(status: number, message: string, wwwAuthenticate: string | null) {
    super(message);
    this.name = 'McpHttpError';
    this.status = status;
    this.wwwAuthenticate = wwwAuthenticate;
  }
}
