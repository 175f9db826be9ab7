/**
 * The one writer of event-stream frames (WHATWG HTML §9.2, as MCP Streamable HTTP uses them); `event-stream.ts`
 * reads and rewrites them.
 */

/**
 * One `message` event carrying `data`, a serialised JSON-RPC message: one `data` line, since JSON has no raw line
 * breaks (data relayed as it came, which may have them, gets one `data` line per line of it). With `id`, the event names the cursor a client gives back as `Last-Event-ID` to resume the stream (MCP
 * Streamable HTTP, "Resumability and Redelivery"); with `id` and empty `data`, it is a priming event (an id and an
 * empty data field, MCP 2025-11-25), which gives the client a cursor before any message and carries no `event`
 * line.
 *
 * @example
 * messageEventFrame('{"jsonrpc":"2.0","id":1,"result":{}}'); // 'event: message\ndata: {"jsonrpc":"2.0","id":1,"result":{}}\n\n'
 * messageEventFrame('', '7'); // 'id: 7\ndata: \n\n'
 */
export function messageEventFrame(data: string, id?: string): string {
  // A line break inside one data line would end the field there: the rest would reach a client as a field of its own.
  if (data.includes('\n') || data.includes('\r')) data = data.replace(/\r\n?|\n/g, '\ndata: ');
  if (id === undefined) return `event: message\ndata: ${data}\n\n`;
  return data === '' ? `id: ${id}\ndata: \n\n` : `id: ${id}\nevent: message\ndata: ${data}\n\n`;
}
