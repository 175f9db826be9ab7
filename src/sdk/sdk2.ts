/**
 * Entry point `mcp-oauth-guard/sdk2`: the adapter for the official MCP TypeScript SDK 2.x
 * (`@modelcontextprotocol/server`). A separate entry from `mcp-oauth-guard/sdk` (SDK 1.x) so that each
 * imports only the SDK it serves: users of one major need not install the other.
 *
 * @module mcp-oauth-guard/sdk2
 */
import {
  createMcpHandler,
  InMemoryTransport,
  type AuthInfo as SdkAuthInfo,
  type CreateMcpHandlerOptions,
  type McpServerFactory,
  type ServerEventBus,
  type ServerNotifier,
} from '@modelcontextprotocol/server';
import type { AuthInfo } from '../core/kernel/auth-info.js';
import { protectedResourceMetadataUrls } from '../core/kernel/canonical-resource.js';
import { ConfigurationError } from '../core/kernel/errors.js';
import { fetchHandler } from '../http/fetch-handler.js';
import type { McpHttpHandler } from '../http/http-handler.js';
import type { ListedServerCatalog } from '../core/policy/read-server-catalog.js';
import { listSdkServerOver } from './list-sdk-server.js';

/**
 * Options of {@link sdk2McpHandler}: a server factory, and the options of the SDK's `createMcpHandler`
 * passed through unchanged (`legacy`, `responseMode`, `keepAliveMs`, `bus`, `maxSubscriptions`,
 * `onerror`). `maxRequestBodySize` is not accepted: the guard reads and bounds the body itself
 * (`maxBodyBytes`) and hands the SDK the parsed message, to which the SDK's bound does not apply.
 */
export interface Sdk2McpHandlerOptions extends Omit<CreateMcpHandlerOptions, 'maxRequestBodySize'> {
  /**
   * Creates a fresh `McpServer` (or low-level `Server`) with its tools registered. The SDK calls it once
   * per request, for 2026-07-28 and 2025 traffic alike, with `{ era, authInfo, requestInfo }`; zero-argument
   * factories are fine.
   */
  createServer: McpServerFactory;
}

/** The handler returned by {@link sdk2McpHandler}. */
export interface Sdk2McpHandler extends McpHttpHandler {
  /** Publishes list-changed and resource-updated events to open `subscriptions/listen` streams (2026-07-28). */
  readonly notify: ServerNotifier;
  /** The event bus those streams subscribe to. */
  readonly bus: ServerEventBus;
  /** Aborts requests in flight and closes listen streams; later requests get 500. */
  close(): Promise<void>;
}

/**
 * Serves an MCP server built with the official TypeScript SDK 2.x behind `mcpOAuthGuard`, through the
 * SDK's own serving entry `createMcpHandler` (2026-07-28 stateless requests, and 2025-era requests by the
 * SDK's stateless fallback), converted to Node by {@link fetchHandler}.
 *
 * The guard authenticates and authorizes each request first; the SDK gets the verified caller as
 * `authInfo` and hands it to tools as `ctx.http.authInfo` (the guard's `AuthInfo`, plus
 * `resourceMetadataUrl` set to the guard's metadata URL so that scope challenges the SDK itself raises
 * name the same document as the guard's). It also gets the authorized message as `parsedBody`, so it acts
 * on exactly what was authorized. The `Authorization`, `Proxy-Authorization` and `Cookie` headers are not in
 * the request it sees (`ctx.http.req`), so tools copying headers forward no credentials; the raw token is
 * only in `ctx.http.authInfo.token`, as the SDK's `AuthInfo` shape requires. List results are filtered
 * by the guard on the way out, JSON and SSE answers alike.
 *
 * `listCatalog` builds one server with `createServer({ era: 'legacy' })` and lists what it registered, over an
 * in-memory transport; `mcpOAuthGuard` calls it once, at start-up, to log how its policy covers them.
 *
 * Stateless only, as the SDK 2.x entry is: GET and DELETE (2025 session operations) get 405 from the guard.
 * For 2025 sessions, use the SDK 1.x adapter (`sdkStreamableHttpHandler` in `mcp-oauth-guard/sdk`).
 *
 * @example
 * import { McpServer } from '@modelcontextprotocol/server';
 * import { sdk2McpHandler } from 'mcp-oauth-guard/sdk2';
 * const handler = sdk2McpHandler({ createServer: () => buildServer() });
 * app.use(mcpOAuthGuard({ ...loadOptionsFromEnv(), handler }));
 * @throws ConfigurationError when `createServer` is missing.
 */
export function sdk2McpHandler(options: Sdk2McpHandlerOptions): Sdk2McpHandler {
  if (typeof options?.createServer !== 'function') {
    throw new ConfigurationError('options.createServer', 'is required: a function returning a new McpServer from @modelcontextprotocol/server');
  }
  const { createServer, ...handlerOptions } = options;
  const mcp = createMcpHandler(createServer, handlerOptions);
  // One guard has one resource, so the metadata URL is computed once, not per request.
  let knownResource: string | undefined;
  let knownMetadataUrl: string | undefined;

  function sdkAuthInfo(auth: AuthInfo): SdkAuthInfo {
    if (!auth.resource) return auth;
    const href = auth.resource.href;
    if (href !== knownResource) {
      knownResource = href;
      knownMetadataUrl = protectedResourceMetadataUrls(href).url;
    }
    // A copy: the guard's AuthInfo may be cached and shared between requests.
    return { ...auth, resourceMetadataUrl: knownMetadataUrl };
  }

  const http = fetchHandler(
    (request, { auth, parsedBody }) => mcp.fetch(request, { authInfo: sdkAuthInfo(auth), ...(parsedBody !== undefined && { parsedBody }) }),
    // The guard answers these 405 itself, before authenticating, as the SDK's stateless entry would after.
    { supportsGet: false, supportsDelete: false },
  );
  return {
    ...http,
    notify: mcp.notify,
    bus: mcp.bus,
    close: () => mcp.close(),
    listCatalog: () => listSdk2Server(createServer),
  };
}

/**
 * Lists what a server from `createServer` registered: built as for a 2025 connection (`era: 'legacy'`, no caller),
 * and listed over an in-memory transport (see `list-sdk-server.ts`).
 */
async function listSdk2Server(createServer: McpServerFactory): Promise<ListedServerCatalog> {
  return listSdkServerOver(await createServer({ era: 'legacy' }), InMemoryTransport.createLinkedPair());
}
