/**
 * Example: an MCP server that knows nothing about OAuth, to run behind the mcp-oauth-guard gateway.
 *
 * Plain `node:http`, no SDK: stateless Streamable HTTP (one JSON-RPC message per POST, answered with
 * `application/json`; GET and DELETE get 405). It trusts whoever can reach it, so bind it to loopback and
 * let only the gateway call it. With `--identity-headers on` the gateway tells it who called
 * (`X-MCP-Subject`, `X-MCP-Client-Id`, `X-MCP-Scopes`, from the verified token; never the token itself).
 *
 * Tools (scopes in `policy.json`): `whoami`, `counter_get`, `counter_increment`.
 *
 * Run: `npx tsx examples/gateway/upstream-server.ts` (env HOST, default 127.0.0.1; PORT, default 3001),
 * then the gateway in front of it: see README.md in this folder.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pathToFileURL } from 'node:url';
import { decodeMirroredHeaderValue } from 'mcp-oauth-guard/core';

/**
 * An identity header as the gateway sent it: plain visible ASCII as it is, anything else as `=?base64?…?=`
 * (UTF-8), which this decodes. Key your users by issuer and subject together.
 */
function identity(req: IncomingMessage, name: string): string {
  const value = req.headers[name];
  if (typeof value !== 'string') return '(not sent)';
  return decodeMirroredHeaderValue(value) ?? '(malformed)';
}

const SUPPORTED_VERSIONS = ['2025-11-25', '2025-06-18', '2025-03-26'];
const MAX_BODY_BYTES = 1_048_576;

const tools = [
  { name: 'whoami', description: 'Who the gateway says is calling.', inputSchema: { type: 'object', properties: {} } },
  { name: 'counter_get', description: 'Read the counter.', inputSchema: { type: 'object', properties: {} } },
  { name: 'counter_increment', description: 'Add one to the counter.', inputSchema: { type: 'object', properties: {} } },
];

type JsonRpcRequest = { jsonrpc: '2.0'; id?: string | number; method?: string; params?: Record<string, unknown> };

/** Creates the upstream's request listener; `counter` is its only state. */
export function createUpstreamHandler(): (req: IncomingMessage, res: ServerResponse) => void {
  let counter = 0;
  const text = (value: string) => ({ content: [{ type: 'text', text: value }] });

  const answer = (message: JsonRpcRequest, req: IncomingMessage): unknown => {
    switch (message.method) {
      case 'initialize': {
        const asked = String(message.params?.protocolVersion ?? '');
        return {
          protocolVersion: SUPPORTED_VERSIONS.includes(asked) ? asked : SUPPORTED_VERSIONS[0],
          capabilities: { tools: {} },
          serverInfo: { name: 'gateway-example-upstream', version: '1.0.0' },
        };
      }
      case 'ping':
        return {};
      case 'tools/list':
        return { tools };
      case 'tools/call':
        switch (message.params?.name) {
          case 'whoami':
            return text(`subject ${identity(req, 'x-mcp-subject')}, client ${identity(req, 'x-mcp-client-id')}, scopes ${identity(req, 'x-mcp-scopes')}, issuer ${identity(req, 'x-mcp-issuer')}`);
          case 'counter_get':
            return text(`counter: ${counter}`);
          case 'counter_increment':
            return text(`counter: ${++counter}`);
          default:
            return { ...text(`unknown tool ${String(message.params?.name)}`), isError: true };
        }
      default:
        return undefined;
    }
  };

  return (req, res) => {
    if (new URL(req.url ?? '/', 'http://upstream').pathname !== '/mcp') return void res.writeHead(404).end();
    if (req.method !== 'POST') return void res.writeHead(405, { Allow: 'POST' }).end();
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      if (res.headersSent) return;
      size += chunk.length;
      chunks.push(chunk);
      // The gateway already refuses larger bodies (MCP_AUTH_MAX_BODY_BYTES); this is for anyone else.
      if (size > MAX_BODY_BYTES) res.writeHead(413, { Connection: 'close' }).end(() => req.destroy());
    });
    req.on('end', () => {
      if (res.headersSent) return;
      let message: JsonRpcRequest;
      try {
        message = JSON.parse(Buffer.concat(chunks).toString('utf8')) as JsonRpcRequest;
      } catch {
        return void res.writeHead(400).end();
      }
      // Notifications and the client's responses get 202 and no body.
      if (message.id === undefined || message.method === undefined) return void res.writeHead(202).end();
      const result = answer(message, req);
      const body =
        result === undefined
          ? { jsonrpc: '2.0', id: message.id, error: { code: -32601, message: `Method not found: ${message.method}` } }
          : { jsonrpc: '2.0', id: message.id, result };
      res.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify(body));
    });
  };
}

/** Starts the upstream on `host:port` (port 0: any free port) and resolves with its MCP URL. */
export async function startUpstreamServer(host = '127.0.0.1', port = 3001): Promise<{ url: string; server: Server }> {
  const server = createServer(createUpstreamHandler());
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, resolve);
  });
  const bound = (server.address() as AddressInfo).port;
  return { url: `http://${host.includes(':') ? `[${host}]` : host}:${bound}/mcp`, server };
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const { url } = await startUpstreamServer(process.env.HOST?.trim() || '127.0.0.1', Number(process.env.PORT?.trim() || '3001'));
  console.log(`upstream MCP server (no authentication, for the gateway only): ${url}`);
}
