// What operators see of a gateway with several servers: /readyz names each server and is ready when every required
// one is; the upstream metrics carry a `server` label and a server left out of a merged list is counted and warned
// about; request lines, request spans and upstream spans name the server. Real parts: an authorization server, an
// HTTP upstream on loopback, the stdio fixture server (a child process the gateway starts), and an HTTP server on a
// closed port.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { context, SpanKind, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { startAuthorizationServer, type AuthorizationServer } from '../../../examples/dev/authorization-server.js';
import { loadGatewayConfig } from '../../../src/gateway/config/gateway-config.js';
import type { ServerConfig } from '../../../src/gateway/config/server-config.js';
import { startGateway, type RunningGateway } from '../../../src/gateway/server/start-gateway.js';
import { freePort } from '../../helpers/free-port.js';
import { messages, postMcp, send } from '../../helpers/http-client.js';
import { NODE_SERVER, PROTOCOL_VERSION } from '../../helpers/stdio-gateway.js';

/** An HTTP MCP upstream: `initialize` opens a session; `tools/list` lists `hello`; `tools/call` answers text. */
function startUpstream(): Promise<{ server: Server; url: string }> {
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.once('end', () => {
      if (req.method !== 'POST') {
        res.writeHead(req.method === 'DELETE' ? 200 : 405, { 'Content-Length': '0' }).end();
        return;
      }
      const message = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { id?: number | string; method: string };
      if (message.id === undefined) {
        res.writeHead(202, { 'Content-Length': '0' }).end();
        return;
      }
      const results: Record<string, unknown> = {
        initialize: { protocolVersion: PROTOCOL_VERSION, capabilities: { tools: {} }, serverInfo: { name: 'up', version: '1' } },
        'tools/list': { tools: [{ name: 'hello', inputSchema: { type: 'object' } }] },
        'tools/call': { content: [{ type: 'text', text: 'hello back' }] },
      };
      const body = JSON.stringify({ jsonrpc: '2.0', id: message.id, result: results[message.method] ?? {} });
      res.writeHead(200, { 'Content-Type': 'application/json', ...(message.method === 'initialize' ? { 'Mcp-Session-Id': 'up-session' } : {}) }).end(body);
    });
  });
  server.listen(0, '127.0.0.1');
  return once(server, 'listening').then(() => ({ server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp` }));
}

/** Samples of one metric family from the Prometheus text format. */
function samples(text: string, name: string): { labels: Record<string, string>; value: number }[] {
  const out: { labels: Record<string, string>; value: number }[] = [];
  for (const line of text.split('\n')) {
    const match = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match || match[1] !== name) continue;
    const labels: Record<string, string> = {};
    for (const pair of (match[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[pair[1]!] = pair[2]!;
    out.push({ labels, value: Number(match[3]) });
  }
  return out;
}

let as: AuthorizationServer;
let upstream: { server: Server; url: string };
let closedUrl: string;
const gateways: RunningGateway[] = [];
const exporter = new InMemorySpanExporter();

const servers = (downRequired: boolean): ServerConfig[] => [
  { name: 'up', transport: 'http', proxy: { upstream: upstream.url }, required: true },
  { name: 'raw', transport: 'stdio', stdio: { command: process.execPath, args: [NODE_SERVER] }, required: false },
  { name: 'down', transport: 'http', proxy: { upstream: closedUrl, connectTimeoutMs: 1_000 }, required: downRequired },
];

async function startSet(downRequired: boolean, lines: string[], warnings: string[]): Promise<RunningGateway> {
  const config = loadGatewayConfig({ MCP_AUTH_ISSUER: as.issuer, HOST: '127.0.0.1', PORT: '0', MCP_AUTH_METRICS_PORT: '0' }, { upstreamRequired: false });
  const gateway = await startGateway({ ...config, servers: servers(downRequired), listTimeoutMs: 2_000 }, { log: (line) => lines.push(line), warn: (line) => warnings.push(line), readinessCacheMs: 0 });
  gateways.push(gateway);
  as.addResource(gateway.resource, { scopes: ['mcp'] });
  return gateway;
}

async function readyz(gateway: RunningGateway): Promise<{ status: number; body: Record<string, any> }> {
  const answer = await fetch(`${gateway.url}/readyz`, { signal: AbortSignal.timeout(10_000) });
  return { status: answer.status, body: (await answer.json()) as Record<string, any> };
}

before(async () => {
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }));
  as = await startAuthorizationServer({ extraScopes: ['mcp'] });
  upstream = await startUpstream();
  closedUrl = `http://127.0.0.1:${await freePort()}/mcp`;
});
after(async () => {
  for (const gateway of gateways) await gateway.shutdown();
  upstream?.server.closeAllConnections();
  upstream?.server.close();
  await as?.close();
  trace.disable();
  context.disable();
});

describe('a gateway with several servers, one of them down', { timeout: 60_000 }, () => {
  const lines: string[] = [];
  const warnings: string[] = [];
  let gateway: RunningGateway;
  before(async () => {
    gateway = await startSet(false, lines, warnings);
  });

  it('/readyz names each server and is ready while the down server is not required', async () => {
    const ready = await readyz(gateway);
    assert.equal(ready.status, 200, JSON.stringify(ready.body));
    assert.equal(ready.body.status, 'ready');
    assert.deepEqual(ready.body.issuers, { ok: true });
    assert.deepEqual(ready.body.upstream, { ok: true }, 'ok: every required server is');
    assert.deepEqual(Object.keys(ready.body.servers), ['up', 'raw', 'down']);
    assert.deepEqual(ready.body.servers.up, { ok: true, required: true });
    assert.deepEqual(ready.body.servers.raw, { ok: true, required: false });
    assert.equal(ready.body.servers.down.ok, false);
    assert.equal(ready.body.servers.down.required, false);
    assert.match(ready.body.servers.down.reason, /cannot be reached \(ECONNREFUSED\)/);
  });

  it('labels upstream metrics by server, counts the server left out of a list, and names the server in request lines and spans', async () => {
    const bearer = await as.issueAccessToken({ resource: gateway.resource, scope: 'mcp', sub: 'alice' });
    const init = await postMcp(`${gateway.url}/mcp`, { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: PROTOCOL_VERSION, capabilities: {}, clientInfo: { name: 't', version: '1' } } }, bearer);
    assert.equal(init.status, 200, init.text);
    const headers = { 'mcp-session-id': String(init.headers['mcp-session-id']), 'mcp-protocol-version': PROTOCOL_VERSION };
    const list = await postMcp(`${gateway.url}/mcp`, { jsonrpc: '2.0', id: 2, method: 'tools/list' }, bearer, headers);
    assert.equal(list.status, 200, list.text);
    const names: string[] = messages(list).find((m) => m.id === 2).result.tools.map((t: { name: string }) => t.name);
    assert.ok(names.includes('up__hello') && names.includes('raw__add'), names.join());
    const call = await postMcp(`${gateway.url}/mcp`, { jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'up__hello', arguments: {} } }, bearer, headers);
    assert.equal(call.status, 200, call.text);
    const rawCall = await postMcp(`${gateway.url}/mcp`, { jsonrpc: '2.0', id: 4, method: 'tools/call', params: { name: 'raw__add', arguments: { a: 1, b: 2 } } }, bearer, headers);
    assert.equal(rawCall.status, 200, rawCall.text);
    await readyz(gateway);

    const scrape = await send(gateway.metricsUrl!, { method: 'GET' });
    assert.equal(scrape.status, 200);
    const failures = samples(scrape.text, 'mcp_guard_upstream_list_failures_total');
    const downFailure = failures.find((s) => s.labels.server === 'down' && s.labels.method === 'tools/list');
    assert.ok(downFailure && downFailure.value >= 1, scrape.text);
    // In a client's session, the server's own session could not be opened: it cannot be reached.
    assert.equal(downFailure.labels.reason, 'upstream_unreachable');
    assert.ok(!failures.some((s) => s.labels.server === 'up'), 'a server that answered is not counted');
    const durations = samples(scrape.text, 'mcp_guard_upstream_request_duration_seconds_count');
    const upCall = durations.find((s) => s.labels.server === 'up' && s.labels.method === 'tools/call');
    assert.ok(upCall && upCall.value >= 1, scrape.text);
    assert.deepEqual(Object.keys(upCall.labels).sort(), ['method', 'outcome', 'server']);
    assert.equal(upCall.labels.outcome, 'complete');
    const ready = samples(scrape.text, 'mcp_guard_upstream_ready');
    assert.deepEqual(Object.fromEntries(ready.map((s) => [s.labels.server, s.value])), { up: 1, raw: 1, down: 0 });

    assert.ok(warnings.some((line) => /left out of a merged list/.test(line) && /"server":"down"/.test(line)), warnings.join('\n'));

    const entries = lines.map((line) => JSON.parse(line) as Record<string, unknown>).filter((entry) => entry.path === '/mcp');
    assert.equal(entries.find((entry) => entry.name === 'up__hello')?.server, 'up');
    assert.equal(entries.find((entry) => entry.name === 'raw__add')?.server, 'raw');
    const listed = entries.find((entry) => entry.method === 'tools/list');
    assert.ok(listed && !('server' in listed), 'a merged list is no one server\'s');
    // Its place in the line: after the name, before the decision.
    assert.match(lines.find((line) => line.includes('"name":"up__hello"'))!, /"name":"up__hello","server":"up","decision":"allow"/);

    const span = exporter.getFinishedSpans().find((s) => s.kind === SpanKind.CLIENT && s.name === 'tools/call hello');
    assert.equal(span?.attributes['mcp_guard.upstream.name'], 'up');
    // The request's own SERVER span names the server it went to, stdio as HTTP; a merged list is no one server's.
    const served = (name: string) => exporter.getFinishedSpans().find((s) => s.kind === SpanKind.SERVER && s.name === name);
    assert.equal(served('tools/call up__hello')?.attributes['mcp_guard.upstream.name'], 'up');
    assert.equal(served('tools/call raw__add')?.attributes['mcp_guard.upstream.name'], 'raw');
    assert.ok(served('tools/list'), 'the list was traced');
    assert.equal(served('tools/list')?.attributes['mcp_guard.upstream.name'], undefined);
  });
});

describe('a gateway with several servers, a required one down', { timeout: 60_000 }, () => {
  it('/readyz is 503 naming the required server that is not ready', async () => {
    const gateway = await startSet(true, [], []);
    const ready = await readyz(gateway);
    assert.equal(ready.status, 503, JSON.stringify(ready.body));
    assert.equal(ready.body.status, 'not_ready');
    assert.deepEqual(ready.body.issuers, { ok: true });
    assert.equal(ready.body.upstream.ok, false);
    assert.match(ready.body.upstream.reason, /required servers not ready: down$/);
    assert.equal(ready.body.servers.down.required, true);
    assert.equal(ready.body.servers.down.ok, false);
    assert.deepEqual(ready.body.servers.up, { ok: true, required: true });
  });
});
