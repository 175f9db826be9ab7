/**
 * Entry point `mcp-oauth-guard/http`: the `node:http` request pipeline and its building blocks, for adapters to
 * other `node:http` frameworks and for servers that never load Express. The main entry re-exports the parts a
 * middleware user calls (`createRequestPipeline`, `httpHandler`, `fetchHandler`, `answerClientErrors`,
 * `decisionRequestOf`) beside the Express adapter, which loads Express; this entry loads neither Express nor
 * prom-client. With `createGuard`, `loadOptionsFromEnv` and `dispatchTable` from `mcp-oauth-guard/core`, it serves
 * a guarded MCP endpoint on a plain `node:http` server. Re-exports only.
 *
 * @module mcp-oauth-guard/http
 */
export { createRequestPipeline, type McpHandler, type RequestPipeline } from './request-pipeline.js';
export {
  httpHandler,
  isHttpHandler,
  type GuardedRequest,
  type HandlerListFilter,
  type HttpHandlerContext,
  type HttpHandlerOptions,
  type McpHttpHandler,
} from './http-handler.js';
export type { ListedServerCatalog } from '../core/policy/read-server-catalog.js';
export { fetchHandler, type FetchHandle, type FetchHandlerContext, type FetchHandlerOptions } from './fetch-handler.js';
export { decisionRequestOf } from './decision-request.js';
export { answerClientErrors } from './client-error.js';
export { filterListResponse, type FilterListResponseOptions, type ListAnswerMemo } from './filter-written-response.js';
export { createRequestLog, type RequestLog, type RequestLogEntry, type RequestLogOptions } from './request-log.js';
