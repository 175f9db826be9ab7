/**
 * The whole demo client flow in one call: connect (authorizing on the way), list the tools, optionally call
 * one, forget the tokens.
 *
 * @module
 */
import { McpOAuthClient, type McpOAuthClientOptions, type McpTool } from './mcp-oauth-client.js';

/** Options of {@link runPkceClientFlow}. */
export interface PkceClientFlowOptions extends McpOAuthClientOptions {
  /** A tool to call after listing, with its arguments. */
  call?: { name: string; arguments?: Record<string, unknown> };
}

/** Result of {@link runPkceClientFlow}. */
export interface PkceClientFlowResult {
  tools: McpTool[];
  callResult?: unknown;
  grantedScope?: string;
  accessTokenClaims?: Record<string, unknown>;
}

/** Connects, lists tools and optionally calls one: the whole demo flow in one call. */
export async function runPkceClientFlow(options: PkceClientFlowOptions): Promise<PkceClientFlowResult> {
  const client = new McpOAuthClient(options);
  try {
    await client.connect();
    const tools = await client.listTools();
    const callResult = options.call ? await client.callTool(options.call.name, options.call.arguments ?? {}) : undefined;
    return { tools, callResult, grantedScope: client.grantedScope, accessTokenClaims: client.accessTokenClaims };
  } finally {
    await client.close();
  }
}
