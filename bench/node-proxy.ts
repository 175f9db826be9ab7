/**
 * The floor for any Node gateway, in its own process: a minimal `node:http` proxy with no authentication.
 * It reads and parses the JSON body (as any gateway that looks at the message must), forwards the message
 * re-serialised on a keep-alive agent, and pipes the upstream's answer back with its status and end-to-end
 * headers. No policy, no filtering, no log, no timeouts.
 *
 * Usage: `node --import tsx bench/node-proxy.ts <upstream URL>`. Reports `ready` with its endpoint URL over
 * IPC, answers `stats`, exits on `stop` (see `hop-scenario.ts`).
 */
import { Agent, createServer, request, type IncomingHttpHeaders, type OutgoingHttpHeaders } from 'node:http';
import { listenHop } from './hop-scenario.js';

const upstream = new URL(process.argv[2] ?? '');
const agent = new Agent({ keepAlive: true });
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'transfer-encoding', 'upgrade', 'proxy-connection', 'te', 'trailer']);

function endToEnd(headers: IncomingHttpHeaders): OutgoingHttpHeaders {
  const out: OutgoingHttpHeaders = {};
  for (const name in headers) if (!HOP_BY_HOP.has(name)) out[name] = headers[name];
  return out;
}

const server = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  req.on('end', () => {
    let body: Buffer;
    try {
      body = Buffer.from(JSON.stringify(JSON.parse(Buffer.concat(chunks).toString('utf8'))));
    } catch {
      res.writeHead(400, { 'content-length': '0' }).end();
      return;
    }
    const headers: OutgoingHttpHeaders = { 'content-type': 'application/json', 'content-length': body.length };
    for (const name of ['accept', 'mcp-protocol-version', 'mcp-session-id'] as const) {
      const value = req.headers[name];
      if (value !== undefined) headers[name] = value;
    }
    const outgoing = request({ hostname: upstream.hostname, port: upstream.port, path: upstream.pathname, method: 'POST', headers, agent }, (incoming) => {
      res.writeHead(incoming.statusCode ?? 502, endToEnd(incoming.headers));
      incoming.pipe(res);
    });
    outgoing.on('error', () => {
      if (!res.headersSent) res.writeHead(502, { 'content-length': '0' }).end();
      else res.destroy();
    });
    outgoing.end(body);
  });
});
listenHop(server, () => agent.destroy());
