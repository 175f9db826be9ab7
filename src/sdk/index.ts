/**
 * Entry point `mcp-oauth-guard/sdk`: the adapter for the official MCP TypeScript SDK (an optional peer
 * dependency, so it is not re-exported from the main entry point). Re-exports only.
 *
 * @module mcp-oauth-guard/sdk
 */
export {
  sdkStreamableHttpHandler,
  type SdkServerLike,
  type SdkStreamableHttpHandler,
  type SdkStreamableHttpHandlerOptions,
  type SdkTransportOptions,
  type SessionRefusalReason,
  type SessionRefusedEvent,
} from './sdk-streamable-http-handler.js';
