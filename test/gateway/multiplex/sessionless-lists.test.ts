// A 2025-11-25 list without Mcp-Session-Id: a server that needs a session answers 400, so it is left out with reason
// `upstream_session` and a warning that says why (not "until it answers again"); in a session it is listed. Real
// parts: an authorization server, the stdio fixture server (a child process the gateway starts), and raw HTTP
// servers on loopback, one of which keeps sessions as server-everything does.
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { describe, it } from 'node:test';
import { loadGatewayConfig } from '../../../src/gateway/config/gateway-config.js';
import type { ServerConfig } from '../../../src/gateway/config/server-config.js';
import { startGateway, type RunningGateway } from '../../../src/gateway/server/start-gateway.js';
import { messages, postMcp, send } from '../../helpers/http-client.js';
import { listenOnLoopback } from '../../helpers/loopback-server.js';
import { NODE_SERVER, PROTOCOL_VERSION } from '../../helpers/stdio-gateway.js';
import { multiplexParts } from '../../helpers/multiplex-parts.js';

const UNAVAILABLE = 'io.github.mcp-oauth-guard/unavailable';

/** A raw HTTP MCP server listing `tool`; with `sessions`, a request without a session other than `initialize` gets 400. */
async function rawServer(tool: string, sessions: boolean): Promise<{ url: string; server: Server }> {
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      if (req.method !== 'POST') return void res.writeHead(req.method === 'DELETE' ? 200 : 405).end();
      const message = JSON.parse(body) as { id?: number | string; method: string };
      if (sessions && message.method !== 'initialize' && req.headers['mcp-session-id'] === undefined) {
        return void res.writeHead(400, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32000, message: 'Bad Request: No valid session ID provided' } }));
      }
      if (message.id === undefined) return void res.writeHead(202).end();
      const results: Record<string, unknown> = {
        initialize: { protocolVersion: PROTOCOL_VERSION, capabilities: { tools: {} }, serverInfo: { name: tool, version: '1' } },
        'tools/list': { tools: [{ name: tool, inputSchema: { type: 'object' } }] },
      };
      const headers = { 'content-type': 'application/json', ...(sessions && message.method === 'initialize' ? { 'mcp-session-id': `${tool}-1` } : {}) };
      res.writeHead(200, headers).end(JSON.stringify({ jsonrpc: '2.0', id: message.id, result: results[message.method] ?? {} }));
    });
  });
  return { url: `${await listenOnLoopback(server)}/mcp`, server };
}

let gateway: RunningGateway;
const warnings: string[] = [];

const parts = multiplexParts(async ({ servers, gateways }) => {
  const plain = await rawServer('free', false);
  const kept = await rawServer('kept', true);
  servers.push(plain.server, kept.server);
  const config = loadGatewayConfig({ MCP_AUTH_ISSUER: parts.as.issuer, HOST: '127.0.0.1', PORT: '0', MCP_AUTH_METRICS_PORT: '0' }, { upstreamRequired: false });
  const list: ServerConfig[] = [
    { name: 'plain', transport: 'http', proxy: { upstream: plain.url }, required: false },
    { name: 'kept', transport: 'http', proxy: { upstream: kept.url }, required: false },
    { name: 'raw', transport: 'stdio', stdio: { command: process.execPath, args: [NODE_SERVER] }, required: false },
  ];
  gateway = await startGateway({ ...config, servers: list, listTimeoutMs: 5_000 }, { log: () => {}, warn: (line) => warnings.push(line) });
  gateways.push(gateway);
  parts.as.addResource(gateway.resource, { scopes: ['mcp'] });
});

describe('a sessionless 2025-11-25 list and servers that need a session', { timeout: 60_000 }, () => {
  it('lists only the servers that serve sessionless requests, and names the others unavailable', async () => {
    const token = await parts.as.issueAccessToken({ resource: gateway.resource, scope: 'mcp', sub: 'alice' });
    const answer = await postMcp(`${gateway.url}/mcp`, { jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} }, token, { 'mcp-protocol-version': PROTOCOL_VERSION });
    assert.equal(answer.status, 200, answer.text);
    assert.deepEqual(answer.json.result.tools.map((t: { name: string }) => t.name), ['plain__free']);
    assert.deepEqual(answer.json.result._meta[UNAVAILABLE], ['kept', 'raw']);
  });

  it('warns that the server needs a session and the client sent none, with reason upstream_session, and counts it so', async () => {
    const left = warnings.map((line) => JSON.parse(line) as { msg?: string; message?: string; server?: string; reason?: string }).filter((w) => w.server === 'kept' || w.server === 'raw');
    assert.deepEqual(left.map((w) => [w.server, w.reason]).sort(), [['kept', 'upstream_session'], ['raw', 'upstream_session']], warnings.join('\n'));
    for (const line of warnings.filter((l) => /"server":"(kept|raw)"/.test(l))) {
      assert.match(line, /needs a session, and the client sent none/);
      assert.doesNotMatch(line, /until it answers again/);
    }
    const scrape = await send(gateway.metricsUrl!, { method: 'GET' });
    const failures = scrape.text.split('\n').filter((l) => l.startsWith('mcp_guard_upstream_list_failures_total{'));
    assert.ok(failures.some((l) => /server="raw"/.test(l) && /reason="upstream_session"/.test(l)), failures.join('\n'));
    assert.ok(!failures.some((l) => /reason="upstream_refused"/.test(l)), failures.join('\n'));
  });

  it('lists every server in a session', async () => {
    const token = await parts.as.issueAccessToken({ resource: gateway.resource, scope: 'mcp', sub: 'alice' });
    const init = await postMcp(`${gateway.url}/mcp`, { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: PROTOCOL_VERSION, capabilities: {}, clientInfo: { name: 't', version: '1' } } }, token);
    assert.equal(init.status, 200, init.text);
    const headers = { 'mcp-session-id': String(init.headers['mcp-session-id']), 'mcp-protocol-version': PROTOCOL_VERSION };
    const answer = await postMcp(`${gateway.url}/mcp`, { jsonrpc: '2.0', id: 2, method: 'tools/list' }, token, headers);
    assert.equal(answer.status, 200, answer.text);
    const result = messages(answer).find((m) => m.id === 2).result;
    const names: string[] = result.tools.map((t: { name: string }) => t.name);
    assert.ok(names.includes('plain__free') && names.includes('kept__kept') && names.includes('raw__add'), names.join());
    assert.equal(result._meta?.[UNAVAILABLE], undefined);
  });
});
