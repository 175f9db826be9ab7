// Connected accounts through the running gateway, with real parts: the gateway's own authorization server (users
// alice and bob, and the gateway's sign-in client), the notes example as the upstream behind an authorization server
// of its own, the token store in a directory, and a scripted browser completing both sign-ins. Raw 2026-07-28
// requests carry the gateway's requestState.
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { startAuthorizationServer, type AuthorizationServer } from '../../../examples/dev/authorization-server.js';
import { startNotesServer, type RunningNotesServer } from '../../../examples/notes-server.js';
import { loadGatewayConfig } from '../../../src/gateway/config/gateway-config.js';
import { startGateway, type RunningGateway } from '../../../src/gateway/server/start-gateway.js';
import { freePort } from '../../helpers/free-port.js';
import { postMcp } from '../../helpers/http-client.js';
import { PageBrowser } from './pages/page-browser.js';

const STATELESS = '2026-07-28';
const USERS = [
  { username: 'alice', password: 'alice-password' },
  { username: 'bob', password: 'bob-password' },
];
const LOGIN_CLIENT = { clientId: 'gateway-login', clientSecret: 'gateway-login-secret' };
const UPSTREAM_CLIENT = { clientId: 'gateway-at-notes', clientSecret: 'gateway-at-notes-secret' };
const STORE_KEY = Buffer.from(Array.from({ length: 32 }, (_, i) => (i * 53 + 7) % 256)).toString('base64url');
const NOTES_SCOPES = ['notes:read', 'notes:write', 'notes:admin'];

let gatewayAs: AuthorizationServer;
let notesAs: AuthorizationServer;
let notes: RunningNotesServer;
let port: number;
let origin: string;
let storeDir: string;
const lines: string[] = [];
let gateway: RunningGateway | undefined;

async function start(): Promise<RunningGateway> {
  const config = loadGatewayConfig({
    MCP_AUTH_ISSUER: gatewayAs.issuer,
    HOST: '127.0.0.1',
    PORT: String(port),
    MCP_AUTH_UPSTREAM: notes.url,
    MCP_AUTH_UPSTREAM_AUTH: 'connected',
    MCP_AUTH_UPSTREAM_CLIENT_ID: UPSTREAM_CLIENT.clientId,
    MCP_AUTH_UPSTREAM_CLIENT_SECRET: UPSTREAM_CLIENT.clientSecret,
    MCP_AUTH_UPSTREAM_SCOPE: 'notes:read notes:write',
    MCP_AUTH_TOKEN_STORE: storeDir,
    MCP_AUTH_TOKEN_STORE_SECRET: STORE_KEY,
    MCP_AUTH_LOGIN_CLIENT_ID: LOGIN_CLIENT.clientId,
    MCP_AUTH_LOGIN_CLIENT_SECRET: LOGIN_CLIENT.clientSecret,
  });
  return startGateway(config, { log: (line) => lines.push(line), warn: (line) => lines.push(line) });
}

before(async () => {
  port = await freePort();
  origin = `http://127.0.0.1:${port}`;
  storeDir = join(mkdtempSync(join(tmpdir(), 'connected-gateway-')), 'tokens');
  const callback = `${origin}/connect/callback`;
  gatewayAs = await startAuthorizationServer({ users: USERS, extraScopes: ['mcp'], clients: [{ ...LOGIN_CLIENT, redirectUris: [callback] }] });
  notesAs = await startAuthorizationServer({ users: USERS, clients: [{ ...UPSTREAM_CLIENT, redirectUris: [callback] }] });
  notes = await startNotesServer({ issuer: notesAs.issuer });
  notesAs.addResource(notes.url, { scopes: NOTES_SCOPES });
  gateway = await start();
  gatewayAs.addResource(gateway.resource, { scopes: ['mcp'] });
});

after(async () => {
  await gateway?.shutdown();
  await notes?.close();
  await notesAs?.close();
  await gatewayAs?.close();
  rmSync(join(storeDir, '..'), { recursive: true, force: true });
});

const meta = { 'io.modelcontextprotocol/protocolVersion': STATELESS, 'io.modelcontextprotocol/clientCapabilities': { elicitation: { url: {} } } };

async function call(sub: string, name: string, args: Record<string, unknown> = {}, extra: Record<string, unknown> = {}) {
  const token = await gatewayAs.issueAccessToken({ resource: gateway!.resource, scope: 'mcp', sub });
  return postMcp(`${origin}/mcp`, { jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name, arguments: args, _meta: meta, ...extra } }, token, {
    'mcp-protocol-version': STATELESS,
    'mcp-method': 'tools/call',
    'mcp-name': name,
  });
}

/** Opens `link` in `browser` and signs in as `user` at both authorization servers; the final page. */
async function connect(browser: PageBrowser, link: string, user: (typeof USERS)[number]) {
  const toLogin = await browser.request(link);
  assert.equal(toLogin.status, 302, toLogin.body);
  const loginDone = await browser.signIn(toLogin.headers.get('location')!, user, `${origin}/connect/callback`);
  const afterLogin = await browser.request(loginDone);
  if (afterLogin.status !== 302) return afterLogin;
  const upstreamDone = await browser.signIn(afterLogin.headers.get('location')!, user, `${origin}/connect/callback`);
  return browser.request(upstreamDone);
}

describe('connected accounts through the gateway', () => {
  let aliceLink = '';
  let aliceState = '';
  let usedRetry: Record<string, unknown> = {};

  it('a call before connecting gets an input-required URL elicitation with a sealed requestState; the upstream is not called', async () => {
    const answer = await call('alice', 'notes_add', { text: 'from alice' });
    assert.equal(answer.status, 200, answer.text);
    const result = answer.json.result;
    assert.equal(result.resultType, 'input_required');
    const [request] = Object.values(result.inputRequests) as Array<{ method: string; params: { mode: string; url: string } }>;
    assert.equal(request!.method, 'elicitation/create');
    assert.equal(request!.params.mode, 'url');
    aliceLink = request!.params.url;
    assert.match(aliceLink, new RegExp(`^${origin}/connect/[A-Za-z0-9_-]{43}$`), 'the link names no user data');
    assert.ok(!aliceLink.includes('alice'));
    aliceState = result.requestState;
    assert.match(aliceState, /^mcpg1\./);
  });

  it("bob opening alice's link is refused, and nothing is stored", async () => {
    const filesBefore = readdirSync(storeDir).length;
    const page = await connect(new PageBrowser(origin), aliceLink, USERS[1]!);
    assert.equal(page.status, 403, page.body);
    assert.match(page.body, /signed in as someone other/i);
    const connections = readdirSync(storeDir).filter((name) => Buffer.from(name, 'base64url').toString().startsWith('conn:'));
    assert.deepEqual(connections, [], `no connection stored (${filesBefore} files before)`);
  });

  it('alice connects in the browser; the retry with the state reaches the upstream as alice', async () => {
    const first = await call('alice', 'notes_add', { text: 'from alice' });
    const link = (Object.values(first.json.result.inputRequests)[0] as { params: { url: string } }).params.url;
    const page = await connect(new PageBrowser(origin), link, USERS[0]!);
    assert.equal(page.status, 200, page.body);
    assert.match(page.body, /Connected/);
    usedRetry = { requestState: first.json.result.requestState, inputResponses: { [Object.keys(first.json.result.inputRequests)[0]!]: { action: 'accept' } } };
    const retry = await call('alice', 'notes_add', { text: 'from alice' }, usedRetry);
    assert.equal(retry.status, 200, retry.text);
    assert.equal(retry.json.result.isError, undefined, retry.text);
    const whoami = await call('alice', 'whoami');
    assert.match(JSON.stringify(whoami.json.result), /alice/);
    assert.match(JSON.stringify(whoami.json.result), new RegExp(UPSTREAM_CLIENT.clientId), 'the upstream sees the gateway as its client, for alice');
  });

  it('a replayed state, one for other arguments, and a forged one are refused', async () => {
    const replay = await call('alice', 'notes_add', { text: 'from alice' }, usedRetry);
    assert.equal(replay.json.error?.code, -32602, `replayed: ${replay.text}`);
    const otherArguments = await call('alice', 'notes_add', { text: 'something else' }, { requestState: aliceState });
    assert.equal(otherArguments.json.error?.code, -32602, `other arguments: ${otherArguments.text}`);
    const forged = await call('alice', 'notes_list', {}, { requestState: `mcpg1.${'A'.repeat(40)}.${'B'.repeat(43)}` });
    assert.equal(forged.json.error?.code, -32602, forged.text);
  });

  it("bob is not alice: his call asks him to connect, and alice's notes stay hers", async () => {
    const bob = await call('bob', 'notes_list');
    assert.equal(bob.json.result.resultType, 'input_required');
    const link = (Object.values(bob.json.result.inputRequests)[0] as { params: { url: string } }).params.url;
    assert.equal((await connect(new PageBrowser(origin), link, USERS[1]!)).status, 200);
    const bobNotes = await call('bob', 'notes_list');
    assert.doesNotMatch(JSON.stringify(bobNotes.json.result), /from alice/);
    const aliceNotes = await call('alice', 'notes_list');
    assert.match(JSON.stringify(aliceNotes.json.result), /from alice/);
  });

  it('the connection survives a restart, and nothing of a token is readable at rest or in the log', async () => {
    await gateway!.shutdown();
    gateway = await start();
    const aliceNotes = await call('alice', 'notes_list');
    assert.match(JSON.stringify(aliceNotes.json.result), /from alice/, aliceNotes.text);
    for (const name of readdirSync(storeDir)) {
      const text = readFileSync(join(storeDir, name), 'utf8');
      assert.doesNotMatch(text, /alice|bob|eyJhbGciOi(?!.*\.\.)/, `${name} holds nothing readable`);
    }
    const log = lines.join('\n');
    assert.doesNotMatch(log, /"sub":"alice"|refresh_token|access_token|Bearer /);
  });
});
