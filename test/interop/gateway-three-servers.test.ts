// One gateway endpoint in front of three real servers of different kinds: server-everything over Streamable HTTP
// (`every`), the Python stdio example (`py`), and the notes example guarded with its own audience on the same
// authorization server and reached with the gateway's client credentials (`notes`). The official SDK client signs
// in with OAuth, lists, calls each server, answers a sampling request and resumes a lost stream; the notes server
// never sees the client's token; a 2026-07-28 client discovers, lists, calls and listens; and server-everything and
// the notes server are stopped and restarted on their ports.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, CreateMessageRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { decodeJwt } from 'jose';
import { DEMO_PASSWORD, DEMO_USERNAME, startAuthorizationServer, type AuthorizationServer } from '../../examples/dev/authorization-server.js';
import { startNotesServer, type RunningNotesServer } from '../../examples/notes-server.js';
import { loadGatewayConfig } from '../../src/gateway/config/gateway-config.js';
import type { ServerConfig } from '../../src/gateway/config/server-config.js';
import { startGateway, type RunningGateway } from '../../src/gateway/server/start-gateway.js';
import { HeadlessOAuthClientProvider } from '../fixtures/sdk-oauth-provider.js';
import { droppingFetch } from '../helpers/dropping-fetch.js';
import { startEverythingServer, withTimeout, type EverythingServer } from '../helpers/everything-server.js';
import { postMcp, type HttpAnswer } from '../helpers/http-client.js';
import { pythonInterpreter, ROOT } from '../helpers/stdio-gateway.js';

const PYTHON = pythonInterpreter();
const SKIP = PYTHON ? false : 'python3 is not installed (.ci/run installs it), and the py server of the set is the Python stdio example';
const PY_SERVER = resolve(ROOT, 'examples/stdio-gateway/server.py');
const NOTES_SCOPES = ['notes:read', 'notes:write', 'notes:admin'];
const STATELESS = '2026-07-28';
const STATELESS_META = { 'io.modelcontextprotocol/protocolVersion': STATELESS, 'io.modelcontextprotocol/clientCapabilities': {} };

let as: AuthorizationServer;
let everything: EverythingServer;
let notes: RunningNotesServer;
let gateway: RunningGateway;
let callback: Server;
let redirectUrl: string;
const warnings: string[] = [];
const clients: Client[] = [];

function servers(): ServerConfig[] {
  return [
    { name: 'every', transport: 'http', proxy: { upstream: everything.url }, required: false },
    { name: 'py', transport: 'stdio', stdio: { command: PYTHON!, args: [PY_SERVER] }, required: false },
    {
      name: 'notes',
      transport: 'http',
      proxy: { upstream: notes.url },
      upstreamAuth: {
        mode: 'client_credentials',
        upstream: notes.url,
        clientId: as.serviceClient.clientId,
        clientSecret: as.serviceClient.clientSecret,
        scope: 'notes:read',
        gatewayIssuers: [as.issuer],
        timeoutMs: 5_000,
      },
      required: false,
    },
  ];
}

const token = (sub = 'alice'): Promise<string> => as.issueAccessToken({ resource: gateway.resource, scope: 'mcp', sub });
const names = async (client: Client): Promise<string[]> => (await withTimeout(client.listTools(), 10_000, 'tools/list')).tools.map((t) => t.name);
/** Whether a warning line named that server. */
const warnedAbout = (server: string): boolean => warnings.some((line) => (JSON.parse(line) as { server?: unknown }).server === server);
const textOf = (result: unknown): string => (result as { content: { type: string; text: string }[] }).content[0]!.text;

/** An SDK client of the endpoint that answers sampling requests. */
function newClient(): Client {
  const client = new Client({ name: 'three-servers', version: '1.0.0' }, { capabilities: { sampling: {} } });
  client.setRequestHandler(CreateMessageRequestSchema, async (request) => ({
    model: 'test-model',
    role: 'assistant',
    content: { type: 'text', text: `sampled reply to ${request.params.messages.length} message(s)` },
  }));
  client.onerror = () => {}; // a deliberately lost stream is reported here
  clients.push(client);
  return client;
}

/** An SDK client connected with a token from the test authorization server. */
async function connectWithToken(sub: string): Promise<Client> {
  const client = newClient();
  const transport = new StreamableHTTPClientTransport(new URL(gateway.resource), { requestInit: { headers: { Authorization: `Bearer ${await token(sub)}` } } });
  await withTimeout(client.connect(transport), 10_000, 'initialize');
  return client;
}

describe('one gateway in front of server-everything, the Python stdio example and the notes example', { skip: SKIP, timeout: 90_000 }, () => {
  before(async () => {
    as = await startAuthorizationServer({ extraScopes: ['mcp'] });
    everything = await startEverythingServer();
    notes = await startNotesServer({ issuer: as.issuer });
    as.addResource(notes.url, { scopes: NOTES_SCOPES });
    const config = loadGatewayConfig({ MCP_AUTH_ISSUER: as.issuer, HOST: '127.0.0.1', PORT: '0', MCP_AUTH_CHALLENGE_SCOPES: 'mcp' }, { upstreamRequired: false });
    gateway = await startGateway({ ...config, servers: servers(), listTimeoutMs: 2_000 }, { log: () => {}, warn: (line) => warnings.push(line) });
    as.addResource(gateway.resource, { scopes: ['mcp'] });
    callback = createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/plain' }).end('You may close this window.'));
    callback.listen(0, '127.0.0.1');
    await once(callback, 'listening');
    redirectUrl = `http://127.0.0.1:${(callback.address() as AddressInfo).port}/callback`;
  });

  after(async () => {
    for (const client of clients) await client.close().catch(() => {});
    await gateway?.shutdown();
    everything?.stop();
    await notes?.close();
    callback?.close();
    await as?.close();
  });

  it('the SDK client signs in with OAuth, lists and calls each server, answers a sampling request, and resumes a lost stream', async () => {
    const provider = new HeadlessOAuthClientProvider({ redirectUrl, username: DEMO_USERNAME, password: DEMO_PASSWORD });
    const resumedFrom: string[] = [];
    const dropping = droppingFetch('trigger-long-running-operation', 2);
    const recording: typeof fetch = (input, init) => {
      const lastEventId = new Headers(init?.headers).get('last-event-id');
      if ((init?.method ?? 'GET') === 'GET' && lastEventId) resumedFrom.push(lastEventId);
      return dropping.fetch(input, init);
    };
    // The client resumes once the operation has ended: server-everything's own event store hands a resumed stream
    // the events stored so far, but registers it under an event id rather than its stream's, so that events of
    // an operation still running never reach it (a limitation of the server, met without a gateway too).
    const options = { authProvider: provider, fetch: recording, reconnectionOptions: { initialReconnectionDelay: 1_500, maxReconnectionDelay: 2_000, reconnectionDelayGrowFactor: 1.2, maxRetries: 3 } };
    const first = new StreamableHTTPClientTransport(new URL(gateway.resource), options);
    await assert.rejects(newClient().connect(first), UnauthorizedError);
    await first.finishAuth(provider.takeAuthorizationCode());
    assert.equal(decodeJwt(provider.tokens()!.access_token).aud, gateway.resource, 'a token for the gateway, by the full OAuth flow');

    const client = newClient();
    await withTimeout(client.connect(new StreamableHTTPClientTransport(new URL(gateway.resource), options)), 10_000, 'initialize');
    const listed = await names(client);
    for (const name of ['every__echo', 'every__trigger-sampling-request', 'py__add', 'py__whoami', 'notes__whoami']) assert.ok(listed.includes(name), `${name} in ${listed.join()}`);
    assert.ok(listed.every((name) => /^(every|py|notes)__/.test(name)), listed.join());

    assert.match(textOf(await client.callTool({ name: 'every__echo', arguments: { message: 'hello every' } })), /hello every/);
    assert.equal(textOf(await client.callTool({ name: 'py__add', arguments: { a: 2, b: 40 } })), '42');
    assert.equal(JSON.parse(textOf(await client.callTool({ name: 'notes__whoami', arguments: {} }))).client, as.serviceClient.clientId);

    const sampled = await withTimeout(client.callTool({ name: 'every__trigger-sampling-request', arguments: { prompt: 'Hi', maxTokens: 10 } }), 15_000, 'sampling');
    assert.match(JSON.stringify(sampled.content), /sampled reply to 1 message/);

    const progress: number[] = [];
    const long = await withTimeout(
      client.callTool({ name: 'every__trigger-long-running-operation', arguments: { duration: 1, steps: 4 } }, CallToolResultSchema, { onprogress: (p) => void progress.push(p.progress), timeout: 15_000 }),
      20_000,
      'long-running operation',
    );
    assert.equal(dropping.dropped(), true, 'the POST stream was cut');
    assert.match(JSON.stringify(long.content), /completed/);
    assert.deepEqual(progress, [1, 2, 3, 4]);
    // The client resumed with an id the gateway gave: a vector naming the server whose stream it was.
    assert.ok(resumedFrom.length > 0, 'resumed with Last-Event-ID');
    const vector = JSON.parse(Buffer.from(resumedFrom[0]!, 'base64url').toString('utf8')) as Record<string, string>;
    assert.deepEqual(Object.keys(vector), ['every']);
  });

  it("the notes server gets the gateway's client-credentials token, never the client's", async () => {
    const bearer = await token('dora');
    // The client's token is for the gateway's audience: the notes server itself refuses it.
    const direct = await postMcp(notes.url, { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'whoami', arguments: {} } }, bearer);
    assert.equal(direct.status, 401);
    const client = await connectWithToken('dora');
    const who = JSON.parse(textOf(await client.callTool({ name: 'notes__whoami', arguments: {} })));
    assert.equal(who.client, as.serviceClient.clientId);
    assert.equal(who.subject, as.serviceClient.clientId, "a client-credentials token speaks for the gateway's client, not the caller");
    assert.deepEqual(who.scopes, ['notes:read']);
  });

  it('2026-07-28: server/discover, tools/list and tools/call with Mcp-Method and Mcp-Name, and subscriptions/listen', async () => {
    const bearer = await token('erin');
    const headers = (method: string, name?: string): Record<string, string> => ({ 'mcp-protocol-version': STATELESS, 'mcp-method': method, ...(name ? { 'mcp-name': name } : {}) });
    const post = (id: string, method: string, params: Record<string, unknown>, name?: string): Promise<HttpAnswer> =>
      postMcp(gateway.resource, { jsonrpc: '2.0', id, method, params: { ...params, _meta: STATELESS_META } }, bearer, headers(method, name));

    const discover = await post('d', 'server/discover', {});
    assert.equal(discover.status, 200, discover.text);
    assert.equal(discover.json.result.serverInfo.name, 'mcp-oauth-guard');
    // Of the three, only the notes example answers server/discover: the versions every server that answered supports.
    assert.deepEqual(discover.json.result.supportedVersions, [STATELESS, '2025-11-25', '2025-06-18', '2025-03-26'], discover.text);
    assert.equal(discover.json.result.capabilities.tools.listChanged, true);

    const list = await post('l', 'tools/list', {});
    assert.equal(list.status, 200, list.text);
    assert.equal(list.json.result.resultType, 'complete');
    const listed: string[] = list.json.result.tools.map((t: { name: string }) => t.name);
    assert.ok(listed.includes('notes__whoami') && listed.includes('py__add'), listed.join());

    const call = await post('c', 'tools/call', { name: 'notes__whoami', arguments: {} }, 'notes__whoami');
    assert.equal(call.status, 200, call.text);
    assert.equal(call.json.result.resultType, 'complete');
    assert.equal(JSON.parse(call.json.result.content[0].text).client, as.serviceClient.clientId);
    // Mcp-Name is checked against the exposed name.
    const mismatched = await post('m', 'tools/call', { name: 'notes__whoami', arguments: {} }, 'whoami');
    assert.equal(mismatched.status, 400, mismatched.text);

    const first = await firstListenEvent(bearer, headers('subscriptions/listen'));
    assert.equal(first.method, 'notifications/subscriptions/acknowledged', JSON.stringify(first));
    assert.deepEqual(first.params.notifications, { toolsListChanged: true });
  });

  it('an upstream stopped mid-test: its tools leave the list, the others keep working, a warning names it, and it returns when restarted on its port', async () => {
    const client = await connectWithToken('frank');
    assert.ok((await names(client)).includes('every__echo'));
    assert.match(textOf(await client.callTool({ name: 'every__echo', arguments: { message: 'before' } })), /before/);

    // server-everything's process is killed.
    const everythingPort = Number(new URL(everything.url).port);
    const exited = once(everything.child, 'exit');
    everything.stop();
    await exited;
    const withoutEvery = await names(client);
    assert.ok(!withoutEvery.some((name) => name.startsWith('every__')), withoutEvery.join());
    assert.ok(withoutEvery.includes('py__add') && withoutEvery.includes('notes__whoami'), withoutEvery.join());
    assert.equal(textOf(await client.callTool({ name: 'py__add', arguments: { a: 1, b: 2 } })), '3');
    assert.equal(JSON.parse(textOf(await client.callTool({ name: 'notes__whoami', arguments: {} }))).client, as.serviceClient.clientId);
    assert.ok(warnedAbout('every'), warnings.join('\n'));

    // Restarted on its port, it is back in the same client session: the session the gateway had opened there died
    // with the process, and the gateway opens a new one when the server says it does not know the old one
    // (server-everything answers 400 rather than 404).
    everything = await startEverythingServer({ port: everythingPort });
    assert.ok((await names(client)).includes('every__echo'));
    assert.match(textOf(await client.callTool({ name: 'every__echo', arguments: { message: 'after' } })), /after/);
    const fresh = await connectWithToken('frank');
    assert.ok((await names(fresh)).includes('every__echo'));

    // The notes server (no sessions) stops and comes back on its port: the same client session sees it again.
    const notesPort = Number(new URL(notes.url).port);
    await notes.close();
    const withoutNotes = await names(client);
    assert.ok(!withoutNotes.some((name) => name.startsWith('notes__')), withoutNotes.join());
    assert.equal(textOf(await client.callTool({ name: 'py__add', arguments: { a: 2, b: 2 } })), '4');
    assert.ok(warnedAbout('notes'), warnings.join('\n'));
    notes = await startNotesServer({ issuer: as.issuer, port: notesPort });
    assert.equal(notes.url, `http://127.0.0.1:${notesPort}/mcp`);
    assert.ok((await names(client)).includes('notes__whoami'));
    assert.equal(JSON.parse(textOf(await client.callTool({ name: 'notes__whoami', arguments: {} }))).client, as.serviceClient.clientId);
  });
});

/** Opens a `subscriptions/listen` stream for tools `list_changed` and returns its first message. */
async function firstListenEvent(bearer: string, headers: Record<string, string>): Promise<Record<string, any>> {
  const abort = new AbortController();
  const response = await fetch(gateway.resource, {
    method: 'POST',
    signal: abort.signal,
    headers: { ...headers, authorization: `Bearer ${bearer}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 's', method: 'subscriptions/listen', params: { notifications: { toolsListChanged: true }, _meta: STATELESS_META } }),
  });
  assert.equal(response.status, 200);
  assert.match(response.headers.get('content-type') ?? '', /text\/event-stream/);
  const reader = response.body!.getReader();
  const decoder = new TextDecoder();
  let text = '';
  try {
    while (!text.includes('\n\n')) {
      const { done, value } = await withTimeout(reader.read(), 10_000, 'subscriptions/listen');
      if (done) break;
      text += decoder.decode(value, { stream: true });
    }
  } finally {
    abort.abort();
  }
  const data = text.split('\n\n')[0]!.split('\n').filter((line) => line.startsWith('data:')).map((line) => line.slice(5).trim()).join('\n');
  return JSON.parse(data) as Record<string, any>;
}
