// The connect flow through the whole gateway: a real gateway (token verification, pipeline, HTTP upstream exchange)
// in front of a real HTTP MCP server that accepts only its own bearer tokens, with connected credentials over a
// memory store. A user without a connection is led to connect (never a 5xx, the upstream never contacted); the retry
// reaches the upstream without the gateway's state; a refused token is refreshed once; a missing scope is a step-up,
// once.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { loadGatewayConfig } from '../../../../src/gateway/config/gateway-config.js';
import { connectedCredentials, type ConnectionRecords } from '../../../../src/gateway/connected/flow/connected-credentials.js';
import { CONNECT_INPUT_KEY } from '../../../../src/gateway/connected/flow/connection-required-answer.js';
import { createRequestStates } from '../../../../src/gateway/connected/flow/request-state.js';
import { connectionKey, type ConnectionRecord, type UserRef } from '../../../../src/gateway/connected/oauth/connection-record.js';
import { createMemoryTokenStore } from '../../../../src/gateway/connected/store/memory-token-store.js';
import { startGateway, type RunningGateway } from '../../../../src/gateway/server/start-gateway.js';
import { startTestIssuer, type TestIssuer } from '../../../helpers/fake-issuer.js';
import { postMcp } from '../../../helpers/http-client.js';
import { closeServer, listenOnLoopback } from '../../../helpers/loopback-server.js';

const STATELESS = '2026-07-28';
const LEGACY = '2025-11-25';
const URL_CAPS = { elicitation: { url: {} } };
const meta = (capabilities: unknown = URL_CAPS) => ({ 'io.modelcontextprotocol/protocolVersion': STATELESS, 'io.modelcontextprotocol/clientCapabilities': capabilities });

/** Upstream tokens the upstream accepts, and the scopes each holds. */
const UPSTREAM_TOKENS = new Map<string, string[]>();

interface Seen {
  readonly authorization: string | undefined;
  readonly message: { method: string; params?: Record<string, unknown> };
}

/** A small MCP server that is its own OAuth resource server: its tokens only, `write` needs `notes:write`. */
function startUpstream(seen: Seen[]): Server {
  return createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      // The gateway ends the upstream sessions it opened (at shutdown too): a DELETE carries no message.
      if (req.method === 'DELETE') return void res.writeHead(200).end();
      const message = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { id?: number; method: string; params?: Record<string, unknown> };
      seen.push({ authorization: req.headers.authorization, message });
      const token = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
      const scopes = token === undefined ? undefined : UPSTREAM_TOKENS.get(token);
      if (!scopes) return void res.writeHead(401, { 'www-authenticate': 'Bearer error="invalid_token"' }).end();
      if (message.id === undefined) return void res.writeHead(202).end();
      if (message.method === 'tools/call' && message.params?.name === 'write' && !scopes.includes('notes:write')) {
        return void res.writeHead(403, { 'www-authenticate': 'Bearer error="insufficient_scope", scope="notes:write"', 'content-type': 'application/json' }).end('{}');
      }
      const stateless = req.headers['mcp-protocol-version'] === STATELESS;
      const headers: Record<string, string> = { 'content-type': 'application/json' };
      let result: Record<string, unknown>;
      if (message.method === 'initialize') {
        headers['mcp-session-id'] = randomBytes(8).toString('hex');
        result = { protocolVersion: LEGACY, capabilities: { tools: {} }, serverInfo: { name: 'notes', version: '1' } };
      } else if (message.method === 'tools/list') result = { tools: [{ name: 'read', inputSchema: { type: 'object' } }] };
      else result = { content: [{ type: 'text', text: `called ${String(message.params?.name)}` }] };
      res.writeHead(200, headers).end(JSON.stringify({ jsonrpc: '2.0', id: message.id, result: stateless ? { resultType: 'complete', ...result } : result }));
    });
  });
}

describe('the connect flow through the gateway', () => {
  let issuer: TestIssuer;
  let upstream: Server;
  let gateway: RunningGateway;
  const seen: Seen[] = [];
  const store = createMemoryTokenStore({ maxEntries: 100 });
  const tickets: { user: UserRef; scope: string | undefined }[] = [];
  const refreshes: string[] = [];
  const ended: string[] = [];
  /** What a refresh of each subject's connection gives. */
  const refreshTo = new Map<string, ConnectionRecord | undefined>();
  /** Reads of each subject's connection from the store. */
  const reads = new Map<string, number>();
  let nextId = 1;

  const record = (accessToken: string, scope = 'notes:read'): ConnectionRecord => ({ accessToken, tokenType: 'Bearer', scope, asIssuer: 'https://as.example', clientId: 'gw', createdAt: Date.now(), updatedAt: Date.now() });
  const connect = async (subject: string, value: ConnectionRecord) => store.set(connectionKey({ issuer: issuer.issuer, subject }, ''), JSON.stringify(value));
  const records: ConnectionRecords = {
    async get(user, server) {
      reads.set(user.subject, (reads.get(user.subject) ?? 0) + 1);
      const text = await store.get(connectionKey(user, server));
      return text === undefined ? undefined : (JSON.parse(text) as ConnectionRecord);
    },
    async refresh(user, server) {
      refreshes.push(user.subject);
      const next = refreshTo.get(user.subject);
      if (next) await store.set(connectionKey(user, server), JSON.stringify(next));
      return next;
    },
    async end(user, server) {
      ended.push(user.subject);
      await store.delete(connectionKey(user, server));
    },
    async clearStepUp(user, server) {
      const text = await store.get(connectionKey(user, server));
      if (text === undefined) return;
      const { stepUpScope: _cleared, ...rest } = JSON.parse(text) as ConnectionRecord;
      await store.set(connectionKey(user, server), JSON.stringify(rest));
    },
  };

  const post = async (subject: string, message: Record<string, unknown>, headers: Record<string, string>) => {
    const token = await issuer.sign({ aud: gateway.resource, sub: subject, scope: 'mcp' });
    return postMcp(gateway.resource, { jsonrpc: '2.0', id: nextId++, ...message }, token, headers);
  };
  const call2026 = (subject: string, name: string, extra: Record<string, unknown> = {}, capabilities: unknown = URL_CAPS) =>
    post(subject, { method: 'tools/call', params: { name, arguments: { text: 'hi' }, ...extra, _meta: meta(capabilities) } }, { 'mcp-protocol-version': STATELESS, 'mcp-method': 'tools/call', 'mcp-name': name });
  const call2025 = (subject: string, message: Record<string, unknown>, session?: string) =>
    post(subject, message, { 'mcp-protocol-version': LEGACY, ...(session ? { 'mcp-session-id': session } : {}) });

  before(async () => {
    issuer = await startTestIssuer();
    upstream = startUpstream(seen);
    const upstreamUrl = `${await listenOnLoopback(upstream)}/mcp`;
    const config = loadGatewayConfig({ MCP_AUTH_UPSTREAM: upstreamUrl, MCP_AUTH_ISSUER: issuer.issuer, HOST: '127.0.0.1', PORT: '0' });
    const credentials = connectedCredentials({
      server: '',
      records,
      requestStates: createRequestStates({ secrets: [randomBytes(32)] }),
      createTicket: async (user, _server, scope) => {
        tickets.push({ user, scope });
        return new URL(`/connect/${randomBytes(32).toString('base64url')}`, gateway.url);
      },
    });
    gateway = await startGateway(config, { log: () => {}, warn: () => {}, upstreamCredentials: credentials });
  });
  after(async () => {
    await gateway?.shutdown();
    if (upstream) closeServer(upstream);
    await issuer?.close();
    await store.close();
  });

  it('2026-07-28 without a connection: input_required with a URL elicitation; the retry after connecting reaches the upstream without the gateway state', { timeout: 10_000 }, async () => {
    const before = seen.length;
    const first = await call2026('alice', 'read');
    assert.equal(first.status, 200, first.text);
    const result = first.json.result;
    assert.equal(result.resultType, 'input_required');
    const elicitation = result.inputRequests[CONNECT_INPUT_KEY];
    assert.equal(elicitation.method, 'elicitation/create');
    assert.equal(elicitation.params.mode, 'url');
    assert.ok(elicitation.params.url.startsWith(`${gateway.url}/connect/`), elicitation.params.url);
    assert.ok(!elicitation.params.url.includes('alice'), 'the link names no user');
    assert.match(result.requestState, /^mcpg1\./);
    assert.equal(seen.length, before, 'the upstream was not contacted');
    assert.equal(tickets.at(-1)?.user.subject, 'alice');

    // Retried before connecting: asked again, with a new state (the first one is used up).
    const inputResponses = { [CONNECT_INPUT_KEY]: { action: 'accept' } };
    const early = await call2026('alice', 'read', { requestState: result.requestState, inputResponses });
    assert.equal(early.json.result.resultType, 'input_required', early.text);
    assert.notEqual(early.json.result.requestState, result.requestState);
    assert.equal(seen.length, before, 'the upstream was not contacted');

    UPSTREAM_TOKENS.set('up-alice-1', ['notes:read']);
    await connect('alice', record('up-alice-1'));
    const retry = await call2026('alice', 'read', { requestState: early.json.result.requestState, inputResponses });
    assert.equal(retry.status, 200, retry.text);
    assert.equal(retry.json.result.content[0].text, 'called read');
    const forwarded = seen.at(-1)!;
    assert.equal(forwarded.authorization, 'Bearer up-alice-1', "the user's own upstream token");
    assert.equal(forwarded.message.params?.requestState, undefined, 'the upstream never sees the gateway state');
    assert.equal(forwarded.message.params?.inputResponses, undefined);
    assert.ok(!JSON.stringify(retry.json).includes('up-alice-1'), 'no upstream token reaches the client');

    const replayed = await call2026('alice', 'read', { requestState: early.json.result.requestState, inputResponses });
    assert.equal(replayed.status, 200);
    assert.match(replayed.json.error.message, /requestState was already used/);
    assert.equal(seen.length, before + 1, 'a replay is not forwarded');
  });

  it("another caller's state and a state for other arguments are refused", { timeout: 10_000 }, async () => {
    const first = await call2026('mallory', 'read');
    const state = first.json.result.requestState as string;
    const stolen = await call2026('alice', 'read', { requestState: state });
    assert.match(stolen.json.error.message, /issued to another user/);
    const other = await post('mallory', { method: 'tools/call', params: { name: 'read', arguments: { text: 'other' }, requestState: state, _meta: meta() } }, { 'mcp-protocol-version': STATELESS, 'mcp-method': 'tools/call', 'mcp-name': 'read' });
    assert.match(other.json.error.message, /issued for another request/);
  });

  it('2026-07-28 without URL elicitation, and lists: a tool result with the link; an empty list noting the need', { timeout: 10_000 }, async () => {
    const plain = await call2026('bob', 'read', {}, {});
    assert.equal(plain.status, 200);
    assert.equal(plain.json.result.isError, true);
    assert.match(plain.json.result.content[0].text, /\/connect\/.*retry/);
    const list = await post('bob', { method: 'tools/list', params: { _meta: meta() } }, { 'mcp-protocol-version': STATELESS, 'mcp-method': 'tools/list' });
    assert.equal(list.status, 200, list.text);
    assert.deepEqual(list.json.result.tools, []);
    assert.match(list.json.result._meta[CONNECT_INPUT_KEY].url, /\/connect\//);
  });

  it('2025-11-25: -32042 for a client that declared elicitation.url, a tool result with the link for one that did not', { timeout: 10_000 }, async () => {
    const before = seen.length;
    // initialize needs no connection: the gateway answers it, and keeps what the client declared for its session.
    const init = await call2025('carol', { method: 'initialize', params: { protocolVersion: LEGACY, capabilities: URL_CAPS, clientInfo: { name: 't', version: '1' } } });
    assert.equal(init.status, 200, init.text);
    assert.equal(init.json.result.protocolVersion, LEGACY);
    const session = init.headers['mcp-session-id'] as string;
    assert.ok(session);
    const call = await call2025('carol', { method: 'tools/call', params: { name: 'read', arguments: {} } }, session);
    assert.equal(call.status, 200, call.text);
    assert.equal(call.json.error.code, -32042);
    assert.equal(call.json.error.data.elicitations[0].mode, 'url');
    assert.match(call.json.error.data.elicitations[0].url, /\/connect\//);
    assert.equal(typeof call.json.error.data.elicitations[0].elicitationId, 'string');
    const plain = await call2025('dave', { method: 'tools/call', params: { name: 'read', arguments: {} } });
    assert.equal(plain.status, 200);
    assert.equal(plain.json.result.isError, true);
    assert.match(plain.json.result.content[0].text, new RegExp(`${gateway.url}/connect/\\S+ .*retry`));
    assert.equal(seen.length, before, 'the upstream was not contacted');
  });

  it('2025-11-25 session: the capabilities of its initialize decide; a refused token is refreshed once, then the connect flow', { timeout: 10_000 }, async () => {
    UPSTREAM_TOKENS.set('up-erin-1', ['notes:read']);
    await connect('erin', record('up-erin-1'));
    const init = await call2025('erin', { method: 'initialize', params: { protocolVersion: LEGACY, capabilities: URL_CAPS, clientInfo: { name: 't', version: '1' } } });
    assert.equal(init.status, 200, init.text);
    const session = init.headers['mcp-session-id'] as string;
    assert.ok(session);
    // The upstream revokes erin's token; the refresh gives a new one: one refresh, and the call goes through.
    UPSTREAM_TOKENS.delete('up-erin-1');
    UPSTREAM_TOKENS.set('up-erin-2', ['notes:read']);
    refreshTo.set('erin', record('up-erin-2'));
    const before = seen.length;
    const renewed = await call2025('erin', { method: 'tools/call', params: { name: 'read', arguments: {} } }, session);
    assert.equal(renewed.status, 200, renewed.text);
    assert.equal(renewed.json.result.content[0].text, 'called read');
    assert.deepEqual(seen.slice(before).map((s) => s.authorization), ['Bearer up-erin-1', 'Bearer up-erin-2']);
    assert.deepEqual(refreshes.filter((s) => s === 'erin').length, 1);
    // Revoked again, and the refresh gives nothing: the connect flow, as this session's client declared (-32042).
    UPSTREAM_TOKENS.delete('up-erin-2');
    refreshTo.set('erin', undefined);
    const expired = await call2025('erin', { method: 'tools/call', params: { name: 'read', arguments: {} } }, session);
    assert.equal(expired.status, 200, expired.text);
    assert.equal(expired.json.error.code, -32042);
    assert.match(expired.json.error.data.elicitations[0].message, /expired/);
    assert.deepEqual(refreshes.filter((s) => s === 'erin').length, 2, 'one refresh per refused request');
  });

  it('2025-11-25: the token store is read once per exchange, when the gateway opens the upstream session for a request, and when it forwards an initialize', { timeout: 10_000 }, async () => {
    const initialize = { method: 'initialize', params: { protocolVersion: LEGACY, capabilities: {}, clientInfo: { name: 't', version: '1' } } };
    // Not connected yet: the gateway answers initialize itself, and opens the upstream's session on the first request after connecting.
    const init = await call2025('judy', initialize);
    assert.equal(init.status, 200, init.text);
    const session = init.headers['mcp-session-id'] as string;
    UPSTREAM_TOKENS.set('up-judy-1', ['notes:read']);
    await connect('judy', record('up-judy-1'));
    const before = seen.length;
    let readsBefore = reads.get('judy') ?? 0;
    const call = await call2025('judy', { method: 'tools/call', params: { name: 'read', arguments: {} } }, session);
    assert.equal(call.status, 200, call.text);
    assert.equal(call.json.result.content[0].text, 'called read');
    assert.deepEqual(seen.slice(before).map((s) => [s.message.method, s.authorization]), [
      ['initialize', 'Bearer up-judy-1'],
      ['notifications/initialized', 'Bearer up-judy-1'],
      ['tools/call', 'Bearer up-judy-1'],
    ]);
    assert.equal((reads.get('judy') ?? 0) - readsBefore, 1, 'one read for the opening and the request it opened for');
    // Connected: the client's initialize is forwarded, the store read once for it.
    readsBefore = reads.get('judy') ?? 0;
    const forwarded = await call2025('judy', initialize);
    assert.equal(forwarded.status, 200, forwarded.text);
    assert.equal(forwarded.json.result.serverInfo.name, 'notes', "the upstream's answer");
    assert.equal((reads.get('judy') ?? 0) - readsBefore, 1, 'one read for the forwarded initialize');
  });

  it('a token still refused after a refresh: the connection is ended and the caller led to connect, once; one just made stays a 502', { timeout: 10_000 }, async () => {
    // hana's connection is an hour old; both its token and the refreshed one are refused by the upstream.
    await connect('hana', { ...record('up-hana-1'), createdAt: Date.now() - 3_600_000 });
    refreshTo.set('hana', { ...record('up-hana-2'), createdAt: Date.now() - 3_600_000 });
    const refused = await call2026('hana', 'read');
    assert.equal(refused.status, 200, refused.text);
    assert.equal(refused.json.result.resultType, 'input_required', refused.text);
    assert.deepEqual(ended, ['hana'], 'the connection was ended');
    const again = await call2026('hana', 'read');
    assert.equal(again.json.result.resultType, 'input_required');
    assert.equal(refreshes.filter((s) => s === 'hana').length, 1, 'no refresh grant per later request');
    // ivan connected a moment ago and is refused at once: a configuration fault, not a reason to connect again.
    await connect('ivan', record('up-ivan-1'));
    refreshTo.set('ivan', record('up-ivan-2'));
    const fault = await call2026('ivan', 'read');
    assert.equal(fault.status, 502, fault.text);
    assert.ok(!ended.includes('ivan'));
  });

  it('upstream 403 insufficient_scope: a step-up carrying the scope, once; the retry refused again passes the 403 on', { timeout: 10_000 }, async () => {
    UPSTREAM_TOKENS.set('up-frank-1', ['notes:read']);
    await connect('frank', record('up-frank-1'));
    const before = seen.length;
    const first = await call2026('frank', 'write');
    assert.equal(first.status, 200, first.text);
    assert.equal(first.json.result.resultType, 'input_required');
    assert.match(first.json.result.inputRequests[CONNECT_INPUT_KEY].params.message, /notes:write/);
    assert.equal(tickets.at(-1)?.scope, 'notes:read notes:write');
    assert.equal(seen.length, before + 1, 'one upstream request');
    // The user connected again but the server still grants no notes:write: the retry's 403 is the answer, no loop.
    const retry = await call2026('frank', 'write', { requestState: first.json.result.requestState, inputResponses: { [CONNECT_INPUT_KEY]: { action: 'accept' } } });
    assert.equal(retry.status, 403, retry.text);
    assert.equal(retry.headers['www-authenticate'], undefined, "the upstream's challenge is not the client's");
    assert.equal(seen.length, before + 2);
    // A connection that already holds the scope: the 403 passes on at once.
    await connect('grace', record('up-grace-1', 'notes:read notes:write'));
    UPSTREAM_TOKENS.set('up-grace-1', ['notes:read']);
    const held = await call2026('grace', 'write');
    assert.equal(held.status, 403, held.text);
  });

  it('a connection made for a step-up that the server granted less: a final 403 naming the scope, no new link, whatever the client; once', { timeout: 10_000 }, async () => {
    // kate connected again for notes:write after a step-up, and the authorization server granted notes:read only.
    UPSTREAM_TOKENS.set('up-kate-1', ['notes:read']);
    const stepUp = { ...record('up-kate-1'), stepUpScope: 'notes:read notes:write' };
    const refusals = [];
    for (const send of [
      () => call2025('kate', { method: 'tools/call', params: { name: 'write', arguments: {} } }),
      () => call2026('kate', 'write'),
      () => call2026('kate', 'write', {}, {}),
    ]) {
      await connect('kate', stepUp);
      const ticketsBefore = tickets.length;
      refusals.push(await send());
      assert.equal(tickets.length, ticketsBefore, 'no connect link was made');
    }
    for (const refused of refusals) {
      assert.equal(refused.status, 403, refused.text);
      assert.equal(refused.json.error.code, -31403, refused.text);
      assert.match(refused.json.error.message, /authorization server of the upstream MCP server did not grant .*\(notes:write\)/);
      assert.doesNotMatch(refused.text, /\/connect\//, 'no new link');
      assert.equal(refused.headers['www-authenticate'], undefined);
    }
    // Refused once: the next request asks again (an administrator may have granted the scope since), the user in
    // the browser each round.
    const next = await call2026('kate', 'write');
    assert.equal(next.status, 200, next.text);
    assert.equal(next.json.result.resultType, 'input_required');
    assert.equal(tickets.at(-1)?.scope, 'notes:read notes:write');
  });

  it('a token naming no user is refused with 403, not led to connect', { timeout: 10_000 }, async () => {
    const token = await issuer.sign({ aud: gateway.resource, sub: undefined, client_id: 'service', scope: 'mcp' });
    const answer = await postMcp(gateway.resource, { jsonrpc: '2.0', id: nextId++, method: 'tools/call', params: { name: 'read', arguments: {} } }, token, { 'mcp-protocol-version': LEGACY });
    assert.equal(answer.status, 403, answer.text);
    assert.match(answer.json.error.message, /names no user/);
  });
});

describe('the connect flow for one server of a server set', () => {
  let issuer: TestIssuer;
  const upstreams: Server[] = [];
  let gateway: RunningGateway;
  const seen: Seen[] = [];
  const store = createMemoryTokenStore({ maxEntries: 100 });
  let nextId = 1;

  const records: ConnectionRecords = {
    async get(user, server) {
      const text = await store.get(connectionKey(user, server));
      return text === undefined ? undefined : (JSON.parse(text) as ConnectionRecord);
    },
    refresh: async () => undefined,
    end: async (user, server) => void (await store.delete(connectionKey(user, server))),
    clearStepUp: async () => undefined,
  };
  const post = async (subject: string, message: Record<string, unknown>, headers: Record<string, string>) => {
    const token = await issuer.sign({ aud: gateway.resource, sub: subject, scope: 'mcp' });
    return postMcp(gateway.resource, { jsonrpc: '2.0', id: nextId++, ...message }, token, headers);
  };
  const open2025 = async (subject: string, capabilities: unknown) => {
    const init = await post(subject, { method: 'initialize', params: { protocolVersion: LEGACY, capabilities, clientInfo: { name: 't', version: '1' } } }, { 'mcp-protocol-version': LEGACY });
    assert.equal(init.status, 200, init.text);
    return init.headers['mcp-session-id'] as string;
  };

  before(async () => {
    issuer = await startTestIssuer();
    const notes = startUpstream(seen);
    const open = startUpstream([]);
    upstreams.push(notes, open);
    const notesUrl = `${await listenOnLoopback(notes)}/mcp`;
    const openUrl = `${await listenOnLoopback(open)}/mcp`;
    UPSTREAM_TOKENS.set('open-service-token', ['notes:read']);
    const config = loadGatewayConfig({ MCP_AUTH_ISSUER: issuer.issuer, HOST: '127.0.0.1', PORT: '0' }, { upstreamRequired: false });
    const servers = [
      { name: 'notes', transport: 'http' as const, proxy: { upstream: notesUrl }, required: false },
      { name: 'open', transport: 'http' as const, proxy: { upstream: openUrl }, required: false },
    ];
    const serverCredentials = new Map([
      ['notes', connectedCredentials({ server: 'notes', records, requestStates: createRequestStates({ secrets: [randomBytes(32)] }), createTicket: async () => new URL(`/connect/${randomBytes(32).toString('base64url')}`, gateway.url) })],
      ['open', { authorization: async () => 'Bearer open-service-token', renew: async () => undefined }],
    ]);
    gateway = await startGateway({ ...config, servers, listTimeoutMs: 2_000 }, { log: () => {}, warn: () => {}, serverCredentials });
  });
  after(async () => {
    await gateway?.shutdown();
    for (const server of upstreams) closeServer(server);
    await issuer?.close();
    await store.close();
  });

  it('2025-11-25 sessions: -32042 with the URL elicitation, or a tool result with the link; after connecting, the call goes through', { timeout: 10_000 }, async () => {
    const withUrl = await open2025('henry', URL_CAPS);
    const refused = await post('henry', { method: 'tools/call', params: { name: 'notes__read', arguments: {} } }, { 'mcp-protocol-version': LEGACY, 'mcp-session-id': withUrl });
    assert.equal(refused.status, 200, refused.text);
    assert.equal(refused.json.error.code, -32042);
    assert.match(refused.json.error.data.elicitations[0].url, /\/connect\//);
    const plain = await open2025('henry', {});
    const text = await post('henry', { method: 'tools/call', params: { name: 'notes__read', arguments: {} } }, { 'mcp-protocol-version': LEGACY, 'mcp-session-id': plain });
    assert.equal(text.json.result.isError, true);
    assert.match(text.json.result.content[0].text, /\/connect\/.*retry/);
    const openCall = await post('henry', { method: 'tools/call', params: { name: 'open__read', arguments: {} } }, { 'mcp-protocol-version': LEGACY, 'mcp-session-id': plain });
    assert.equal(openCall.json.result.content[0].text, 'called read', 'the other server is not affected');
    UPSTREAM_TOKENS.set('up-henry-1', ['notes:read']);
    await store.set(connectionKey({ issuer: issuer.issuer, subject: 'henry' }, 'notes'), JSON.stringify({ accessToken: 'up-henry-1', tokenType: 'Bearer', asIssuer: 'x', clientId: 'gw', createdAt: 0, updatedAt: 0 }));
    const after = await post('henry', { method: 'tools/call', params: { name: 'notes__read', arguments: {} } }, { 'mcp-protocol-version': LEGACY, 'mcp-session-id': withUrl });
    assert.equal(after.status, 200, after.text);
    assert.equal(after.json.result.content[0].text, 'called read');
    assert.equal(seen.at(-1)?.authorization, 'Bearer up-henry-1');
  });

  it('2026-07-28: input_required for the server not connected; its list part is empty, the other server listed', { timeout: 10_000 }, async () => {
    const call = await post('ivy', { method: 'tools/call', params: { name: 'notes__read', arguments: {}, _meta: meta() } }, { 'mcp-protocol-version': STATELESS, 'mcp-method': 'tools/call', 'mcp-name': 'notes__read' });
    assert.equal(call.status, 200, call.text);
    assert.equal(call.json.result.resultType, 'input_required');
    assert.match(call.json.result.requestState, /^mcpg1\./);
    const list = await post('ivy', { method: 'tools/list', params: { _meta: meta() } }, { 'mcp-protocol-version': STATELESS, 'mcp-method': 'tools/list' });
    assert.equal(list.status, 200, list.text);
    assert.deepEqual(list.json.result.tools.map((tool: { name: string }) => tool.name), ['open__read']);
    // Connected: the retry under the exposed name reaches the server under its own, without the gateway's state.
    UPSTREAM_TOKENS.set('up-ivy-1', ['notes:read']);
    await store.set(connectionKey({ issuer: issuer.issuer, subject: 'ivy' }, 'notes'), JSON.stringify({ accessToken: 'up-ivy-1', tokenType: 'Bearer', asIssuer: 'x', clientId: 'gw', createdAt: 0, updatedAt: 0 }));
    const params = { name: 'notes__read', arguments: {}, requestState: call.json.result.requestState, inputResponses: { [CONNECT_INPUT_KEY]: { action: 'accept' } }, _meta: meta() };
    const retry = await post('ivy', { method: 'tools/call', params }, { 'mcp-protocol-version': STATELESS, 'mcp-method': 'tools/call', 'mcp-name': 'notes__read' });
    assert.equal(retry.status, 200, retry.text);
    assert.equal(retry.json.result.content[0].text, 'called read');
    assert.equal(seen.at(-1)?.message.params?.requestState, undefined);
    assert.equal(seen.at(-1)?.message.params?.name, 'read');
  });
});
