import { createServer } from 'node:http';
import { closeServer, listenOnLoopback } from './loopback-server.js';
import { readJsonBody } from './read-json-body.js';

/** What {@link startToolsOnlyUpstream} answers `initialize` with. */
export const TOOLS_ONLY_PROFILE = { protocolVersion: '2025-11-25', capabilities: { tools: { listChanged: false } }, instructions: 'Echoes what it is given.' } as const;

/** A running {@link startToolsOnlyUpstream}. */
export interface ToolsOnlyUpstream {
  readonly url: string;
  /** How many `initialize` requests it answered. */
  initialized(): number;
  /** How many requests of `method` it answered. */
  answered(method: string): number;
  close(): void;
}

/** Options of {@link startToolsOnlyUpstream}. */
export interface ToolsOnlyUpstreamOptions {
  /** The tools `tools/list` answers, as an event stream. Default one tool, `echo`, as JSON. */
  readonly tools?: readonly object[];
}

/**
 * A tools-only MCP server on 127.0.0.1 without sessions, wanting any Bearer token: it answers `initialize` with
 * {@link TOOLS_ONLY_PROFILE} as an event stream, `tools/list` with one tool (or `options.tools`), anything else with
 * an empty result.
 */
export async function startToolsOnlyUpstream(options: ToolsOnlyUpstreamOptions = {}): Promise<ToolsOnlyUpstream> {
  let initialized = 0;
  const answered = new Map<string, number>();
  const server = createServer((req, res) => {
    void readJsonBody(req).then((message) => {
      if (!req.headers.authorization?.startsWith('Bearer ')) return res.writeHead(401, { 'www-authenticate': 'Bearer' }).end();
      if (message?.id === undefined) return res.writeHead(202).end();
      answered.set(String(message.method), (answered.get(String(message.method)) ?? 0) + 1);
      if (message.method === 'tools/list' && options.tools) {
        const result = { tools: options.tools };
        res.writeHead(200, { 'content-type': 'text/event-stream' }).end(`event: message\ndata: ${JSON.stringify({ jsonrpc: '2.0', id: message.id, result })}\n\n`);
        return;
      }
      if (message.method === 'initialize') {
        initialized++;
        const result = { ...TOOLS_ONLY_PROFILE, serverInfo: { name: 'tools-only', version: '1.0.0' } };
        res.writeHead(200, { 'content-type': 'text/event-stream' }).end(`event: message\ndata: ${JSON.stringify({ jsonrpc: '2.0', id: message.id, result })}\n\n`);
        return;
      }
      const result = message.method === 'tools/list' ? { tools: [{ name: 'echo', inputSchema: { type: 'object' } }] } : {};
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: message.id, result }));
    });
  });
  const origin = await listenOnLoopback(server);
  return { url: `${origin}/mcp`, initialized: () => initialized, answered: (method) => answered.get(method) ?? 0, close: () => closeServer(server) };
}
