// Merged lists across servers that are slow, down or paged: servers are asked in parallel, one that fails is left
// out with a warning while the answer still succeeds, only all failing is an error, and pages continue across
// servers with the endpoint's own cursor. server/discover follows the same rule: the revisions of the servers that
// answered, an error only when none did. A call routed by its body reaches its server with its own name in the body
// and in Mcp-Name.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, it } from 'node:test';
import { loadGatewayConfig } from '../../../src/gateway/config/gateway-config.js';
import type { PolicyDefinition } from '../../../src/core/policy/policy-definition.js';
import type { ServerConfig } from '../../../src/gateway/config/server-config.js';
import { startGateway, type RunningGateway } from '../../../src/gateway/server/start-gateway.js';
import { freePort } from '../../helpers/free-port.js';
import { postMcp } from '../../helpers/http-client.js';
import { multiplexParts } from '../../helpers/multiplex-parts.js';
import { readJsonBody } from '../../helpers/read-json-body.js';

const STATELESS = '2026-07-28';
const META = { 'io.modelcontextprotocol/protocolVersion': STATELESS, 'io.modelcontextprotocol/clientCapabilities': {} };

/** What a {@link rawServer} was sent. */
interface Received {
  readonly method: string;
  readonly headers: IncomingHttpHeaders;
  readonly params: Record<string, unknown> | undefined;
}

/**
 * A raw MCP server speaking 2026-07-28: `tools` listed two per page after `delayMs` (so is `server/discover`), each
 * page with `hints` (caching); `server/discover` answered with `versions`, or without any revisions when none are
 * given. It keeps every request it gets.
 */
async function rawServer(tools: string[], delayMs = 0, hints: { cacheScope?: string; ttlMs?: number } = {}, versions?: readonly string[]): Promise<{ url: string; server: Server; lists: number; received: Received[] }> {
  const state = { lists: 0, received: [] as Received[] };
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      const message = JSON.parse(body) as { id?: number; method: string; params?: { cursor?: string; name?: string } };
      state.received.push({ method: message.method, headers: req.headers, params: message.params });
      if (message.id === undefined) return void res.writeHead(202).end();
      let result: unknown;
      if (message.method === 'tools/list') {
        state.lists++;
        const start = Number(message.params?.cursor ?? 0);
        const page = tools.slice(start, start + 2).map((name) => ({ name, inputSchema: { type: 'object' } }));
        result = { resultType: 'complete', tools: page, ...(start + 2 < tools.length ? { nextCursor: String(start + 2) } : {}), ...hints };
      } else if (message.method === 'tools/call') result = { resultType: 'complete', content: [{ type: 'text', text: `called ${message.params?.name}` }] };
      else if (message.method === 'server/discover' && versions) result = { resultType: 'complete', supportedVersions: versions, capabilities: { tools: {} }, serverInfo: { name: 'raw', version: '1' } };
      else result = { resultType: 'complete' };
      const text = JSON.stringify({ jsonrpc: '2.0', id: message.id, result });
      const delayed = message.method === 'tools/list' || message.method === 'server/discover';
      setTimeout(() => res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) }).end(text), delayed ? delayMs : 0);
    });
  }).listen(0, '127.0.0.1');
  await once(server, 'listening');
  return Object.assign(state, { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`, server });
}

const parts = multiplexParts();
const { servers, gateways } = parts;

async function gatewayFor(entries: [string, string][], warnings: string[] = [], policies: Record<string, PolicyDefinition> = {}, extra: Record<string, Partial<ServerConfig>> = {}): Promise<RunningGateway> {
  const config = loadGatewayConfig({ MCP_AUTH_ISSUER: parts.as.issuer, HOST: '127.0.0.1', PORT: '0' }, { upstreamRequired: false });
  const list: ServerConfig[] = entries.map(([name, url]) => ({ name, transport: 'http', proxy: { upstream: url }, required: false, ...(policies[name] ? { policy: policies[name] } : {}), ...extra[name] }));
  const gateway = await startGateway({ ...config, servers: list, listTimeoutMs: 1_000 }, { log: () => {}, warn: (line) => warnings.push(line) });
  gateways.push(gateway);
  parts.as.addResource(gateway.resource, { scopes: ['mcp'] });
  return gateway;
}

/** A 2026-07-28 request of `method` with `params` (and its `_meta`), with the headers that mirror it; `headers` are added. */
async function stateless(gateway: RunningGateway, method: string, params: Record<string, unknown> = {}, headers: Record<string, string> = {}, caller: { sub: string; scope: string } = { sub: 'alice', scope: 'mcp' }) {
  const token = await parts.as.issueAccessToken({ resource: gateway.resource, scope: caller.scope, sub: caller.sub });
  return postMcp(`${gateway.url}/mcp`, { jsonrpc: '2.0', id: 1, method, params: { _meta: META, ...params } }, token, { 'mcp-protocol-version': STATELESS, 'mcp-method': method, ...headers });
}

function list(gateway: RunningGateway, cursor?: string, caller?: { sub: string; scope: string }) {
  return stateless(gateway, 'tools/list', cursor ? { cursor } : {}, {}, caller);
}

describe('merged lists', () => {
  it('asks the servers in parallel: a list with one server at 200 ms takes about 200 ms, not the sum', async () => {
    const slow = await rawServer(['s1'], 200);
    const slow2 = await rawServer(['t1'], 200);
    const fast = await rawServer(['f1']);
    servers.push(slow.server, slow2.server, fast.server);
    const gateway = await gatewayFor([['slow', slow.url], ['slow2', slow2.url], ['fast', fast.url]]);
    await list(gateway); // Connections, token verification and discovery warm up.
    const started = performance.now();
    const answer = await list(gateway);
    const elapsed = performance.now() - started;
    assert.equal(answer.status, 200, answer.text);
    assert.deepEqual(answer.json.result.tools.map((t: { name: string }) => t.name), ['slow__s1', 'slow2__t1', 'fast__f1']);
    assert.ok(elapsed < 380, `took ${elapsed.toFixed(0)} ms; asked in turn it would take 400 ms or more`);
  });

  it('leaves a server that is down or too slow out, says so, and fails only when every server does', async () => {
    const up = await rawServer(['a']);
    const tooSlow = await rawServer(['late'], 3_000);
    servers.push(up.server, tooSlow.server);
    const warnings: string[] = [];
    const down = `http://127.0.0.1:${await freePort()}/mcp`;
    const gateway = await gatewayFor([['up', up.url], ['down', down], ['slow', tooSlow.url]], warnings);
    const answer = await list(gateway);
    assert.equal(answer.status, 200, answer.text);
    assert.deepEqual(answer.json.result.tools.map((t: { name: string }) => t.name), ['up__a']);
    assert.deepEqual(answer.json.result._meta['io.github.mcp-oauth-guard/unavailable'], ['down', 'slow']);
    const named = warnings.map((line) => JSON.parse(line) as { server?: string; reason?: string });
    assert.ok(named.some((w) => w.server === 'down' && w.reason === 'upstream_unreachable'), warnings.join('\n'));
    assert.ok(named.some((w) => w.server === 'slow' && w.reason === 'upstream_timeout'), warnings.join('\n'));

    const none = await gatewayFor([['down', down]]);
    const failed = await list(none);
    assert.equal(failed.status, 502, failed.text);
    assert.equal(failed.json.error.code, -32603);
  });

  it('writes a merged list with text beyond ASCII whole, with its length in bytes, fresh and reused alike', async () => {
    const one = await rawServer(['añadir', '日本']);
    const two = await rawServer(['x']);
    servers.push(one.server, two.server);
    const gateway = await gatewayFor([['one', one.url], ['two', two.url]]);
    // The second answer reuses the first merge (the servers' bytes are the same), and its bytes.
    for (const round of ['fresh', 'reused']) {
      const answer = await list(gateway);
      assert.equal(answer.status, 200, `${round}: ${answer.text}`);
      assert.deepEqual(answer.json.result.tools.map((t: { name: string }) => t.name), ['one__añadir', 'one__日本', 'two__x'], round);
      assert.equal(Number(answer.headers['content-length']), Buffer.byteLength(answer.text), round);
    }
  });

  it('pages across servers with its own cursor, each server continuing from its own', async () => {
    const one = await rawServer(['a', 'b', 'c']);
    const two = await rawServer(['x', 'y', 'z', 'w']);
    servers.push(one.server, two.server);
    const gateway = await gatewayFor([['one', one.url], ['two', two.url]]);
    const seen: string[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < 5; page++) {
      const answer = await list(gateway, cursor);
      assert.equal(answer.status, 200, answer.text);
      seen.push(...answer.json.result.tools.map((t: { name: string }) => t.name));
      cursor = answer.json.result.nextCursor;
      if (cursor === undefined) break;
      assert.match(cursor, /^v1\./);
    }
    assert.deepEqual(seen, ['one__a', 'one__b', 'two__x', 'two__y', 'one__c', 'two__z', 'two__w']);
  });
});

/** A raw MCP server with sessions (2025-11-25) that can forget them all, as a restarted server has. */
async function sessionfulServer(): Promise<{ url: string; server: Server; forget(): void; initializes: number }> {
  const sessions = new Set<string>();
  const state = { initializes: 0 };
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      if (req.method !== 'POST') return void res.writeHead(405).end();
      const message = JSON.parse(body) as { id?: number; method: string; params?: { name?: string } };
      const named = req.headers['mcp-session-id'];
      if (message.method === 'initialize') {
        state.initializes++;
        const id = `s${state.initializes}`;
        sessions.add(id);
        const text = JSON.stringify({ jsonrpc: '2.0', id: message.id, result: { protocolVersion: '2025-11-25', capabilities: { tools: {} }, serverInfo: { name: 'raw', version: '1' } } });
        return void res.writeHead(200, { 'content-type': 'application/json', 'mcp-session-id': id }).end(text);
      }
      if (typeof named !== 'string' || !sessions.has(named)) return void res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32001, message: 'Session not found' } }));
      if (message.id === undefined) return void res.writeHead(202).end();
      const result = message.method === 'tools/list' ? { tools: [{ name: 'echo', inputSchema: { type: 'object' } }] } : { content: [{ type: 'text', text: `${named}: ${message.params?.name}` }] };
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: message.id, result }));
    });
  }).listen(0, '127.0.0.1');
  await once(server, 'listening');
  return Object.assign(state, { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`, server, forget: () => sessions.clear() });
}

describe('pages a server marks public (2026-07-28 caching)', () => {
  it('are reused for every caller while fresh, still filtered per caller; other pages are asked every time', async () => {
    const shared = await rawServer(['open', 'secret'], 0, { cacheScope: 'public', ttlMs: 400 });
    const own = await rawServer(['mine'], 0, { cacheScope: 'private', ttlMs: 60_000 });
    servers.push(shared.server, own.server);
    const gateway = await gatewayFor([['shared', shared.url], ['own', own.url]], [], { shared: { tools: { '*': ['mcp'], secret: ['admin'] } } });
    parts.as.addResource(gateway.resource, { scopes: ['mcp', 'admin'] });
    const names = (answer: Awaited<ReturnType<typeof list>>): string[] => answer.json.result.tools.map((t: { name: string }) => t.name);
    const admin = await list(gateway, undefined, { sub: 'alice', scope: 'mcp admin' });
    const plain = await list(gateway, undefined, { sub: 'bob', scope: 'mcp' });
    assert.deepEqual(names(admin), ['shared__open', 'shared__secret', 'own__mine']);
    assert.deepEqual(names(plain), ['shared__open', 'own__mine'], 'a reused page is filtered by the caller\'s policy');
    assert.equal(admin.json.result.cacheScope, 'private');
    assert.equal(shared.lists, 1, 'the public page was asked once for both callers');
    assert.equal(own.lists, 2, 'a private page is asked for each request');
    await new Promise((resolve) => setTimeout(resolve, 450));
    await list(gateway);
    assert.equal(shared.lists, 2, 'a page is asked again once its ttlMs has passed');
  });

  it("are reused for a server the operator says lists alike for everyone (listReuseMs), hints or not, in 2025 too", async () => {
    const plain = await rawServer(['p1']);
    servers.push(plain.server);
    const gateway = await gatewayFor([['plain', plain.url]], [], {}, { plain: { listReuseMs: 60_000 } });
    const token = await parts.as.issueAccessToken({ resource: gateway.resource, scope: 'mcp', sub: 'carol' });
    for (let i = 0; i < 3; i++) {
      const answer = await postMcp(`${gateway.url}/mcp`, { jsonrpc: '2.0', id: i + 1, method: 'tools/list', params: {} }, token);
      assert.equal(answer.status, 200, answer.text);
      assert.deepEqual(answer.json.result.tools.map((t: { name: string }) => t.name), ['plain__p1']);
    }
    await list(gateway);
    assert.equal(plain.lists, 2, 'asked once for the sessionless 2025 lists and once for the 2026-07-28 one');
  });
});

describe('a server that forgot the session (restarted)', () => {
  it('gets a new session from the gateway and the request again, once, within the same client session', async () => {
    const raw = await sessionfulServer();
    servers.push(raw.server);
    const gateway = await gatewayFor([['raw', raw.url]]);
    const token = await parts.as.issueAccessToken({ resource: gateway.resource, scope: 'mcp', sub: 'alice' });
    const init = await postMcp(`${gateway.url}/mcp`, { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } } }, token);
    const headers = { 'mcp-session-id': String(init.headers['mcp-session-id']), 'mcp-protocol-version': '2025-11-25' };
    const call = () => postMcp(`${gateway.url}/mcp`, { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'raw__echo', arguments: {} } }, token, headers);
    assert.match((await call()).json.result.content[0].text, /^s1: echo$/);
    raw.forget();
    const after = await call();
    assert.equal(after.status, 200, after.text);
    assert.match(after.json.result.content[0].text, /^s2: echo$/);
    raw.forget();
    const listed = await postMcp(`${gateway.url}/mcp`, { jsonrpc: '2.0', id: 3, method: 'tools/list' }, token, headers);
    assert.deepEqual(listed.json.result.tools.map((t: { name: string }) => t.name), ['raw__echo']);
    assert.equal(raw.initializes, 3);
  });
});

describe('an input-required result (2026-07-28)', () => {
  it('reaches the client unchanged, and its retry with requestState reaches the same server unchanged', async () => {
    const seen: unknown[] = [];
    const server = createServer((req, res) => {
      let body = '';
      req.on('data', (chunk: Buffer) => (body += chunk.toString()));
      req.on('end', () => {
        const message = JSON.parse(body) as { id: number; method: string; params?: Record<string, unknown> };
        seen.push(message.params);
        const retried = message.params?.requestState === 'opaque-1';
        const result =
          message.method === 'tools/list'
            ? { resultType: 'complete', tools: [{ name: 'ask', inputSchema: { type: 'object' } }] }
            : retried
              ? { resultType: 'complete', content: [{ type: 'text', text: `answered ${JSON.stringify(message.params?.inputResponses)}` }] }
              : { resultType: 'input_required', inputRequests: { q: { method: 'elicitation/create', params: { mode: 'form', message: 'Name?', requestedSchema: { type: 'object' } } } }, requestState: 'opaque-1' };
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: message.id, result }));
      });
    }).listen(0, '127.0.0.1');
    await once(server, 'listening');
    servers.push(server);
    const other = await rawServer(['x']);
    servers.push(other.server);
    const gateway = await gatewayFor([['other', other.url], ['asker', `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`]]);
    const token = await parts.as.issueAccessToken({ resource: gateway.resource, scope: 'mcp', sub: 'alice' });
    const call = (params: Record<string, unknown>) =>
      postMcp(`${gateway.url}/mcp`, { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'asker__ask', arguments: {}, ...params, _meta: META } }, token, {
        'mcp-protocol-version': STATELESS,
        'mcp-method': 'tools/call',
        'mcp-name': 'asker__ask',
      });
    const first = await call({});
    assert.equal(first.status, 200, first.text);
    assert.equal(first.json.result.resultType, 'input_required');
    assert.equal(first.json.result.requestState, 'opaque-1');
    const second = await call({ inputResponses: { q: { action: 'accept', content: { name: 'Ada' } } }, requestState: first.json.result.requestState });
    assert.equal(second.status, 200, second.text);
    assert.match(second.json.result.content[0].text, /Ada/);
    const last = seen.at(-1) as Record<string, unknown>;
    assert.equal(last.requestState, 'opaque-1');
    assert.equal(last.name, 'ask', 'the server sees its own name');
  });
});

describe('server/discover across servers (2026-07-28)', () => {
  it('answers the revisions every server that answered supports: one down, too slow or giving none does not narrow them', async () => {
    const first = await rawServer([], 0, {}, [STATELESS, '2025-11-25']);
    const second = await rawServer([], 0, {}, ['2025-06-18', '2025-11-25', STATELESS]);
    // Had it answered in time, only 2026-07-28 would be left.
    const tooSlow = await rawServer([], 1_500, {}, [STATELESS]);
    const none = await rawServer([]);
    servers.push(first.server, second.server, tooSlow.server, none.server);
    const down = `http://127.0.0.1:${await freePort()}/mcp`;
    const gateway = await gatewayFor([['first', first.url], ['down', down], ['slow', tooSlow.url], ['none', none.url], ['second', second.url]]);
    const answer = await stateless(gateway, 'server/discover');
    assert.equal(answer.status, 200, answer.text);
    assert.deepEqual(answer.json.result.supportedVersions, [STATELESS, '2025-11-25']);
    assert.ok(none.received.some((r) => r.method === 'server/discover'), 'the server giving no revisions was asked');
  });

  it('answers as a merged list does when no server answered: 502, or 504 when every one timed out', async () => {
    const down = `http://127.0.0.1:${await freePort()}/mcp`;
    const none = await rawServer(['n']);
    const tooSlow = await rawServer([], 1_500, {}, [STATELESS]);
    servers.push(none.server, tooSlow.server);
    const unreachable = await gatewayFor([['down', down]]);
    const listed = await list(unreachable);
    const discovered = await stateless(unreachable, 'server/discover');
    assert.equal(listed.status, 502, listed.text);
    assert.deepEqual([discovered.status, discovered.json.error.code], [listed.status, listed.json.error.code], discovered.text);
    assert.equal(discovered.json.error.message, 'No server answered server/discover');
    // A server that answers without revisions has not answered the question either.
    const refusing = await stateless(await gatewayFor([['down', down], ['none', none.url]]), 'server/discover');
    assert.deepEqual([refusing.status, refusing.json.error.code], [502, -32603], refusing.text);
    const late = await gatewayFor([['slow', tooSlow.url]]);
    const timedOut = await stateless(late, 'server/discover');
    assert.deepEqual([timedOut.status, timedOut.json.error.code], [504, -32603], timedOut.text);
    assert.equal(timedOut.json.error.message, 'No server answered server/discover');
  });
});

describe('server/discover after a refusal that may pass (2026-07-28)', () => {
  it('asks a server that answered 429 again on the next discover, not a minute later', async () => {
    let discovers = 0;
    const limited = createServer(async (req, res) => {
      const message = await readJsonBody(req);
      if (message?.id === undefined) return void res.writeHead(202).end();
      // The first discover meets the server's rate limit; the next is answered.
      if (message.method === 'server/discover' && ++discovers === 1) return void res.writeHead(429, { 'retry-after': '1' }).end();
      const result = message.method === 'server/discover' ? { resultType: 'complete', supportedVersions: [STATELESS], capabilities: { tools: {} }, serverInfo: { name: 'limited', version: '1' } } : { resultType: 'complete' };
      const text = JSON.stringify({ jsonrpc: '2.0', id: message.id, result });
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) }).end(text);
    }).listen(0, '127.0.0.1');
    await once(limited, 'listening');
    servers.push(limited);
    const gateway = await gatewayFor([['limited', `http://127.0.0.1:${(limited.address() as AddressInfo).port}/mcp`]]);
    const refused = await stateless(gateway, 'server/discover');
    assert.equal(refused.status, 502, refused.text);
    const answered = await stateless(gateway, 'server/discover');
    assert.equal(answered.status, 200, answered.text);
    assert.deepEqual(answered.json.result.supportedVersions, [STATELESS]);
    assert.equal(discovers, 2, 'asked again at once');
  });
});

describe('a call routed by its body (2026-07-28)', () => {
  it('rewrites Mcp-Name for its server, passes Mcp-Param-* on, and refuses a mismatched Mcp-Name as one upstream does', async () => {
    const alpha = await rawServer(['echo']);
    const beta = await rawServer(['echo']);
    servers.push(alpha.server, beta.server);
    const gateway = await gatewayFor([['alpha', alpha.url], ['beta', beta.url]]);
    const call = (name: string, headerName: string) => stateless(gateway, 'tools/call', { name, arguments: { region: 'eu' } }, { 'mcp-name': headerName, 'mcp-param-region': 'eu' });
    const called = await call('alpha__echo', 'alpha__echo');
    assert.equal(called.status, 200, called.text);
    assert.equal(called.json.result.content[0].text, 'called echo');
    const got = alpha.received.filter((r) => r.method === 'tools/call');
    assert.equal(got.length, 1);
    assert.equal(got[0]!.params?.name, 'echo', 'the body names the server\'s own tool');
    assert.equal(got[0]!.headers['mcp-name'], 'echo', 'and so does Mcp-Name');
    assert.equal(got[0]!.headers['mcp-param-region'], 'eu');
    assert.ok(!beta.received.some((r) => r.method === 'tools/call'), 'the other server is not asked');

    // As the single-server gateway answers it: 400 with -32020, naming both values; no server is asked.
    const mismatched = await call('alpha__echo', 'beta__echo');
    assert.equal(mismatched.status, 400, mismatched.text);
    assert.equal(mismatched.json.error.code, -32020);
    assert.equal(mismatched.json.error.message, "Header mismatch: Mcp-Name header value 'beta__echo' does not match body value 'alpha__echo'");
    const local = await call('alpha__echo', 'echo');
    assert.equal(local.status, 400, local.text);
    assert.equal(local.json.error.code, -32020, 'the server\'s own name is not the exposed one');
    assert.equal(alpha.received.filter((r) => r.method === 'tools/call').length + beta.received.filter((r) => r.method === 'tools/call').length, 1);
  });
});
