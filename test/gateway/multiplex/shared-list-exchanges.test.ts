// Identical list requests in flight at once, outside any session, share one exchange with a server that is not told
// who asks; a request after it ended asks again, and nothing is shared within sessions, across different passed-on
// headers, with a server told who asks (identity headers), or with a stdio server (a process per caller). A caller
// who joined late keeps its own time.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { describe, it } from 'node:test';
import { loadGatewayConfig } from '../../../src/gateway/config/gateway-config.js';
import type { ServerConfig } from '../../../src/gateway/config/server-config.js';
import { startGateway, type RunningGateway } from '../../../src/gateway/server/start-gateway.js';
import { postMcp } from '../../helpers/http-client.js';
import { multiplexParts } from '../../helpers/multiplex-parts.js';

/**
 * A raw MCP server (2025-11-25) listing `tools` after `delayMs` (counted from the first list it was asked for, with
 * `fromFirst`: every list is then answered at one moment); it counts list requests and keeps their headers.
 */
async function slowLister(tools: string[], delayMs: number, fromFirst = false): Promise<{ url: string; server: Server; lists: IncomingHttpHeaders[]; left: number }> {
  const state = { lists: [] as IncomingHttpHeaders[], left: 0 };
  let firstAt = 0;
  let sessions = 0;
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      const message = JSON.parse(body) as { id?: number; method: string };
      if (message.id === undefined) return void res.writeHead(202).end();
      const reply = (result: unknown, headers: Record<string, string> = {}): void => {
        const text = JSON.stringify({ jsonrpc: '2.0', id: message.id, result });
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(text)), ...headers }).end(text);
      };
      if (message.method === 'initialize') return reply({ protocolVersion: '2025-11-25', capabilities: { tools: {} }, serverInfo: { name: 'lister', version: '1' } }, { 'mcp-session-id': `s${++sessions}` });
      if (message.method !== 'tools/list') return reply({});
      state.lists.push(req.headers);
      firstAt ||= Date.now();
      const timer = setTimeout(() => reply({ tools: tools.map((name) => ({ name, inputSchema: { type: 'object' } })) }), fromFirst ? firstAt + delayMs - Date.now() : delayMs);
      res.on('close', () => {
        if (!res.writableFinished) state.left++;
        clearTimeout(timer);
      });
    });
  }).listen(0, '127.0.0.1');
  await once(server, 'listening');
  return Object.assign(state, { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`, server });
}

const parts = multiplexParts();
const { servers, gateways } = parts;

async function gatewayFor(entries: Array<[string, string, Partial<ServerConfig>?]>): Promise<RunningGateway> {
  const config = loadGatewayConfig({ MCP_AUTH_ISSUER: parts.as.issuer, HOST: '127.0.0.1', PORT: '0' }, { upstreamRequired: false });
  const list: ServerConfig[] = entries.map(([name, url, extra]) => ({ name, transport: 'http', proxy: { upstream: url }, required: false, ...extra }));
  const gateway = await startGateway({ ...config, servers: list, listTimeoutMs: 2_000 }, { log: () => {}, warn: () => {} });
  gateways.push(gateway);
  parts.as.addResource(gateway.resource, { scopes: ['mcp'] });
  return gateway;
}

/** Both clients of the leaving test name one user agent: a passed-on header that differs is not shared. */
const SAME_AGENT = { 'user-agent': 'shared-list-test', 'accept-language': 'en' };
const LIST = { jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} };
const STATELESS = '2026-07-28';
const STATELESS_META = { 'io.modelcontextprotocol/protocolVersion': STATELESS, 'io.modelcontextprotocol/clientCapabilities': {} };
const STATELESS_LIST = { jsonrpc: '2.0', id: 1, method: 'tools/list', params: { _meta: STATELESS_META } };
const names = (answer: { json: { result: { tools: Array<{ name: string }> } } }): string[] => answer.json.result.tools.map((t) => t.name);

/** A list request whose client leaves when `signal` aborts: resolves to the error it then ends with. */
function leavingList(url: string, token: string, signal: AbortSignal): Promise<unknown> {
  const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${token}`, ...SAME_AGENT };
  return fetch(url, { method: 'POST', headers, body: JSON.stringify(LIST), signal }).then((r) => r.text()).catch((error: unknown) => error);
}

async function tokensFor(gateway: RunningGateway, subjects: string[]): Promise<string[]> {
  return Promise.all(subjects.map((sub) => parts.as.issueAccessToken({ resource: gateway.resource, scope: 'mcp', sub })));
}

describe('identical list requests outside a session', () => {
  it('share one exchange per server while it is in flight, whoever asks; a later request asks again', async () => {
    const a = await slowLister(['a1', 'a2'], 150);
    const b = await slowLister(['b1'], 150);
    servers.push(a.server, b.server);
    const gateway = await gatewayFor([['a', a.url], ['b', b.url]]);
    const tokens = await tokensFor(gateway, ['alice', 'bob', 'carol', 'dave', 'erin', 'frank']);
    const answers = await Promise.all(tokens.map((token) => postMcp(`${gateway.url}/mcp`, LIST, token)));
    for (const answer of answers) {
      assert.equal(answer.status, 200, answer.text);
      assert.deepEqual(names(answer), ['a__a1', 'a__a2', 'b__b1']);
    }
    assert.equal(a.lists.length, 1, 'six callers at once: one list request to a');
    assert.equal(b.lists.length, 1, 'six callers at once: one list request to b');
    await postMcp(`${gateway.url}/mcp`, LIST, tokens[0]!);
    assert.equal(a.lists.length, 2, 'a request after the exchange ended asks again');
  });

  it('are not shared when the passed-on headers differ, within sessions, or with a server told who asks', async () => {
    const plain = await slowLister(['p1'], 150);
    const told = await slowLister(['t1'], 150);
    servers.push(plain.server, told.server);
    const gateway = await gatewayFor([['plain', plain.url], ['told', told.url, { proxy: { upstream: told.url, identityHeaders: { subject: 'X-Caller' } } }]]);
    const [alice, bob] = await tokensFor(gateway, ['alice', 'bob']);
    await Promise.all([
      postMcp(`${gateway.url}/mcp`, LIST, alice!, { 'accept-language': 'fr' }),
      postMcp(`${gateway.url}/mcp`, LIST, bob!, { 'accept-language': 'de' }),
    ]);
    assert.deepEqual(plain.lists.map((h) => h['accept-language']).sort(), ['de', 'fr'], 'each language asked on its own');
    assert.deepEqual(told.lists.map((h) => h['x-caller']).sort(), ['alice', 'bob'], 'a server told who asks is asked for each caller');

    const before = plain.lists.length;
    const opened = await Promise.all(
      [alice!, bob!].map(async (token) => {
        const init = await postMcp(`${gateway.url}/mcp`, { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } } }, token);
        return { token, headers: { 'mcp-session-id': String(init.headers['mcp-session-id']), 'mcp-protocol-version': '2025-11-25' } };
      }),
    );
    const listed = await Promise.all(opened.map(({ token, headers }) => postMcp(`${gateway.url}/mcp`, LIST, token, headers)));
    for (const answer of listed) assert.deepEqual(names(answer), ['plain__p1', 'told__t1']);
    assert.equal(plain.lists.length - before, 2, "each session's list is asked in that session");
    assert.deepEqual(new Set(plain.lists.slice(before).map((h) => h['mcp-session-id'])).size, 2);
  });

  it('go on for those who stay when the caller who started the exchange leaves', async () => {
    const slow = await slowLister(['s1'], 400);
    servers.push(slow.server);
    const gateway = await gatewayFor([['slow', slow.url]]);
    const [alice, bob] = await tokensFor(gateway, ['alice', 'bob']);
    // Connections and the issuer's keys warm up first.
    await Promise.all([postMcp(`${gateway.url}/mcp`, LIST, alice!), postMcp(`${gateway.url}/mcp`, LIST, bob!)]);
    slow.lists.length = 0;
    const leaving = new AbortController();
    const first = leavingList(`${gateway.url}/mcp`, alice!, leaving.signal);
    await new Promise((resolve) => setTimeout(resolve, 50));
    const staying = postMcp(`${gateway.url}/mcp`, LIST, bob!, SAME_AGENT);
    await new Promise((resolve) => setTimeout(resolve, 50));
    leaving.abort();
    assert.ok((await first) instanceof Error, 'the leaving client got no answer');
    const answer = await staying;
    assert.equal(answer.status, 200, answer.text);
    assert.deepEqual(names(answer), ['slow__s1']);
    assert.equal(slow.lists.length, 1, 'the staying caller was served by the exchange the leaving one started');
    assert.equal(slow.left, 0, 'the exchange was not cut');

    const alone = new AbortController();
    const gone = leavingList(`${gateway.url}/mcp`, alice!, alone.signal);
    await new Promise((resolve) => setTimeout(resolve, 100));
    alone.abort();
    await gone;
    const deadline = Date.now() + 2_000;
    while (slow.left === 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
    assert.equal(slow.left, 1, 'the server saw its client leave once nobody waited');
  });

  it('end at the server when the only caller leaves, shared or not', async () => {
    const plain = await slowLister(['p1'], 1_500);
    const told = await slowLister(['t1'], 1_500);
    servers.push(plain.server, told.server);
    const gateway = await gatewayFor([['plain', plain.url], ['told', told.url, { proxy: { upstream: told.url, identityHeaders: { subject: 'X-Caller' } } }]]);
    const [alice] = await tokensFor(gateway, ['alice']);
    const leaving = new AbortController();
    const gone = leavingList(`${gateway.url}/mcp`, alice!, leaving.signal);
    while (plain.lists.length + told.lists.length < 2) await new Promise((resolve) => setTimeout(resolve, 20));
    leaving.abort();
    await gone;
    const deadline = Date.now() + 1_000;
    while (plain.left + told.left < 2 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
    assert.deepEqual([plain.left, told.left], [1, 1], 'both servers saw the client leave before answering');
  });

  it('are not shared with a stdio server, whose processes outside a session are each caller\'s own', async () => {
    const child = fileURLToPath(new URL('../../fixtures/stdio/per-process-lister.mjs', import.meta.url));
    const gateway = await gatewayFor([['kid', '', { transport: 'stdio', proxy: undefined, stdio: { command: process.execPath, args: [child] } } as Partial<ServerConfig>]]);
    const [alice, bob] = await tokensFor(gateway, ['alice', 'bob']);
    const headers = { ...SAME_AGENT, 'mcp-protocol-version': STATELESS, 'mcp-method': 'tools/list' };
    const list = (token: string) => postMcp(`${gateway.url}/mcp`, STATELESS_LIST, token, headers);
    const [ownA, ownB] = [names(await list(alice!)), names(await list(bob!))];
    assert.notDeepEqual(ownA, ownB, "each caller's own process");
    // Alice's process now lists one more tool; bob's does not.
    const called = await postMcp(`${gateway.url}/mcp`, { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: ownA[0], arguments: {}, _meta: STATELESS_META } }, alice!, { ...headers, 'mcp-method': 'tools/call', 'mcp-name': ownA[0]! });
    assert.equal(called.status, 200, called.text);
    const [a, b] = await Promise.all([list(alice!), list(bob!)]);
    assert.deepEqual(names(a), [...ownA, 'kid__enabled_extra']);
    assert.deepEqual(names(b), ownB, "bob's list comes from bob's process, in flight at the same time as alice's");
  });

  it('give a caller who joined late the rest of its own time when the shared exchange times out', async () => {
    // Every list is answered at one moment, 2.5 s after the first arrived: past the first caller's 2 s, within the second's.
    const late = await slowLister(['late'], 2_500, true);
    servers.push(late.server);
    const gateway = await gatewayFor([['late', late.url]]);
    const [alice, bob] = await tokensFor(gateway, ['alice', 'bob']);
    const first = postMcp(`${gateway.url}/mcp`, LIST, alice!, SAME_AGENT);
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    const second = await postMcp(`${gateway.url}/mcp`, LIST, bob!, SAME_AGENT);
    const timedOut = await first;
    assert.equal(timedOut.status, 504, 'the first caller ran out of time');
    assert.equal(timedOut.headers['www-authenticate'], undefined);
    assert.equal(timedOut.json.id, 1);
    assert.equal(timedOut.json.error?.code, -32603, timedOut.text);
    assert.equal(second.status, 200, second.text);
    assert.deepEqual(names(second), ['late__late']);
    assert.equal(late.lists.length, 2, 'the late caller asked once more, alone');
  });
});
