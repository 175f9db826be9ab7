import { createServer, type Server } from 'node:http';

/** A request the upstream received, as parsed. */
export interface ReceivedMessage {
  readonly id?: unknown;
  readonly method?: string;
}

/**
 * An MCP upstream over plain HTTP whose answers a test writes: `stream(message)` returns the event-stream body
 * (complete events) for a request it answers so, or undefined to answer as a plain server (`initialize` with tool
 * capabilities, `{}` to anything else, 202 to a notification). Start it with `listenOnLoopback`.
 *
 * @example
 * const upstream = eventStreamUpstream((m) => (m.method === 'tools/list' ? `data: ${JSON.stringify({ jsonrpc: '2.0', id: m.id, result: { tools: [] } })}\n\n` : undefined));
 */
export function eventStreamUpstream(stream: (message: ReceivedMessage) => string | undefined, protocolVersion = '2025-11-25'): Server {
  return createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const message = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as ReceivedMessage;
      if (message.id === undefined) return void res.writeHead(202).end();
      const body = stream(message);
      if (body !== undefined) return void res.writeHead(200, { 'content-type': 'text/event-stream' }).end(body);
      const result = message.method === 'initialize' ? { protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 'stream', version: '1' } } : {};
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: message.id, result }));
    });
  });
}
