/**
 * A JSON-RPC id chosen again by the client must not carry an unfiltered list past the gateway: through real
 * gateways, with the test authorization server's real tokens, in front of real upstreams on 127.0.0.1:
 * `@modelcontextprotocol/server-everything` with its event store (the replay), an MCP SDK `McpServer` whose
 * resource-template list is slow (the live case), and a stdio child process.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { McpServer, ResourceTemplate } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { loadGatewayConfig } from '../../src/gateway/config/gateway-config.js';
import { startGateway, type RunningGateway } from '../../src/gateway/server/start-gateway.js';
import { eventStreamData } from '../../src/core/wire/event-stream.js';
import { startTestIssuer, type TestIssuer } from '../helpers/fake-issuer.js';
import { startEverythingServer, type EverythingServer } from '../helpers/everything-server.js';
import { NODE_SERVER, quote } from '../helpers/stdio-gateway.js';

const VERSION = '2025-11-25';
const BASE = 'mcp:basic';
const ADMIN = 'mcp:admin';
/** The caller may see `echo` and the public documents; everything else needs mcp:admin. */
const POLICY = {
  scopesSupported: [BASE, ADMIN],
  requiredScopes: [BASE],
  tools: { '*': [ADMIN], echo: [], slow: [] },
  prompts: { '*': [ADMIN] },
  resources: { '*': [], 'docs://private/{name}': [ADMIN] },
};
const INITIALIZE = { jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: VERSION, capabilities: {}, clientInfo: { name: 'reused-ids', version: '1' } } };
/** The JSON-RPC error of a request whose id is in use by another request of the session still in progress. */
const ID_IN_USE = -32600;

let issuer: TestIssuer;
let dir: string;
let policyFile: string;
const gateways: RunningGateway[] = [];
const servers: Server[] = [];

async function gatewayFor(settings: Record<string, string>): Promise<{ url: string; token: string }> {
  const gateway = await startGateway(loadGatewayConfig({ MCP_AUTH_ISSUER: issuer.issuer, MCP_AUTH_POLICY: policyFile, HOST: '127.0.0.1', PORT: '0', ...settings }), {
    log: () => {},
    warn: () => {},
  });
  gateways.push(gateway);
  await gateway.guard.ready();
  const token = await issuer.sign({ aud: gateway.resource, scope: BASE, sub: 'alice', client_id: 'client-1' });
  return { url: gateway.resource, token };
}

function headers(token: string, sessionId?: string): Record<string, string> {
  return {
    Authorization: `Bearer ${token}`,
    'Content-Type': 'application/json',
    Accept: 'application/json, text/event-stream',
    'MCP-Protocol-Version': VERSION,
    ...(sessionId ? { 'Mcp-Session-Id': sessionId } : {}),
  };
}

function post(url: string, token: string, sessionId: string | undefined, body: unknown, signal?: AbortSignal): Promise<Response> {
  return fetch(url, { method: 'POST', headers: headers(token, sessionId), body: JSON.stringify(body), signal: signal ?? AbortSignal.timeout(10_000) });
}

/** Opens a session and says initialized; returns its id. */
async function openSession(url: string, token: string): Promise<string> {
  const res = await post(url, token, undefined, INITIALIZE);
  assert.equal(res.status, 200, await res.clone().text());
  await res.text();
  const sessionId = res.headers.get('mcp-session-id');
  assert.ok(sessionId);
  const ack = await post(url, token, sessionId, { jsonrpc: '2.0', method: 'notifications/initialized' });
  assert.equal(ack.status, 202);
  await ack.text();
  return sessionId;
}

/** The JSON-RPC messages of an answer, JSON or an event stream. */
async function messages(res: Response): Promise<Record<string, any>[]> {
  const text = await res.text();
  if ((res.headers.get('content-type') ?? '').startsWith('application/json')) return [JSON.parse(text)];
  return eventStreamData(text).filter((d) => d !== '').map((d) => JSON.parse(d));
}

before(async () => {
  issuer = await startTestIssuer();
  dir = mkdtempSync(join(tmpdir(), 'reused-ids-'));
  policyFile = join(dir, 'policy.json');
  writeFileSync(policyFile, JSON.stringify(POLICY));
});

after(async () => {
  for (const gateway of gateways) await gateway.shutdown();
  for (const server of servers) {
    server.closeAllConnections();
    server.close();
  }
  await issuer?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('a reused id and a replayed list (server-everything with its event store)', { timeout: 60_000 }, () => {
  let everything: EverythingServer;
  before(async () => {
    everything = await startEverythingServer();
  });
  after(() => everything?.stop());

  it('the old tools/list answer replayed after a resources/list with the same id is filtered as a tools list', async () => {
    const { url, token } = await gatewayFor({ MCP_AUTH_UPSTREAM: everything.url });
    const sessionId = await openSession(url, token);
    const live = await post(url, token, sessionId, { jsonrpc: '2.0', id: 5, method: 'tools/list' });
    assert.equal(live.status, 200);
    const liveText = await live.text();
    // The first event of the answer: the upstream's priming event, which a resume names.
    const firstEventId = /^id: (\S+)$/m.exec(liveText)?.[1];
    assert.ok(firstEventId, liveText);
    const liveTools = eventStreamData(liveText).filter((d) => d !== '').map((d) => JSON.parse(d).result.tools.map((t: { name: string }) => t.name));
    assert.deepEqual(liveTools, [['echo']], 'the live answer is filtered');

    const resources = await post(url, token, sessionId, { jsonrpc: '2.0', id: 5, method: 'resources/list' });
    assert.equal(resources.status, 200);
    await resources.text();

    const resumed = await fetch(url, {
      headers: { Authorization: `Bearer ${token}`, Accept: 'text/event-stream', 'MCP-Protocol-Version': VERSION, 'Mcp-Session-Id': sessionId, 'Last-Event-ID': firstEventId },
      signal: AbortSignal.timeout(3_000),
    });
    assert.equal(resumed.status, 200);
    // The replay is a stream that stays open: read until the replayed tools answer has come.
    const reader = resumed.body!.getReader();
    const decoder = new TextDecoder();
    let text = '';
    while (!/"tools"/.test(text) || !/\n\n/.test(text.slice(text.indexOf('"tools"')))) {
      const next = await reader.read();
      if (next.done) break;
      text += decoder.decode(next.value, { stream: true });
    }
    await reader.cancel();
    const replayed = eventStreamData(text)
      .filter((d) => d !== '')
      .map((d) => JSON.parse(d) as Record<string, any>)
      .filter((m) => Array.isArray(m.result?.tools));
    assert.equal(replayed.length, 1, text);
    assert.deepEqual(replayed[0]!.result.tools.map((t: { name: string }) => t.name), ['echo'], 'every tool but echo stays hidden in the replay');
  });
});

/** An MCP SDK upstream: its template list answers after `listDelayMs`, its `slow` tool after `slowMs`. */
async function startSdkUpstream(listDelayMs: number, slowMs: number): Promise<string> {
  const transports = new Map<string, StreamableHTTPServerTransport>();
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      const body = chunks.length > 0 ? JSON.parse(Buffer.concat(chunks).toString('utf8')) : undefined;
      const sid = req.headers['mcp-session-id'];
      let transport = typeof sid === 'string' ? transports.get(sid) : undefined;
      if (!transport) {
        const mcp = new McpServer({ name: 'docs', version: '1' });
        mcp.registerTool('slow', { description: 'answers late' }, async () => {
          await new Promise((r) => setTimeout(r, slowMs));
          return { content: [{ type: 'text', text: 'done' }] };
        });
        mcp.registerResource(
          'docs',
          new ResourceTemplate('docs://{area}/{name}', {
            list: async () => {
              await new Promise((r) => setTimeout(r, listDelayMs));
              return { resources: [{ uri: 'docs://public/readme', name: 'readme' }, { uri: 'docs://private/plan', name: 'plan' }] };
            },
          }),
          {},
          async (uri) => ({ contents: [{ uri: uri.href, text: 'text' }] }),
        );
        const created: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
          sessionIdGenerator: () => `sdk-${transports.size + 1}`,
          onsessioninitialized: (id) => void transports.set(id, created),
        });
        transport = created;
        await mcp.connect(transport);
      }
      await transport.handleRequest(req, res, body);
    });
  });
  servers.push(server);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`;
}

describe('a reused id live (an SDK McpServer upstream with a slow template list)', { timeout: 30_000 }, () => {
  it('refuses a request whose id is still in use in the session; the pending list answer stays filtered', async () => {
    const { url, token } = await gatewayFor({ MCP_AUTH_UPSTREAM: await startSdkUpstream(400, 800) });
    const sessionId = await openSession(url, token);
    const list = post(url, token, sessionId, { jsonrpc: '2.0', id: 9, method: 'resources/list' });
    await new Promise((r) => setTimeout(r, 100));
    const call = await post(url, token, sessionId, { jsonrpc: '2.0', id: 9, method: 'tools/call', params: { name: 'slow', arguments: {} } });
    const callText = await call.text();
    assert.doesNotMatch(callText, /docs:\/\/private/);
    assert.equal(call.status, 400, callText);
    assert.equal(call.headers.get('content-type'), 'application/json');
    const refusal = JSON.parse(callText);
    assert.equal(refusal.id, 9);
    assert.equal(refusal.error.code, ID_IN_USE);
    assert.match(refusal.error.message, /id .*in use/);
    const listed = await messages(await list);
    assert.deepEqual(listed.map((m) => m.result.resources.map((r: { uri: string }) => r.uri)), [['docs://public/readme']]);
    // Once answered, the id is free again.
    const again = await post(url, token, sessionId, { jsonrpc: '2.0', id: 9, method: 'tools/call', params: { name: 'echo', arguments: {} } });
    assert.notEqual(again.status, 400);
    await again.text();
  });

  it('a list answer the upstream sends on another exchange (the first client left) is filtered by its shape', async () => {
    const { url, token } = await gatewayFor({ MCP_AUTH_UPSTREAM: await startSdkUpstream(400, 1_500) });
    const sessionId = await openSession(url, token);
    const controller = new AbortController();
    const list = post(url, token, sessionId, { jsonrpc: '2.0', id: 9, method: 'resources/list' }, controller.signal).catch(() => undefined);
    await new Promise((r) => setTimeout(r, 100));
    controller.abort();
    await list;
    // The gateway's exchange has ended, so the id is free; the upstream still works on the list and now answers
    // it on the stream of this call.
    await new Promise((r) => setTimeout(r, 50));
    const call = await post(url, token, sessionId, { jsonrpc: '2.0', id: 9, method: 'tools/call', params: { name: 'slow', arguments: {} } });
    assert.equal(call.status, 200);
    const carried = await messages(call);
    const lists = carried.filter((m) => Array.isArray(m.result?.resources));
    assert.equal(lists.length, 1, JSON.stringify(carried));
    assert.deepEqual(lists[0]!.result.resources.map((r: { uri: string }) => r.uri), ['docs://public/readme']);
  });
});

describe('a reused id through the stdio upstream', { timeout: 30_000 }, () => {
  it('refuses a request whose id is in use by a request of the same session still in progress', async () => {
    const { url, token } = await gatewayFor({ MCP_AUTH_UPSTREAM_COMMAND: `${quote(process.execPath)} ${quote(NODE_SERVER)}` });
    const sessionId = await openSession(url, token);
    const first = post(url, token, sessionId, { jsonrpc: '2.0', id: 9, method: 'tools/call', params: { name: 'slow', arguments: { ms: 400 } } });
    await new Promise((r) => setTimeout(r, 100));
    const second = await post(url, token, sessionId, { jsonrpc: '2.0', id: 9, method: 'tools/list' });
    assert.equal(second.status, 400);
    const refusal = (await second.json()) as { id: number; error: { code: number } };
    assert.equal(refusal.id, 9);
    assert.equal(refusal.error.code, ID_IN_USE);
    const answered = await messages(await first);
    assert.equal(answered.at(-1)!.result.content[0].text, 'slow ');
    // A string id "9" is another id.
    const other = await post(url, token, sessionId, { jsonrpc: '2.0', id: '9', method: 'tools/list' });
    assert.equal(other.status, 200);
    await other.text();
  });
});

describe('a list answer the upstream prefixes with a UTF-8 byte order mark', { timeout: 30_000 }, () => {
  it('is filtered, not forwarded whole: clients skip the mark and would read the hidden tool', async () => {
    const upstream = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const message = JSON.parse(Buffer.concat(chunks).toString() || '{}') as { id?: number; method?: string };
        if (message.id === undefined) {
          res.writeHead(202).end();
          return;
        }
        const result = message.method === 'tools/list' ? { tools: [{ name: 'echo', inputSchema: { type: 'object' } }, { name: 'secret_admin', inputSchema: { type: 'object' } }] } : {};
        const body = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(JSON.stringify({ jsonrpc: '2.0', id: message.id, result }))]);
        res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': body.length });
        res.end(body);
      });
    });
    servers.push(upstream);
    upstream.listen(0, '127.0.0.1');
    await once(upstream, 'listening');
    const { url, token } = await gatewayFor({ MCP_AUTH_UPSTREAM: `http://127.0.0.1:${(upstream.address() as AddressInfo).port}/mcp` });
    const res = await post(url, token, undefined, { jsonrpc: '2.0', id: 5, method: 'tools/list' });
    assert.equal(res.status, 200);
    // `Response.json()` decodes UTF-8 and drops the mark, as every fetch-based client does.
    const answer = (await res.json()) as { result: { tools: { name: string }[] } };
    assert.deepEqual(answer.result.tools.map((t) => t.name), ['echo']);
  });
});
