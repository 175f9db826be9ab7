import type { IncomingMessage, ServerResponse } from 'node:http';
import { Router } from 'express';
import { createGuard, type Guard } from '../core/guard/create-guard.js';
import type { GuardOptions } from '../core/guard/guard-options.js';
import type { SettingNames } from '../core/guard/resolve-guard-options.js';
import { checkHandler, createRequestPipeline, type McpHandler } from '../http/request-pipeline.js';
import { MiddlewareLog } from '../http/middleware-log.js';

/** Options of {@link mcpOAuthGuard}: the guard's options plus the MCP handler to protect. */
export interface McpOAuthGuardOptions extends GuardOptions {
  /**
   * The MCP server behind the guard: a plain function `(message, context) => response | undefined |
   * AsyncIterable<message>`, or an {@link McpHttpHandler} that writes its own HTTP answer (SDK transport,
   * Express MCP handler, gateway).
   */
  handler: McpHandler;
  /** How settings are named in start-up errors (used by `loadOptionsFromEnv` callers). Internal. */
  settingNames?: SettingNames;
}

/**
 * The router returned by {@link mcpOAuthGuard}, with the guard it uses: `guard.ready()` runs discovery now, and
 * `guard.setPolicy(definition)` puts a new policy in force for the requests that arrive from then on. `close()`
 * writes the audit records still held (`audit`) and closes their file: call it on shutdown, after the server closed.
 */
export type McpOAuthGuardRouter = Router & { readonly guard: Guard; close(): Promise<void> };

/** The part of Express's Router runtime the guard calls (not in its published types). */
interface RouterHandle {
  handle(req: IncomingMessage, res: ServerResponse, next: (error?: unknown) => void): void;
}

/**
 * Express middleware that makes an MCP endpoint an OAuth 2.1 resource server. Mount it at the root
 * (`app.use(mcpOAuthGuard(options))`): it serves
 * - `GET /.well-known/oauth-protected-resource<path>` and `GET /.well-known/oauth-protected-resource`
 *   (RFC 9728 §3), CORS open and cacheable;
 * - the MCP endpoint at the path of `options.resource`: POST goes to the handler after authentication
 *   and authorization; GET and DELETE go to an {@link McpHttpHandler} that supports them, otherwise 405.
 *
 * Handlers see the verified caller as `req.auth`. Do not put `express.json()` before it on that path: the
 * guard reads the body itself, with a limit. The request flow itself is {@link createRequestPipeline}.
 *
 * It logs through `options.logger` (default: stderr), one JSON line each, never a token, at `options.logLevel`
 * (`MCP_AUTH_LOG_LEVEL`, default `info`). Start-up is each call of `mcpOAuthGuard`: it writes one `started` line
 * (resource, issuers, the policy's rule counts; with an SDK adapter as the handler, which lists the tools, prompts
 * and resources it registered, the counts of those protected and open and the open tools by name), after the
 * policy coverage warnings the gateway writes too (items no rule covers, rules that match nothing). It is written
 * a moment later, once the handler has been listed; serving does not wait for it. With `options.requestLog`
 * (`MCP_AUTH_REQUEST_LOG=on`; default off), each request to the guard's paths gets the gateway's request log line.
 *
 * @example
 * app.use(mcpOAuthGuard({ ...loadOptionsFromEnv(), handler: dispatchTable({ 'tools/list': listTools }) }));
 * @throws ConfigurationError at construction when an option is missing or invalid.
 */
export function mcpOAuthGuard(options: McpOAuthGuardOptions): McpOAuthGuardRouter {
  checkHandler(options?.handler);
  const log = new MiddlewareLog(options);
  const guard = createGuard(log.guardOptions(options), options.settingNames);
  const pipeline = createRequestPipeline(guard, options.handler);
  const serve = log.serving(pipeline);
  void log.announce(guard, options.handler).catch(() => {});
  // A real Express Router (use/get/handle work as usual, and routes added to it run after the guard's),
  // but requests for the guard's own paths are served without the router's layer dispatch: a nested
  // router level measured about 5% of the cost of a request with a cached token.
  const base = Router();
  base.use((req, res, next) => {
    if (!serve(req, res)) next();
  });
  const router = function mcpOAuthGuardRouter(req: IncomingMessage, res: ServerResponse, next: (error?: unknown) => void): void {
    if (!serve(req, res)) (router as unknown as RouterHandle).handle(req, res, next);
  };
  Object.setPrototypeOf(router, Object.getPrototypeOf(base));
  Object.assign(router, base, { guard, close: pipeline.close });
  return router as unknown as McpOAuthGuardRouter;
}
