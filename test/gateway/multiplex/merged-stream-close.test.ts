// A client's GET stream through a server set merges each server's GET stream; when the client leaves, every
// server's stream ends at the server too (it was left open for as long as the server kept it alive).
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { startAuthorizationServer, type AuthorizationServer } from '../../../examples/dev/authorization-server.js';
import { loadGatewayConfig } from '../../../src/gateway/config/gateway-config.js';
import type { ServerConfig } from '../../../src/gateway/config/server-config.js';
import { startGateway, type RunningGateway } from '../../../src/gateway/server/start-gateway.js';
import { postMcp } from '../../helpers/http-client.js';

const PROTOCOL_VERSION = '2025-11-25';

/** A raw MCP server with sessions whose GET stream stays open (a comment every 100 ms): it counts streams opened and ended. */
async function streamingServer(): Promise<{ url: string; server: Server; opened: number; ended: number }> {
  const state = { opened: 0, ended: 0 };
  const server = createServer((req, res) => {
    if (req.method === 'GET') {
      state.opened++;
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(': open\n\n');
      const ping = setInterval(() => res.write(': ping\n\n'), 100);
      res.on('close', () => {
        clearInterval(ping);
        state.ended++;
      });
      return;
    }
    if (req.method === 'DELETE') return void res.writeHead(200).end();
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      const message = JSON.parse(body) as { id?: number; method: string };
      if (message.id === undefined) return void res.writeHead(202).end();
      const result = message.method === 'initialize' ? { protocolVersion: PROTOCOL_VERSION, capabilities: { tools: {} }, serverInfo: { name: 'streamer', version: '1' } } : { tools: [] };
      const text = JSON.stringify({ jsonrpc: '2.0', id: message.id, result });
      res.writeHead(200, { 'content-type': 'application/json', 'mcp-session-id': 'up-session' }).end(text);
    });
  }).listen(0, '127.0.0.1');
  await once(server, 'listening');
  return Object.assign(state, { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`, server });
}

let as: AuthorizationServer;
const servers: Server[] = [];
let gateway: RunningGateway | undefined;
before(async () => {
  as = await startAuthorizationServer({ extraScopes: ['mcp'] });
});
after(async () => {
  await gateway?.shutdown();
  for (const server of servers) server.close();
  await as?.close();
});

describe("a client's merged GET stream", () => {
  it("ends every server's stream at the server when the client leaves", async () => {
    const one = await streamingServer();
    const two = await streamingServer();
    servers.push(one.server, two.server);
    const config = loadGatewayConfig({ MCP_AUTH_ISSUER: as.issuer, HOST: '127.0.0.1', PORT: '0' }, { upstreamRequired: false });
    const list: ServerConfig[] = [one, two].map((s, i) => ({ name: `s${i + 1}`, transport: 'http', proxy: { upstream: s.url }, required: false }));
    gateway = await startGateway({ ...config, servers: list }, { log: () => {}, warn: () => {} });
    as.addResource(gateway.resource, { scopes: ['mcp'] });
    const token = await as.issueAccessToken({ resource: gateway.resource, scope: 'mcp', sub: 'alice' });
    const init = await postMcp(`${gateway.url}/mcp`, { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: PROTOCOL_VERSION, capabilities: {}, clientInfo: { name: 't', version: '1' } } }, token);
    const sessionId = String(init.headers['mcp-session-id']);
    const headers = { authorization: `Bearer ${token}`, accept: 'text/event-stream', 'mcp-session-id': sessionId, 'mcp-protocol-version': PROTOCOL_VERSION };
    // Each server's session is opened on first use: a list uses both.
    await postMcp(`${gateway.url}/mcp`, { jsonrpc: '2.0', id: 2, method: 'tools/list' }, token, { 'mcp-session-id': sessionId, 'mcp-protocol-version': PROTOCOL_VERSION });
    const leaving = new AbortController();
    const stream = await fetch(`${gateway.url}/mcp`, { headers, signal: leaving.signal });
    assert.equal(stream.status, 200);
    const deadline = Date.now() + 2_000;
    while (one.opened + two.opened < 2 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
    assert.deepEqual([one.opened, two.opened], [1, 1], 'each server was asked for its stream');
    leaving.abort();
    const closing = Date.now() + 2_000;
    while (one.ended + two.ended < 2 && Date.now() < closing) await new Promise((resolve) => setTimeout(resolve, 20));
    assert.deepEqual([one.ended, two.ended], [1, 1], "each server's stream ended when the client left");
  });
});
