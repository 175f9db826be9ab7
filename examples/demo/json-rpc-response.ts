/**
 * Reading an MCP server's answer to a POST: Streamable HTTP answers with `application/json` or with a
 * `text/event-stream` whose `data:` lines carry the JSON-RPC messages.
 *
 * @module
 */

/** Parses a JSON-RPC answer sent as `application/json` or as a `text/event-stream`. */
export async function readJsonRpcMessages(response: Response): Promise<unknown[]> {
  const type = response.headers.get('content-type') ?? '';
  const text = await response.text();
  if (!text.trim()) return [];
  if (type.includes('text/event-stream')) {
    const messages: unknown[] = [];
    for (const event of text.split(/\r?\n\r?\n/)) {
      const data = event
        .split(/\r?\n/)
        .filter((line) => line.startsWith('data:'))
        .map((line) => line.slice(5).replace(/^ /, ''))
        .join('\n');
      if (data) messages.push(JSON.parse(data));
    }
    return messages;
  }
  const parsed: unknown = JSON.parse(text);
  return Array.isArray(parsed) ? parsed : [parsed];
}
