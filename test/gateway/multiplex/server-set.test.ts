// Several servers behind one gateway endpoint: server-everything over Streamable HTTP and the raw stdio fixture
// server, each under its own name. Names are prefixed, lists merged, calls routed, sessions opened per server on
// first use, and a server that is down leaves only its own items out.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { startAuthorizationServer, type AuthorizationServer } from '../../../examples/dev/authorization-server.js';
import { loadGatewayConfig } from '../../../src/gateway/config/gateway-config.js';
import type { ServerConfig } from '../../../src/gateway/config/server-config.js';
import { startGateway, type RunningGateway } from '../../../src/gateway/server/start-gateway.js';
import { messages, postMcp, send, type HttpAnswer } from '../../helpers/http-client.js';
import { startEverythingServer, type EverythingServer } from '../../helpers/everything-server.js';
import { NODE_SERVER, PROTOCOL_VERSION } from '../../helpers/stdio-gateway.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, CreateMessageRequestSchema, type Progress } from '@modelcontextprotocol/sdk/types.js';
import { withTimeout } from '../../helpers/everything-server.js';

let as: AuthorizationServer;
let everything: EverythingServer;
let gateway: RunningGateway;
const warnings: string[] = [];
const logs: string[] = [];

async function startSet(servers: ServerConfig[], extra: Record<string, string> = {}): Promise<RunningGateway> {
  const config = loadGatewayConfig({ MCP_AUTH_ISSUER: as.issuer, HOST: '127.0.0.1', PORT: '0', ...extra }, { upstreamRequired: false });
  const started = await startGateway({ ...config, servers, listTimeoutMs: 2_000 }, { log: (line) => logs.push(line), warn: (line) => warnings.push(line) });
  as.addResource(started.resource, { scopes: ['mcp'] });
  return started;
}

const SERVERS = (): ServerConfig[] => [
  { name: 'every', transport: 'http', proxy: { upstream: everything.url }, required: false, tools: { exclude: ['get-env*', 'gzip-*', 'get_sum'] } },
  { name: 'raw', transport: 'stdio', stdio: { command: process.execPath, args: [NODE_SERVER] }, required: false },
];

before(async () => {
  as = await startAuthorizationServer({ extraScopes: ['mcp'] });
  everything = await startEverythingServer();
  gateway = await startSet(SERVERS());
});
after(async () => {
  await gateway?.shutdown();
  everything?.stop();
  await as?.close();
});

const token = (sub = 'alice') => as.issueAccessToken({ resource: gateway.resource, scope: 'mcp', sub });
const answerOf = (answer: HttpAnswer, id: number | string) => messages(answer).find((m) => m.id === id);

/** Opens a client session with the endpoint; returns its id and the initialize answer. */
async function openSession(bearer: string): Promise<{ sessionId: string; result: any }> {
  const init = await postMcp(`${gateway.url}/mcp`, { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: PROTOCOL_VERSION, capabilities: { sampling: {} }, clientInfo: { name: 't', version: '1' } } }, bearer);
  assert.equal(init.status, 200, init.text);
  const sessionId = String(init.headers['mcp-session-id']);
  await postMcp(`${gateway.url}/mcp`, { jsonrpc: '2.0', method: 'notifications/initialized' }, bearer, { 'mcp-session-id': sessionId, 'mcp-protocol-version': PROTOCOL_VERSION });
  return { sessionId, result: answerOf(init, 1).result };
}

describe('server set', () => {
  it('answers initialize itself with the merged capabilities and every server\'s instructions', async () => {
    const bearer = await token();
    const { sessionId, result } = await openSession(bearer);
    assert.match(sessionId, /^[0-9a-f-]{36}$/);
    assert.equal(result.protocolVersion, PROTOCOL_VERSION);
    assert.equal(result.serverInfo.name, 'mcp-oauth-guard');
    assert.deepEqual(result.capabilities.tools, { listChanged: true });
  });

  it('merges tools/list, prefixing each server\'s names and leaving out what a server\'s selection excludes', async () => {
    const bearer = await token();
    const { sessionId } = await openSession(bearer);
    const headers = { 'mcp-session-id': sessionId, 'mcp-protocol-version': PROTOCOL_VERSION };
    const list = await postMcp(`${gateway.url}/mcp`, { jsonrpc: '2.0', id: 2, method: 'tools/list' }, bearer, headers);
    assert.equal(list.status, 200, list.text);
    assert.equal(list.headers['mcp-session-id'], undefined);
    const names: string[] = answerOf(list, 2).result.tools.map((t: { name: string }) => t.name);
    assert.ok(names.includes('every__echo'), names.join());
    assert.ok(names.includes('raw__add'), names.join());
    assert.ok(!names.some((n) => n === 'every__get-env' || n.startsWith('every__gzip-')), 'excluded by the selection');
    // Configuration order: every server's tools before the next server's.
    assert.ok(names.indexOf('every__echo') < names.indexOf('raw__add'));
  });

  it('routes a call to its server by the prefix, which sees its own name', async () => {
    const bearer = await token();
    const { sessionId } = await openSession(bearer);
    const headers = { 'mcp-session-id': sessionId, 'mcp-protocol-version': PROTOCOL_VERSION };
    const raw = await postMcp(`${gateway.url}/mcp`, { jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'raw__add', arguments: { a: 2, b: 3 } } }, bearer, headers);
    assert.equal(raw.status, 200, raw.text);
    assert.equal(answerOf(raw, 3).result.content[0].text, '5');
    const every = await postMcp(`${gateway.url}/mcp`, { jsonrpc: '2.0', id: 4, method: 'tools/call', params: { name: 'every__echo', arguments: { message: 'hi' } } }, bearer, headers);
    assert.equal(every.status, 200, every.text);
    assert.match(JSON.stringify(answerOf(every, 4).result), /hi/);
    // The client's session id, never the server's.
    for (const answer of [raw, every]) assert.ok(answer.headers['mcp-session-id'] === undefined || answer.headers['mcp-session-id'] === sessionId);
  });

  it('answers a tool of no server, or one the selection excludes, as an unknown tool (-32602), not 403', async () => {
    const bearer = await token();
    const { sessionId } = await openSession(bearer);
    const headers = { 'mcp-session-id': sessionId, 'mcp-protocol-version': PROTOCOL_VERSION };
    for (const name of ['nobody__echo', 'every__get-env', 'echo']) {
      const call = await postMcp(`${gateway.url}/mcp`, { jsonrpc: '2.0', id: 5, method: 'tools/call', params: { name, arguments: {} } }, bearer, headers);
      assert.equal(call.status, 200, call.text);
      assert.equal(answerOf(call, 5)?.error?.code, -32602, `${name}: ${call.text}`);
    }
  });

  it('refuses another caller\'s session with 404, and ends a session on DELETE', async () => {
    const { sessionId } = await openSession(await token('alice'));
    const other = await postMcp(`${gateway.url}/mcp`, { jsonrpc: '2.0', id: 6, method: 'tools/list' }, await token('bob'), { 'mcp-session-id': sessionId, 'mcp-protocol-version': PROTOCOL_VERSION });
    assert.equal(other.status, 404);
    const bearer = await token('alice');
    const del = await send(`${gateway.url}/mcp`, { method: 'DELETE', headers: { authorization: `Bearer ${bearer}`, 'mcp-session-id': sessionId, 'mcp-protocol-version': PROTOCOL_VERSION } });
    assert.equal(del.status, 200);
    const again = await postMcp(`${gateway.url}/mcp`, { jsonrpc: '2.0', id: 7, method: 'tools/list' }, bearer, { 'mcp-session-id': sessionId, 'mcp-protocol-version': PROTOCOL_VERSION });
    assert.equal(again.status, 404);
  });

  it('lists each server at start-up for the policy check, one summary line per server, and learns its resources', async () => {
    const report = await gateway.reportPolicyCoverage();
    assert.ok('coverage' in report, JSON.stringify(report));
    assert.ok(report.catalog.tools!.includes('every__echo') && report.catalog.tools!.includes('raw__add'));
    assert.ok(!report.catalog.tools!.includes('every__get-env'), 'the selection holds in the check too');
    const summaries = logs.map((l) => JSON.parse(l) as { event?: string; server?: string }).filter((e) => e.event === 'summary');
    // A pattern with a typo excludes nothing: said at start-up, with the name meant.
    assert.ok(warnings.some((w) => w.includes('servers.every.tools.exclude[2] matches no tool the server lists; did you mean get-sum?')), warnings.join('\n'));
    assert.deepEqual(new Set(summaries.map((e) => e.server)), new Set(['every', 'raw']));
    const uri = report.catalog.resources![0]!;
    const set = gateway.proxy as unknown as { serverOfResource(uri: string): string | undefined };
    assert.equal(set.serverOfResource(uri), 'every');
  });

  it('refuses a forged cursor with 400 -32602', async () => {
    const bearer = await token();
    const { sessionId } = await openSession(bearer);
    const list = await postMcp(`${gateway.url}/mcp`, { jsonrpc: '2.0', id: 8, method: 'tools/list', params: { cursor: 'v1.eyJ9.AAAA' } }, bearer, { 'mcp-session-id': sessionId, 'mcp-protocol-version': PROTOCOL_VERSION });
    assert.equal(list.status, 400);
    assert.equal(JSON.parse(list.text).error.code, -32602);
  });
});

describe('server set with the SDK client', { timeout: 60_000 }, () => {
  const clients: Client[] = [];
  after(async () => {
    for (const client of clients) await client.close().catch(() => {});
  });

  async function connect(): Promise<Client> {
    const bearer = await token('carol');
    const transport = new StreamableHTTPClientTransport(new URL(gateway.resource), { requestInit: { headers: { Authorization: `Bearer ${bearer}` } } });
    const client = new Client({ name: 'set-test', version: '1.0.0' }, { capabilities: { sampling: {} } });
    client.setRequestHandler(CreateMessageRequestSchema, async (request) => ({
      model: 'test-model',
      role: 'assistant',
      content: { type: 'text', text: `sampled reply to ${request.params.messages.length} message(s)` },
    }));
    clients.push(client);
    await withTimeout(client.connect(transport), 10_000, 'initialize');
    return client;
  }

  it('lists and calls on each server, and answers a sampling request of one of them', async () => {
    const client = await connect();
    const names = (await withTimeout(client.listTools(), 10_000, 'tools/list')).tools.map((t) => t.name);
    assert.ok(names.includes('every__trigger-sampling-request') && names.includes('raw__echo'), names.join());
    const echo = await withTimeout(client.callTool({ name: 'raw__echo', arguments: { text: 'hello' } }), 10_000, 'raw__echo');
    assert.match(JSON.stringify(echo.content), /hello/);
    const sampled = await withTimeout(client.callTool({ name: 'every__trigger-sampling-request', arguments: { prompt: 'Hi', maxTokens: 10 } }), 15_000, 'sampling');
    assert.match(JSON.stringify(sampled.content), /sampled reply to 1 message/);
  });

  it('streams progress of one server\'s long call', async () => {
    const client = await connect();
    const progress: Progress[] = [];
    const long = await withTimeout(
      client.callTool({ name: 'every__trigger-long-running-operation', arguments: { duration: 0.6, steps: 3 } }, CallToolResultSchema, { onprogress: (p) => progress.push(p), timeout: 10_000 }),
      15_000,
      'long',
    );
    assert.match(JSON.stringify(long.content), /completed/);
    assert.deepEqual(progress.map((p) => p.progress), [1, 2, 3]);
  });

  it('reads a resource through the server that listed it, and prompts by their prefix', async () => {
    const client = await connect();
    const resources = (await withTimeout(client.listResources(), 10_000, 'resources/list')).resources;
    assert.ok(resources.length > 0);
    const read = await withTimeout(client.readResource({ uri: resources[0]!.uri }), 10_000, 'resources/read');
    assert.equal(read.contents[0]!.uri, resources[0]!.uri);
    const prompts = (await withTimeout(client.listPrompts(), 10_000, 'prompts/list')).prompts.map((p) => p.name);
    assert.ok(prompts.every((name) => name.startsWith('every__')), prompts.join());
    const simple = prompts.find((name) => /simple/.test(name));
    if (simple) {
      const got = await withTimeout(client.getPrompt({ name: simple }), 10_000, 'prompts/get');
      assert.ok(got.messages.length > 0);
    }
  });
});

describe('a resource whose server is learnt during the request', () => {
  it('is decided again under that server\'s own rules, not only the gateway-wide ones', async () => {
    // The shared gateway tells which URIs server-everything lists; a new gateway has learnt none of them yet.
    const bearer = await token();
    const { sessionId } = await openSession(bearer);
    const listed = await postMcp(`${gateway.url}/mcp`, { jsonrpc: '2.0', id: 9, method: 'resources/list' }, bearer, { 'mcp-session-id': sessionId, 'mcp-protocol-version': PROTOCOL_VERSION });
    const uri: string = answerOf(listed, 9).result.resources[0].uri;
    const guarded = await startSet([{ name: 'every', transport: 'http', proxy: { upstream: everything.url }, required: false, policy: { resources: { '*': ['mcp:admin'] } } }]);
    try {
      as.addResource(guarded.resource, { scopes: ['mcp', 'mcp:admin'] });
      const read = async (scope: string) => {
        const access = await as.issueAccessToken({ resource: guarded.resource, scope, sub: 'dora' });
        const init = await postMcp(`${guarded.url}/mcp`, { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: PROTOCOL_VERSION, capabilities: {}, clientInfo: { name: 't', version: '1' } } }, access);
        return postMcp(`${guarded.url}/mcp`, { jsonrpc: '2.0', id: 2, method: 'resources/read', params: { uri } }, access, { 'mcp-session-id': String(init.headers['mcp-session-id']), 'mcp-protocol-version': PROTOCOL_VERSION });
      };
      const refused = await read('mcp');
      assert.equal(refused.status, 403, refused.text);
      assert.match(String(refused.headers['www-authenticate']), /insufficient_scope.*mcp:admin/);
      const allowed = await read('mcp mcp:admin');
      assert.equal(allowed.status, 200, allowed.text);
      assert.equal(answerOf(allowed, 2).result.contents[0].uri, uri);
    } finally {
      await guarded.shutdown();
    }
  });
});

describe('bad requests to a server set', () => {
  it('answer with the status, the challenge where one is due, and the JSON-RPC error, never reaching a server', async () => {
    const bearer = await token('erin');
    // A GET stream needs a session: 405, saying which methods there are.
    const get = await send(`${gateway.url}/mcp`, { method: 'GET', headers: { authorization: `Bearer ${bearer}`, accept: 'text/event-stream', 'mcp-protocol-version': PROTOCOL_VERSION } });
    assert.equal(get.status, 405, get.text);
    assert.equal(get.headers.allow, 'POST, DELETE');
    assert.equal(JSON.parse(get.text).error.code, -32600);
    // DELETE names no session: 400.
    const del = await send(`${gateway.url}/mcp`, { method: 'DELETE', headers: { authorization: `Bearer ${bearer}`, 'mcp-protocol-version': PROTOCOL_VERSION } });
    assert.equal(del.status, 400, del.text);
    assert.equal(JSON.parse(del.text).error.code, -32600);
    // An initialize whose capabilities and clientInfo would be kept with the session must be small.
    const huge = await postMcp(`${gateway.url}/mcp`, { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: PROTOCOL_VERSION, capabilities: { experimental: { blob: 'x'.repeat(10_000) } }, clientInfo: { name: 't', version: '1' } } }, bearer);
    assert.equal(huge.status, 200, huge.text);
    assert.equal(answerOf(huge, 1).error.code, -32602);
    assert.equal(huge.headers['mcp-session-id'], undefined);
    // A session id that is no session of this caller: 404, -32001, as for a single upstream.
    const unknown = await postMcp(`${gateway.url}/mcp`, { jsonrpc: '2.0', id: 2, method: 'tools/list' }, bearer, { 'mcp-session-id': 'no-such-session', 'mcp-protocol-version': PROTOCOL_VERSION });
    assert.equal(unknown.status, 404);
    assert.equal(JSON.parse(unknown.text).error.code, -32001);
    // No token: the guard's 401 with its challenge, before the set sees anything.
    const anonymous = await postMcp(`${gateway.url}/mcp`, { jsonrpc: '2.0', id: 3, method: 'tools/list' });
    assert.equal(anonymous.status, 401);
    assert.match(String(anonymous.headers['www-authenticate']), /^Bearer resource_metadata="/);
    assert.equal(JSON.parse(anonymous.text).error.code, -31401);
    // Nothing echoes the token.
    for (const answer of [get, del, huge, unknown]) assert.ok(!answer.text.includes(bearer));
  });
});

describe('the start-up coverage line of a server covered by the gateway-wide policy only', () => {
  it('counts that server\'s tools as protected, not open, and warns of none as open', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'set-coverage-'));
    const policyFile = join(dir, 'policy.json');
    writeFileSync(policyFile, JSON.stringify({ tools: { '*': { scopes: ['mcp'], when: "'staff' in claims.groups" } } }));
    const before = logs.length;
    const warningsBefore = warnings.length;
    const covered = await startSet([{ name: 'raw', transport: 'stdio', stdio: { command: process.execPath, args: [NODE_SERVER] }, required: false }], { MCP_AUTH_POLICY: policyFile });
    try {
      const report = await covered.reportPolicyCoverage();
      assert.ok('coverage' in report, JSON.stringify(report));
      const summary = logs.slice(before).map((l) => JSON.parse(l) as { event?: string; server?: string; tools?: { protected: number; open: number } }).find((e) => e.event === 'summary' && e.server === 'raw');
      assert.ok(summary?.tools, logs.slice(before).join('\n'));
      assert.equal(summary.tools.open, 0, JSON.stringify(summary));
      assert.ok(summary.tools.protected > 0, JSON.stringify(summary));
      assert.ok(!warnings.slice(warningsBefore).some((w) => /no rule/.test(w)), warnings.slice(warningsBefore).join('\n'));
    } finally {
      await covered.shutdown();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
