/**
 * Reading an MCP server's answer to a POST: Streamable HTTP answers with `application/json` or with a
 * `text/event-stream` whose `data:` lines carry the JSON-RPC messages.
 *
 * @module
 */
import { eventStreamData } from 'mcp-oauth-guard/core';

/** Parses a JSON-RPC answer sent as `application/json` or as a `text/event-stream`. */
export async function readJsonRpcMessages(response: Response): Promise<unknown[]> {
  const type = response.headers.get('content-type') ?? '';
  const text = await response.text();
  if (!text.trim()) return [];
  if (type.includes('text/event-stream')) {
    return eventStreamData(text).map((data) => JSON.parse(data) as unknown);
  }
  const parsed: unknown = JSON.parse(text);
  return Array.isArray(parsed) ? parsed : [parsed];
}
