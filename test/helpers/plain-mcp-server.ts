// A plain MCP server over Streamable HTTP with no authorization and no sessions: one tool, `echo`, answered as JSON,
// and resources when asked for. For a server set that needs an upstream of no interest beyond being there and
// answering.
import { createServer } from 'node:http';
import { closeServer, listenOnLoopback } from './loopback-server.js';

/** A running plain server. */
export interface PlainMcpServer {
  /** Its MCP endpoint, `http://127.0.0.1:<port>/mcp`. */
  readonly url: string;
  /** How many `tools/call` requests it answered. */
  readonly calls: () => number;
  close(): void;
}

const VERSIONS = ['2025-11-25', '2025-06-18', '2025-03-26'];
const TOOLS = [{ name: 'echo', description: 'Echoes its text.', inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] } }];

/** The result of `method` with `params`, or undefined for a method it does not know. */
function resultOf(method: string, params: Record<string, any>, count: () => void, tools: () => readonly object[], resources: readonly string[] | undefined): object | undefined {
  if (method === 'initialize') {
    const version = VERSIONS.includes(params.protocolVersion) ? params.protocolVersion : VERSIONS[0];
    return { protocolVersion: version, capabilities: { tools: {}, ...(resources ? { resources: {} } : {}) }, serverInfo: { name: 'plain', version: '1.0.0' } };
  }
  if (resources && method === 'resources/list') return { resources: resources.map((uri) => ({ uri, name: uri })) };
  if (resources && method === 'resources/read' && resources.includes(params.uri)) return { contents: [{ uri: params.uri, text: `contents of ${params.uri}` }] };
  if (method === 'ping') return {};
  if (method === 'tools/list') return { tools: tools() };
  if (method === 'tools/call') {
    count();
    return { content: [{ type: 'text', text: `echo: ${String(params.arguments?.text)}` }] };
  }
  return undefined;
}

/** Options of {@link startPlainMcpServer}. */
export interface PlainMcpServerOptions {
  /** The tools it lists, asked on each `tools/list` (a test changes them between sessions). Default: `echo`. */
  readonly tools?: () => readonly object[];
  /** The URIs of the resources it lists and reads. Default: none (no resources capability). */
  readonly resources?: readonly string[];
  /** How long each `tools/list` answer waits, in milliseconds, asked on each list (a slow listing). Default 0. */
  readonly listDelayMs?: () => number;
  /**
   * Asked on each `tools/list`: a promise the answer waits for (a listing held until a test lets it go), `'fail'` to
   * answer HTTP 500 at once (a listing that fails), or undefined to answer as usual. Default: undefined.
   */
  readonly listGate?: () => Promise<void> | 'fail' | undefined;
}

/** Starts the plain server on 127.0.0.1 with a free port. */
export async function startPlainMcpServer(options: PlainMcpServerOptions = {}): Promise<PlainMcpServer> {
  const tools = options.tools ?? (() => TOOLS);
  let calls = 0;
  const server = createServer((req, res) => {
    if (req.method !== 'POST') {
      res.writeHead(405, { allow: 'POST' }).end();
      return;
    }
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      let message: { id?: unknown; method?: string; params?: Record<string, unknown> };
      try {
        message = JSON.parse(Buffer.concat(chunks).toString('utf8')) as typeof message;
      } catch {
        res.writeHead(400).end();
        return;
      }
      if (message.id === undefined || typeof message.method !== 'string') {
        res.writeHead(202).end();
        return;
      }
      const result = resultOf(message.method, message.params ?? {}, () => void calls++, tools, options.resources);
      const answer = result ? { jsonrpc: '2.0', id: message.id, result } : { jsonrpc: '2.0', id: message.id, error: { code: -32601, message: 'Method not found' } };
      const delayMs = message.method === 'tools/list' ? (options.listDelayMs?.() ?? 0) : 0;
      const gate = message.method === 'tools/list' ? options.listGate?.() : undefined;
      const write = (): void => void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(answer));
      if (gate === 'fail') res.writeHead(500, { 'content-type': 'text/plain' }).end('listing failed');
      else if (gate !== undefined) void gate.then(write);
      else if (delayMs > 0) setTimeout(write, delayMs);
      else write();
    });
  });
  const origin = await listenOnLoopback(server);
  return { url: `${origin}/mcp`, calls: () => calls, close: () => closeServer(server) };
}
