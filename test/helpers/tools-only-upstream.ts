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
  close(): void;
}

/**
 * A tools-only MCP server on 127.0.0.1 without sessions, wanting any Bearer token: it answers `initialize` with
 * {@link TOOLS_ONLY_PROFILE} as an event stream, `tools/list` with one tool, anything else with an empty result.
 */
export async function startToolsOnlyUpstream(): Promise<ToolsOnlyUpstream> {
  let initialized = 0;
  const server = createServer((req, res) => {
    void readJsonBody(req).then((message) => {
      if (!req.headers.authorization?.startsWith('Bearer ')) return res.writeHead(401, { 'www-authenticate': 'Bearer' }).end();
      if (message?.id === undefined) return res.writeHead(202).end();
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
  return { url: `${origin}/mcp`, initialized: () => initialized, close: () => closeServer(server) };
}
