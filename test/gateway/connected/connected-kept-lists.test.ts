// Users who have not connected an upstream find its tools in their lists: the definitions the upstream last listed for
// a connected user are kept in the token store (sealed, MCP's fields only, never an item's `_meta` or a vendor's
// field) and answered, through the caller's policy filter, to a user who has not connected; calling one of them leads
// to the connect flow. Shown for the single upstream (a 2025-11-25 session and a 2026-07-28 request, after a restart
// on the same store too, and not with MCP_AUTH_CONNECT_LISTS=hide) and for a server of a configuration file (names
// prefixed as usual). A vendor's long list (300 tools of about 1 KB) reaches bob whole, after a restart too. Then the
// store's records: read at most every 30 s, a paged list said once in the log, sealed under their own key.
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { CONNECT_INPUT_KEY } from '../../../src/gateway/connected/flow/connection-required-answer.js';
import { keptChunkedRecords } from '../../../src/gateway/connected/kept-chunked-records.js';
import { keptListKey, keptUpstreamLists, MAX_KEPT_LIST_BYTES } from '../../../src/gateway/connected/kept-upstream-lists.js';
import { createMemoryTokenStore } from '../../../src/gateway/connected/store/memory-token-store.js';
import { entryFileName } from '../../../src/gateway/connected/store/entry-file.js';
import { createRecordSealer } from '../../../src/gateway/connected/store/record-sealer.js';
import { loadGatewayConfig } from '../../../src/gateway/config/gateway-config.js';
import { parseSessionSecret } from '../../../src/core/session/session-seal.js';
import { startGateway, type RunningGateway } from '../../../src/gateway/server/start-gateway.js';
import {
  CONNECTED_USERS,
  LOGIN_CLIENT,
  STORE_KEY,
  startConnectedAccountsParts,
  startConnectedGateway,
  startToolsOnlyConnectedParts,
  UPSTREAM_CLIENT,
  watchIssuedTokens,
  type ConnectedAccountsParts,
} from '../../helpers/connected-accounts.js';
import { messages, postMcp, type HttpAnswer } from '../../helpers/http-client.js';
import { startPlainMcpServer, type PlainMcpServer } from '../../helpers/plain-mcp-server.js';
import type { ToolsOnlyUpstream } from '../../helpers/tools-only-upstream.js';
import { PageBrowser } from './pages/page-browser.js';

const SESSION_VERSION = '2025-11-25';
const STATELESS = '2026-07-28';
/** What one user's answer carried that no other user may see. */
const ALICE_ONLY = 'alice-private-7f3a';

/** The upstream's tools: `admin` needs the `extra` scope (policy); each carries a `_meta` and a vendor field of alice's. */
const UPSTREAM_TOOLS = [
  { name: 'echo', title: 'Echo', description: 'Echoes.', inputSchema: { type: 'object', properties: { text: { type: 'string' } } }, annotations: { readOnlyHint: true }, _meta: { 'vendor/owner': ALICE_ONLY }, 'x-vendor-user': ALICE_ONLY },
  { name: 'admin', description: 'Administers.', inputSchema: { type: 'object' }, outputSchema: { type: 'object' }, _meta: { 'vendor/session': ALICE_ONLY } },
];

/** Waits until the single upstream's tools list is kept in the store at `storeDir`: it is written in the background of the answer that listed it, its head last. */
async function untilKept(storeDir: string): Promise<void> {
  const head = join(storeDir, entryFileName(keptListKey('', 'tools/list'))!);
  for (let tries = 0; !existsSync(head); tries++) {
    assert.ok(tries < 100, 'kept within 5 s');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** The same definitions as kept: MCP's fields only. */
const KEPT_TOOLS = [
  { name: 'echo', title: 'Echo', description: 'Echoes.', inputSchema: { type: 'object', properties: { text: { type: 'string' } } }, annotations: { readOnlyHint: true } },
  { name: 'admin', description: 'Administers.', inputSchema: { type: 'object' }, outputSchema: { type: 'object' } },
];

type Json = any;

describe('connected accounts: the single upstream lists its kept tools to users who have not connected', { timeout: 90_000 }, () => {
  let parts: ConnectedAccountsParts;
  let upstream: ToolsOnlyUpstream;
  let settings: Record<string, string>;
  let started: Awaited<ReturnType<typeof startToolsOnlyConnectedParts>> | undefined;
  let gateway: RunningGateway | undefined;
  /** Every answer bob got, as text. */
  const bobSaw: string[] = [];

  before(async () => {
    started = await startToolsOnlyConnectedParts({ tools: UPSTREAM_TOOLS });
    ({ parts, upstream } = started);
    const policy = join(parts.tempDir, 'policy.json');
    writeFileSync(policy, JSON.stringify({ tools: { admin: ['extra'] } }));
    settings = { ...started.settings, MCP_AUTH_POLICY: policy };
  });

  after(() => started?.close(gateway));

  const start = async (extra: Record<string, string> = {}): Promise<void> => {
    gateway = await startConnectedGateway(parts, { ...settings, ...extra });
    parts.gatewayAs.addResource(gateway.resource, { scopes: ['mcp', 'extra'] });
  };
  const tokenOf = (sub: string, scope = 'mcp'): Promise<string> => parts.gatewayAs.issueAccessToken({ resource: gateway!.resource, scope, sub });

  /** Opens a 2025-11-25 session with `token` and gives a function sending a request in it (its response message). */
  async function session(token: string, who: string): Promise<(method: string, params?: object) => Promise<Json>> {
    const init = await postMcp(gateway!.resource, { jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: SESSION_VERSION, capabilities: {}, clientInfo: { name: 't', version: '1' } } }, token);
    assert.equal(init.status, 200, init.text);
    const headers = { 'mcp-session-id': String(init.headers['mcp-session-id']), 'mcp-protocol-version': SESSION_VERSION };
    let id = 1;
    return async (method, params = {}) => {
      const answer: HttpAnswer = await postMcp(gateway!.resource, { jsonrpc: '2.0', id: id++, method, params }, token, headers);
      if (who === 'bob') bobSaw.push(answer.text);
      assert.equal(answer.status, 200, answer.text);
      return messages(answer).find((m) => 'result' in m || 'error' in m);
    };
  }

  it('before any connected user listed: an empty list, with the note and the link', async () => {
    await start();
    const bob = await session(await tokenOf('bob', 'mcp extra'), 'bob');
    const listed = await bob('tools/list');
    assert.deepEqual(listed.result.tools, []);
    assert.match(listed.result._meta[CONNECT_INPUT_KEY].message, /is not connected/);
  });

  it("once alice has connected and listed, bob gets the same tools, filtered by the policy for him, and a call leads him to connect", async () => {
    const alice = await session(await tokenOf('alice', 'mcp extra'), 'alice');
    const first = await alice('tools/call', { name: 'echo', arguments: {} });
    const link = /(http:\/\/\S+?\/connect\/[A-Za-z0-9_-]+)/.exec(JSON.stringify(first.result.content))![1]!;
    const done = await new PageBrowser(parts.origin).connect(link, CONNECTED_USERS[0], parts.callback, parts.upstreamCallback);
    assert.equal(done.status, 200, done.body);
    const aliceList = await alice('tools/list');
    assert.deepEqual(aliceList.result.tools.map((t: Json) => t.name), ['echo', 'admin'], 'alice gets the upstream list itself');
    assert.equal(aliceList.result.tools[0]._meta['vendor/owner'], ALICE_ONLY, "alice's own answer is the upstream's, as it was");
    const listedUpstream = upstream.answered('tools/list');

    // The same definitions, MCP's fields only, for bob with the scope `admin` needs…
    const bobExtra = await session(await tokenOf('bob', 'mcp extra'), 'bob');
    const full = await bobExtra('tools/list');
    assert.deepEqual(full.result.tools, KEPT_TOOLS);
    assert.match(full.result._meta[CONNECT_INPUT_KEY].url, new RegExp(`^${parts.origin}/connect/`), 'the note and link stay');
    // …and without it `admin` is filtered out, as from any list.
    const bob = await session(await tokenOf('bob'), 'bob');
    assert.deepEqual((await bob('tools/list')).result.tools, [KEPT_TOOLS[0]]);
    const stateless = await postMcp(gateway!.resource, { jsonrpc: '2.0', id: 1, method: 'tools/list', params: { _meta: { 'io.modelcontextprotocol/protocolVersion': STATELESS, 'io.modelcontextprotocol/clientCapabilities': {} } } }, await tokenOf('bob'), { 'mcp-protocol-version': STATELESS, 'mcp-method': 'tools/list' });
    bobSaw.push(stateless.text);
    assert.deepEqual(stateless.json.result.tools, [KEPT_TOOLS[0]], stateless.text);
    assert.equal(stateless.json.result.resultType, 'complete');

    const call = await bob('tools/call', { name: 'echo', arguments: { text: 'hi' } });
    assert.equal(call.result.isError, true, JSON.stringify(call));
    assert.match(call.result.content[0].text, /not connected\. Open http:\/\/127\.0\.0\.1:\d+\/connect\/\S+ in a browser/);
    assert.equal(upstream.answered('tools/list'), listedUpstream, "bob's lists did not reach the upstream");
    assert.equal(upstream.answered('tools/call'), 0, "bob's call did not reach the upstream");
  });

  it('the kept list is sealed at rest, and nothing of what only alice was given reached bob', () => {
    const files = readdirSync(parts.storeDir, { recursive: true, withFileTypes: true }).filter((entry) => entry.isFile());
    for (const file of files) assert.doesNotMatch(readFileSync(join(file.parentPath, file.name), 'utf8'), /Administers|Echoes/);
    assert.ok(bobSaw.length >= 5);
    for (const text of bobSaw) assert.ok(!text.includes(ALICE_ONLY) && !text.includes('x-vendor-user'), text);
  });

  it('after a restart on the same store, the kept list still serves, before anyone lists again', async () => {
    // On a busy machine it may not have landed yet: a restart before it has would find nothing kept.
    await untilKept(parts.storeDir);
    await gateway!.shutdown();
    const listed = upstream.answered('tools/list');
    await start();
    const bob = await session(await tokenOf('bob', 'mcp extra'), 'bob');
    assert.deepEqual((await bob('tools/list')).result.tools, KEPT_TOOLS);
    assert.equal(upstream.answered('tools/list'), listed);
  });

  it('hide: the list stays empty and says nothing, though a list is kept', async () => {
    await gateway!.shutdown();
    await start({ MCP_AUTH_CONNECT_LISTS: 'hide' });
    const bob = await session(await tokenOf('bob', 'mcp extra'), 'bob');
    const listed = await bob('tools/list');
    assert.deepEqual(listed.result.tools, []);
    assert.equal(listed.result._meta, undefined);
  });
});

describe('connected accounts: a server of a configuration file lists its kept tools, prefixed, to users who have not connected', { timeout: 90_000 }, () => {
  let parts: ConnectedAccountsParts;
  let plain: PlainMcpServer;
  let gateway: RunningGateway | undefined;
  let notesCalls = 0;

  before(async () => {
    parts = await startConnectedAccountsParts({ notesServer: 'notes' });
    plain = await startPlainMcpServer();
    parts.notes.server.prependListener('request', (req) => {
      let body = '';
      req.on('data', (chunk: Buffer) => void (body += chunk.toString()));
      req.on('end', () => void (body.includes('"tools/call"') && notesCalls++));
    });
  });

  after(async () => {
    await gateway?.shutdown();
    plain?.close();
    await parts?.close();
  });

  it("alice connects and lists; bob's merged list has notes' tools, filtered for him, and his call gets his own connect answer", async () => {
    const file = join(parts.tempDir, 'gateway.json');
    const notes = { url: parts.notes.url, auth: { mode: 'connected', clientId: UPSTREAM_CLIENT.clientId, clientSecretEnv: 'NOTES_SECRET', scope: 'notes:read' }, policy: { tools: { whoami: ['extra'] } } };
    const gatewaySettings = { issuer: parts.gatewayAs.issuer, host: '127.0.0.1', port: parts.port, loginClientId: LOGIN_CLIENT.clientId, tokenStore: parts.storeDir };
    writeFileSync(file, JSON.stringify({ gateway: gatewaySettings, servers: { notes, plain: { url: plain.url } } }));
    const env = { PATH: process.env.PATH, MCP_AUTH_CONFIG: file, NOTES_SECRET: UPSTREAM_CLIENT.clientSecret, MCP_AUTH_TOKEN_STORE_SECRET: STORE_KEY, MCP_AUTH_LOGIN_CLIENT_SECRET: LOGIN_CLIENT.clientSecret };
    gateway = await startGateway(loadGatewayConfig(env), { log: () => {}, warn: () => {} });
    parts.gatewayAs.addResource(gateway.resource, { scopes: ['mcp', 'extra'] });
    const issued = watchIssuedTokens(parts.notesAs);
    const post = async (sub: string, scope: string, method: string, params: object = {}): Promise<Json> => {
      const meta = { 'io.modelcontextprotocol/protocolVersion': STATELESS, 'io.modelcontextprotocol/clientCapabilities': {} };
      const token = await parts.gatewayAs.issueAccessToken({ resource: gateway!.resource, scope, sub });
      const name = (params as { name?: string }).name;
      const headers = { 'mcp-protocol-version': STATELESS, 'mcp-method': method, ...(name !== undefined ? { 'mcp-name': name } : {}) };
      const answer = await postMcp(gateway!.resource, { jsonrpc: '2.0', id: 1, method, params: { ...params, _meta: meta } }, token, headers);
      assert.equal(answer.status, 200, answer.text);
      return { ...answer.json, text: answer.text };
    };
    const names = (answer: Json): string[] => answer.result.tools.map((tool: Json) => tool.name);
    assert.deepEqual(names(await post('bob', 'mcp', 'tools/list')), ['plain__echo'], 'nothing kept yet');

    const aliceCall = await post('alice', 'mcp extra', 'tools/call', { name: 'notes__notes_list', arguments: {} });
    const link = /(http:\/\/\S+?\/connect\/[A-Za-z0-9_-]+)/.exec(aliceCall.text)![1]!;
    const done = await new PageBrowser(parts.origin).connect(link, CONNECTED_USERS[0], parts.callback, parts.upstreamCallback);
    assert.equal(done.status, 200, done.body);
    const alice = await post('alice', 'mcp extra', 'tools/list');
    assert.deepEqual(names(alice), ['notes__whoami', 'notes__notes_list', 'plain__echo']);

    const bob = await post('bob', 'mcp', 'tools/list');
    assert.deepEqual(names(bob), ['notes__notes_list', 'plain__echo'], 'whoami needs the extra scope bob lacks');
    assert.deepEqual(bob.result.tools[0].inputSchema, alice.result.tools[1].inputSchema);
    assert.match(bob.result._meta[CONNECT_INPUT_KEY].notes.message, /"notes" is not connected/);
    const calls = notesCalls;
    const call = await post('bob', 'mcp', 'tools/call', { name: 'notes__notes_list', arguments: {} });
    assert.equal(call.result.isError, true, call.text);
    assert.match(call.result.content[0].text, /"notes" is not connected\. Open http:\/\/127\.0\.0\.1:\d+\/connect\/\S+ in a browser/);
    assert.ok(!call.text.includes(link) && !bob.text.includes(link), "never alice's link");
    for (const token of issued.tokens) assert.ok(!bob.text.includes(token) && !call.text.includes(token));
    assert.equal(notesCalls, calls, "bob's call did not reach notes");
  });
});

describe("connected accounts: a vendor's long list is kept whole and listed whole to users who have not connected", { timeout: 90_000 }, () => {
  /** 300 tools with input schemas of about 1 KB each. */
  const tools = Array.from({ length: 300 }, (_, i) => {
    const properties = Object.fromEntries(Array.from({ length: 8 }, (_, p) => [`field_${p}`, { type: 'string', description: `Field ${p} of tool ${i}: ${'v'.repeat(90)}` }]));
    return { name: `vendor_${i}`, description: `Vendor tool ${i}.`, inputSchema: { type: 'object', properties } };
  });
  let started: Awaited<ReturnType<typeof startToolsOnlyConnectedParts>> | undefined;
  let gateway: RunningGateway | undefined;

  after(() => started?.close(gateway));

  it('alice connects and lists; after a restart, bob lists all 300 tools before anyone lists again', async () => {
    started = await startToolsOnlyConnectedParts({ tools });
    const { parts, upstream, settings } = started;
    assert.ok(JSON.stringify(tools).length > 300_000);
    const start = async (): Promise<void> => {
      gateway = await startConnectedGateway(parts, settings);
      parts.gatewayAs.addResource(gateway.resource, { scopes: ['mcp'] });
    };
    const list = async (sub: string): Promise<Json> => {
      const meta = { 'io.modelcontextprotocol/protocolVersion': STATELESS, 'io.modelcontextprotocol/clientCapabilities': {} };
      const token = await parts.gatewayAs.issueAccessToken({ resource: gateway!.resource, scope: 'mcp', sub });
      const answer = await postMcp(gateway!.resource, { jsonrpc: '2.0', id: 1, method: 'tools/list', params: { _meta: meta } }, token, { 'mcp-protocol-version': STATELESS, 'mcp-method': 'tools/list' });
      assert.equal(answer.status, 200, answer.text.slice(0, 500));
      return messages(answer).find((m) => 'result' in m || 'error' in m);
    };
    await start();
    const token = await parts.gatewayAs.issueAccessToken({ resource: gateway!.resource, scope: 'mcp', sub: 'alice' });
    const meta = { 'io.modelcontextprotocol/protocolVersion': STATELESS, 'io.modelcontextprotocol/clientCapabilities': {} };
    const first = await postMcp(gateway!.resource, { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'vendor_0', arguments: {}, _meta: meta } }, token, { 'mcp-protocol-version': STATELESS, 'mcp-method': 'tools/call', 'mcp-name': 'vendor_0' });
    const link = /(http:\/\/\S+?\/connect\/[A-Za-z0-9_-]+)/.exec(first.text)![1]!;
    const done = await new PageBrowser(parts.origin).connect(link, CONNECTED_USERS[0], parts.callback, parts.upstreamCallback);
    assert.equal(done.status, 200, done.body);
    assert.equal((await list('alice')).result.tools.length, 300);
    await untilKept(parts.storeDir);

    await gateway!.shutdown();
    const listed = upstream.answered('tools/list');
    await start();
    const bob = await list('bob');
    assert.deepEqual(bob.result.tools, tools);
    assert.match(bob.result._meta[CONNECT_INPUT_KEY].message, /is not connected/);
    assert.equal(upstream.answered('tools/list'), listed, "bob's list did not reach the upstream");
  });
});

describe('the kept lists in the store', () => {
  const sealer = createRecordSealer(parseSessionSecret(STORE_KEY, 'MCP_AUTH_TOKEN_STORE_SECRET'));

  it('reads a list at most every 30 s, never the resources; a paged list keeps its first page, said once in the log', async () => {
    const store = createMemoryTokenStore();
    const lines: string[] = [];
    const kept = keptUpstreamLists({ store, sealer, server: 'notes', log: (line) => lines.push(line), now: () => 0 });
    const tools = Array.from({ length: 200 }, (_, i) => ({ name: `tool_${i}`, description: 'd'.repeat(100), inputSchema: { type: 'object' } }));
    assert.equal(kept.wants('tools/list'), true);
    assert.equal(kept.wants('tools/list'), false, 'read at most every 30 s');
    assert.equal(kept.wants('resources/list'), false, 'the resources themselves are never kept');
    await kept.learnt('tools/list', { tools, nextCursor: 'page-2' });
    const more = [...tools, { name: 'more', inputSchema: {} }];
    await kept.learnt('tools/list', { tools: more, nextCursor: 'page-2' });
    assert.deepEqual(await keptUpstreamLists({ store, sealer, server: 'notes' }).read('tools/list'), more, 'whole, the newest');
    assert.equal(lines.length, 1, lines.join('\n'));
    assert.match(lines[0]!, /"connected_list_cut".*"server":"notes".*"list":"tools\/list","listed":200,"kept":200,"paged":true/);
  });

  it("another process reads it from the store, each list under its own key; a stored item's other fields are dropped", async () => {
    const store = createMemoryTokenStore();
    await keptUpstreamLists({ store, sealer, server: '' }).learnt('prompts/list', { prompts: [{ name: 'p', arguments: [{ name: 'a' }], _meta: { x: 1 } }, { title: 'no name' }] });
    const other = keptUpstreamLists({ store, sealer, server: '' });
    assert.deepEqual(await other.read('prompts/list'), [{ name: 'p', arguments: [{ name: 'a' }] }]);
    assert.equal(await other.read('tools/list'), undefined);
    const key = keptListKey('', 'tools/list');
    const stored = { items: [{ name: 't', inputSchema: {}, vendor: 'x', _meta: {} }] };
    await keptChunkedRecords({ store, sealer, key, maxBytes: MAX_KEPT_LIST_BYTES }).write(stored, JSON.stringify(stored));
    assert.deepEqual(await keptUpstreamLists({ store, sealer, server: '' }).read('tools/list'), [{ name: 't', inputSchema: {} }]);
    await store.set(keptListKey('', 'prompts/list'), (await store.get(key))!);
    assert.equal(await keptUpstreamLists({ store, sealer, server: '' }).read('prompts/list'), undefined, 'sealed for another key: none');
  });

  it('an answer that is not a final list is not kept', async () => {
    const kept = keptUpstreamLists({ store: createMemoryTokenStore(), sealer, server: 'notes' });
    await kept.learnt('tools/list', { resultType: 'input_required', tools: [{ name: 'a', inputSchema: {} }] });
    await kept.learnt('tools/list', { tools: 'none' });
    assert.equal(await kept.read('tools/list'), undefined);
  });
});
