// The gateway's listing of a Streamable HTTP upstream reads event-stream answers with the project's one SSE
// parser: an upstream that writes its answer in tiny pieces, the blank line that ends the event split between two
// writes, and then keeps the stream open, is still read (at the end of the event, not at the end of the stream).
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, test } from 'node:test';
import { listHttpUpstream } from '../../../src/gateway/upstream/upstream-catalog.js';
import { closeServer, listenOnLoopback } from '../../helpers/loopback-server.js';

let server: Server;
let upstream: string;
/** How the upstream ends each event: the line ends of its last data line and of the blank line, written apart. */
let lineEnd = '\n';
const methods: string[] = [];

/** Writes one SSE event byte group by byte group, a pause between writes, and leaves the stream open. */
async function writeInPieces(res: ServerResponse, message: unknown): Promise<void> {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'mcp-session-id': 'listing-session' });
  res.flushHeaders();
  const text = `event: message${lineEnd}data: ${JSON.stringify(message)}`;
  for (let i = 0; i < text.length; i += 16) {
    res.write(text.slice(i, i + 16));
    await sleep(2);
  }
  // The blank line that ends the event, split: one line end, a pause, the other.
  res.write(lineEnd);
  await sleep(20);
  res.write(lineEnd);
  // The stream stays open, as a server may keep it for further messages.
}

async function serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
  if (req.method === 'DELETE') {
    res.writeHead(200).end();
    return;
  }
  let body = '';
  for await (const chunk of req) body += chunk;
  const message = JSON.parse(body) as { id?: number; method: string };
  methods.push(message.method);
  if (message.id === undefined) {
    res.writeHead(202).end();
    return;
  }
  const result =
    message.method === 'initialize'
      ? { protocolVersion: '2025-11-25', capabilities: { tools: {} }, serverInfo: { name: 'slow-writer', version: '1' } }
      : { tools: [{ name: 'echo', inputSchema: { type: 'object' } }, { name: 'add', inputSchema: { type: 'object' } }] };
  await writeInPieces(res, { jsonrpc: '2.0', id: message.id, result });
}

before(async () => {
  server = createServer((req, res) => void serve(req, res));
  upstream = `${await listenOnLoopback(server)}/mcp`;
});
after(() => {
  if (server) closeServer(server);
});

describe('listHttpUpstream over event streams', () => {
  for (const end of ['\n', '\r\n', '\r']) {
    test(`an event written in tiny pieces, its blank line (${JSON.stringify(end)}) split between writes, on a stream left open`, async () => {
      lineEnd = end;
      methods.length = 0;
      const catalog = await listHttpUpstream({ upstream }, { requestTimeoutMs: 10_000 });
      assert.deepEqual(catalog.tools, ['echo', 'add']);
      assert.deepEqual(catalog.prompts, []);
      assert.deepEqual(catalog.truncated, []);
      assert.deepEqual(methods, ['initialize', 'notifications/initialized', 'tools/list']);
    });
  }
});
