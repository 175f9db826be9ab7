import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Guard } from '../core/guard/create-guard.js';
import { ConfigurationError } from '../core/kernel/errors.js';
import type { McpMessageHandler } from '../core/mcp/handler.js';
import { isHttpHandler, type McpHttpHandler } from './http-handler.js';
import { McpEndpoint } from './mcp-endpoint.js';
import { requestPath } from './request-headers.js';
import { serveTraced } from './request-span.js';
import { createMetadataResponder } from './serve-metadata.js';
import { AuditTrail } from './audit-trail.js';
import { warningSink } from '../core/kernel/log-options.js';

/** The MCP server behind the guard: a plain message function, or an HTTP handler that writes its own answer. */
export type McpHandler = McpMessageHandler | McpHttpHandler;

/**
 * The guard's request flow on `node:http`, for one guard and one handler. See {@link createRequestPipeline}.
 */
export interface RequestPipeline {
  /** The guard; `guard.setPolicy` changes the policy of every request that arrives afterwards. */
  readonly guard: Guard;
  /**
   * Serves `req` when it is for the MCP endpoint (the path of the resource) or the metadata documents, and
   * returns true; returns false, having written nothing, for any other path.
   */
  serve(req: IncomingMessage, res: ServerResponse): boolean;
  /**
   * Writes the audit records still held (the guard's `audit`) and closes their destination: call it on shutdown,
   * once the server has stopped answering, so that no record is lost. Resolves at once without an audit trail.
   * Idempotent.
   */
  close(): Promise<void>;
}

/**
 * Throws unless `handler` is a function or an {@link McpHttpHandler}; adapters call it before building a guard,
 * so a missing handler is the error reported.
 *
 * @throws ConfigurationError naming `options.handler`.
 */
export function checkHandler(handler: unknown): asserts handler is McpHandler {
  if (typeof handler !== 'function' && !isHttpHandler(handler)) {
    throw new ConfigurationError(
      'options.handler',
      'is required: pass an async function (message, context) => response, or httpHandler(...)/an SDK adapter',
    );
  }
}

/**
 * The one request pipeline every adapter shares (Express, plain `node:http`, the SDK adapters, the
 * gateway). For a POST to the MCP endpoint, in this order:
 *
 * `Origin` check → body read (bounded) → JSON-RPC parse → token (header only) → mirrored headers and
 * scope policy → rate limits (when set) → handler → filtered response → audit record (when `audit` is set).
 *
 * The body is parsed before the token is checked only so that a 401 carries the request's id; a bad body
 * is still reported after a missing or bad token. GET and DELETE (2025 sessions) go to an
 * {@link McpHttpHandler} that supports them, after the token and the base scopes; otherwise 405. Every
 * refusal is a standard answer (status, `WWW-Authenticate`, JSON-RPC error) reported to `onDecision`.
 *
 * Each request runs under the policy in force when it arrived (`guard.snapshot()`), so a `guard.setPolicy` while it
 * is in progress changes nothing for it, and the next request follows the new policy at once.
 *
 * With an OpenTelemetry SDK registered, each POST, GET and DELETE is a SERVER span (see `serveTraced`) with
 * children `mcp_guard.verify_token`, `mcp_guard.authorize` and `mcp_guard.handle`; without one, nothing is traced.
 *
 * @example
 * const pipeline = createRequestPipeline(createGuard(options), handler);
 * http.createServer((req, res) => { if (!pipeline.serve(req, res)) res.writeHead(404).end(); });
 * @throws ConfigurationError when `handler` is neither a function nor an {@link McpHttpHandler}.
 */
export function createRequestPipeline(guard: Guard, handler: McpHandler): RequestPipeline {
  checkHandler(handler);
  const metadataPaths = new Set(guard.metadataPaths);
  const endpointPath = guard.resourcePath;
  const endpointPathSlash = endpointPath.endsWith('/') ? endpointPath : `${endpointPath}/`;
  const serveMetadata = createMetadataResponder(guard);
  // The steps of each method, made once: serving a request makes nothing here but what the steps make.
  const audit = createAuditTrail(guard);
  const endpoint = new McpEndpoint(guard, handler, audit);
  return {
    guard,
    serve(req, res) {
      const path = requestPath(req);
      if (path === endpointPath || path === endpointPathSlash) {
        audit?.arrived(req, res);
        switch (req.method) {
          case 'POST':
            void serveTraced(req, res, endpointPath, endpoint.servePost);
            return true;
          case 'GET':
          case 'DELETE':
            void serveTraced(req, res, endpointPath, endpoint.serveGetOrDelete);
            return true;
          case 'OPTIONS':
            endpoint.serveOptions(req, res);
            return true;
          default:
            endpoint.serveOtherMethod(req, res);
            return true;
        }
      }
      if (path !== undefined && metadataPaths.has(path)) {
        serveMetadata(req, res);
        return true;
      }
      return false;
    },
    close: () => audit?.close() ?? Promise.resolve(),
  };
}

/** The guard's audit trail, when `audit` is set; its warnings go where the guard's do. */
function createAuditTrail(guard: Guard): AuditTrail | undefined {
  const { auditSettings, onAuditDropped } = guard.options;
  if (auditSettings === undefined) return undefined;
  return new AuditTrail({ settings: auditSettings, onDropped: onAuditDropped, warn: warningSink(guard.options) });
}
