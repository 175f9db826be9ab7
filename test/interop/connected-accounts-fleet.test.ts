// Connected accounts in a fleet: two gateway replicas with the same settings (one resource, one session secret,
// one token store secret) sharing MCP_AUTH_TOKEN_STORE=redis on a real redis-server. The gateway's own
// authorization server (users alice and bob), the notes example as the upstream behind an authorization server of
// its own that rotates every refresh token and gives the notes resource 4-second access tokens, raw 2026-07-28
// requests and a scripted browser. Replica 1's address stands for the fleet's public URL: the links and the redirect
// URI name it, so every page is served by replica 1, while both replicas serve calls and mint links. The operator's
// `connections revoke` command, run with the same settings, revokes through the same Redis.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { startAuthorizationServer, type AuthorizationServer } from '../../examples/dev/authorization-server.js';
import { startNotesServer, type RunningNotesServer } from '../../examples/notes-server.js';
import { loadGatewayConfig, type GatewayConfig } from '../../src/gateway/config/gateway-config.js';
import type { ConnectionRecord, UserRef } from '../../src/gateway/connected/oauth/connection-record.js';
import { readConnection } from '../../src/gateway/connected/oauth/sealed-connections.js';
import { openConnectionStore, type OpenedConnectionStore } from '../../src/gateway/connected/open-connections.js';
import { startGateway, type RunningGateway } from '../../src/gateway/server/start-gateway.js';
import { usableUntil } from '../../src/gateway/upstream-auth/upstream-credentials.js';
import { PageBrowser } from '../gateway/connected/pages/page-browser.js';
import { CONNECTED_USERS, LOGIN_CLIENT, UPSTREAM_CLIENT, tokenActive } from '../helpers/connected-accounts.js';
import { freePort } from '../helpers/free-port.js';
import { postMcp, type HttpAnswer } from '../helpers/http-client.js';
import { REDIS_SERVER, removeTestRedis, startTestRedis, type TestRedis } from '../helpers/redis-server.js';
import { runGatewayCli } from '../helpers/run-cli.js';

const SKIP = REDIS_SERVER === undefined && !process.env.CI ? 'redis-server is not installed (Debian package redis-server; CI installs it)' : false;
const STATELESS = '2026-07-28';
const USERS = CONNECTED_USERS;
/** How long a replica serves an opened record from memory before reading Redis again, in milliseconds. */
const REVALIDATE_MS = 1_000;
/** Access token lifetime of the notes resource, in seconds: the gateway refreshes after half of it. */
const NOTES_TOKEN_TTL_S = 4;
const CALLS_PER_REPLICA = 8;

let redis: TestRedis | undefined;
let gatewayAs: AuthorizationServer;
let notesAs: AuthorizationServer;
let notes: RunningNotesServer;
let config: GatewayConfig;
let opened: OpenedConnectionStore;
let publicOrigin: string;
/** Every replica's settings but PORT. */
let shared: Record<string, string>;
const replicas: { url: string; gateway: RunningGateway }[] = [];
const lines: string[] = [];
/** Refresh grants the notes authorization server issued tokens for (its `grant.success` events). */
let refreshGrants = 0;

before(async () => {
  if (SKIP) return;
  redis = await startTestRedis();
  const ports = [await freePort(), await freePort()];
  publicOrigin = `http://127.0.0.1:${ports[0]}`;
  const callback = `${publicOrigin}/connect/callback`;
  gatewayAs = await startAuthorizationServer({ users: [...USERS], extraScopes: ['mcp'], clients: [{ ...LOGIN_CLIENT, redirectUris: [callback] }] });
  notesAs = await startAuthorizationServer({ users: [...USERS], rotateRefreshTokens: true, clients: [{ ...UPSTREAM_CLIENT, redirectUris: [`${callback}/upstream`] }] });
  notesAs.provider.on('grant.success', (ctx: unknown) => {
    if ((ctx as { oidc: { params?: { grant_type?: unknown } } }).oidc.params?.grant_type === 'refresh_token') refreshGrants++;
  });
  notes = await startNotesServer({ issuer: notesAs.issuer });
  notesAs.addResource(notes.url, { scopes: ['notes:read', 'notes:write'], accessTokenTtl: NOTES_TOKEN_TTL_S });
  shared = {
    MCP_AUTH_ISSUER: gatewayAs.issuer,
    MCP_AUTH_RESOURCE: `${publicOrigin}/mcp`,
    MCP_AUTH_SESSION_SECRET: randomBytes(32).toString('base64url'),
    MCP_AUTH_REDIS_URL: redis.url,
    MCP_AUTH_UPSTREAM: notes.url,
    MCP_AUTH_UPSTREAM_AUTH: 'connected',
    MCP_AUTH_UPSTREAM_CLIENT_ID: UPSTREAM_CLIENT.clientId,
    MCP_AUTH_UPSTREAM_CLIENT_SECRET: UPSTREAM_CLIENT.clientSecret,
    MCP_AUTH_UPSTREAM_SCOPE: 'notes:read notes:write',
    MCP_AUTH_TOKEN_STORE: 'redis',
    MCP_AUTH_TOKEN_STORE_SECRET: randomBytes(32).toString('base64url'),
    MCP_AUTH_LOGIN_CLIENT_ID: LOGIN_CLIENT.clientId,
    MCP_AUTH_LOGIN_CLIENT_SECRET: LOGIN_CLIENT.clientSecret,
    MCP_AUTH_MAX_CONNECTIONS_PER_ADDRESS: '0',
    HOST: '127.0.0.1',
  };
  for (const port of ports) {
    config = loadGatewayConfig({ ...shared, PORT: String(port) });
    const gateway = await startGateway(config, { log: (line) => lines.push(line), warn: (line) => lines.push(line), connectedRecordsRevalidateMs: REVALIDATE_MS });
    replicas.push({ url: `http://127.0.0.1:${port}`, gateway });
  }
  gatewayAs.addResource(replicas[0]!.gateway.resource, { scopes: ['mcp'] });
  // The test's own view of the shared store, opened as the gateway opens it.
  opened = await openConnectionStore(config.connectedAccounts!, replicas[0]!.gateway.resource, config.redis);
});

after(async () => {
  for (const { gateway } of replicas) await gateway.shutdown();
  await opened?.store.close();
  await notes?.close();
  await notesAs?.close();
  await gatewayAs?.close();
  await removeTestRedis(redis);
});

const meta = { 'io.modelcontextprotocol/protocolVersion': STATELESS, 'io.modelcontextprotocol/clientCapabilities': { elicitation: { url: {} } } };

/** A raw 2026-07-28 tools/call from `sub` to replica `replica` (0 or 1). */
async function call(replica: number, sub: string, name: string, args: Record<string, unknown> = {}, extra: Record<string, unknown> = {}): Promise<HttpAnswer> {
  const token = await gatewayAs.issueAccessToken({ resource: replicas[0]!.gateway.resource, scope: 'mcp', sub });
  return postMcp(`${replicas[replica]!.url}/mcp`, { jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name, arguments: args, _meta: meta, ...extra } }, token, {
    'mcp-protocol-version': STATELESS,
    'mcp-method': 'tools/call',
    'mcp-name': name,
  });
}

/** The connect link and the retry fields of an input-required answer. */
function connectRequest(answer: HttpAnswer): { link: string; retry: Record<string, unknown> } {
  assert.equal(answer.json?.result?.resultType, 'input_required', answer.text);
  const [key, request] = Object.entries(answer.json.result.inputRequests)[0] as [string, { params: { url: string } }];
  return { link: request.params.url, retry: { requestState: answer.json.result.requestState, inputResponses: { [key]: { action: 'accept' } } } };
}

/** Opens `link` in a new browser and signs in as `user` at both authorization servers; the final page. */
async function connect(link: string, user: (typeof USERS)[number]) {
  const browser = new PageBrowser(publicOrigin);
  const toLogin = await browser.request(link);
  assert.equal(toLogin.status, 302, toLogin.body);
  const loginDone = await browser.signIn(toLogin.headers.get('location')!, user, `${publicOrigin}/connect/callback`);
  const afterLogin = await browser.request(loginDone);
  assert.equal(afterLogin.status, 302, afterLogin.body);
  const upstreamDone = await browser.signIn(afterLogin.headers.get('location')!, user, `${publicOrigin}/connect/callback/upstream`);
  return browser.request(upstreamDone);
}

const alice = (): UserRef => ({ issuer: gatewayAs.issuer, subject: 'alice' });
const stored = async (): Promise<ConnectionRecord | undefined> => (await readConnection(opened.store, opened.sealer, alice(), ''))?.record;

/** Waits until the stored record of alice is due for a refresh (past `usableUntil`), plus a little. */
async function untilRefreshDue(): Promise<ConnectionRecord> {
  const record = (await stored())!;
  assert.ok(record.expiresAt !== undefined && record.refreshToken !== undefined, 'the connection has an expiry and a refresh token');
  const due = usableUntil(record.expiresAt, record.updatedAt) + 150;
  await new Promise((resolve) => setTimeout(resolve, Math.max(0, due - Date.now())));
  return record;
}

/** Many calls by alice at both replicas at once: each answer's text. */
async function burst(): Promise<string[]> {
  const answers = await Promise.all(Array.from({ length: 2 * CALLS_PER_REPLICA }, (_, i) => call(i % 2, 'alice', 'whoami')));
  return answers.map((answer) => {
    assert.equal(answer.status, 200, answer.text);
    assert.equal(answer.json.result?.isError, undefined, answer.text);
    return JSON.stringify(answer.json.result);
  });
}

/** Calls `replica` as `sub` every 100 ms until it asks to connect, for at most five revalidation times: the last answer. */
async function untilAskedToConnect(replica: number, sub: string): Promise<HttpAnswer> {
  const deadline = Date.now() + 5 * REVALIDATE_MS;
  for (;;) {
    const answer = await call(replica, sub, 'whoami');
    if (answer.json.result?.resultType === 'input_required' || Date.now() >= deadline) return answer;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe('connected accounts on two replicas sharing Redis', { skip: SKIP, timeout: 60_000 }, () => {
  it('alice connects through replica 1; replica 2 serves her calls with that connection', async () => {
    const { link, retry } = connectRequest(await call(0, 'alice', 'notes_add', { text: 'from alice' }));
    assert.ok(link.startsWith(`${publicOrigin}/connect/`), link);
    const page = await connect(link, USERS[0]);
    assert.equal(page.status, 200, page.body);
    assert.match(page.body, /Connected/);
    const added = await call(0, 'alice', 'notes_add', { text: 'from alice' }, retry);
    assert.equal(added.json.result?.isError, undefined, added.text);

    const onReplica2 = await call(1, 'alice', 'notes_list');
    assert.equal(onReplica2.json.result?.resultType, 'complete', `replica 2 does not ask her to connect: ${onReplica2.text}`);
    assert.match(JSON.stringify(onReplica2.json.result), /from alice/);
    const whoami = JSON.stringify((await call(1, 'alice', 'whoami')).json.result);
    assert.match(whoami, /alice/);
    assert.match(whoami, new RegExp(UPSTREAM_CLIENT.clientId));
  });

  it("a link replica 2 made is completed through replica 1's pages, and its requestState is taken by replica 1", async () => {
    const first = await call(1, 'bob', 'notes_add', { text: 'from bob' });
    const { link, retry } = connectRequest(first);
    assert.ok(link.startsWith(`${publicOrigin}/connect/`), 'the link names the public URL, served here by replica 1');
    const page = await connect(link, USERS[1]);
    assert.equal(page.status, 200, page.body);
    const added = await call(0, 'bob', 'notes_add', { text: 'from bob' }, retry);
    assert.equal(added.json.result?.isError, undefined, added.text);
    const bobNotes = JSON.stringify((await call(1, 'bob', 'notes_list')).json.result);
    assert.match(bobNotes, /from bob/);
    assert.doesNotMatch(bobNotes, /from alice/);
    const replayed = await call(1, 'bob', 'notes_add', { text: 'from bob' }, retry);
    assert.equal(replayed.json.error?.code, -32602, `a state used on one replica is refused on the other: ${replayed.text}`);
  });

  it('concurrent refreshes on both replicas send one refresh grant and keep a refresh token that works', async () => {
    const before = await untilRefreshDue();
    const grantsBefore = refreshGrants;
    const texts = await burst();
    assert.ok(texts.every((text) => /alice/.test(text)), 'every call reached the upstream as alice');
    assert.equal(refreshGrants - grantsBefore, 1, 'exactly one refresh grant for both replicas');
    const after = (await stored())!;
    assert.notEqual(after.accessToken, before.accessToken);
    assert.notEqual(after.refreshToken, before.refreshToken, 'the authorization server rotated the refresh token');
    assert.equal(await tokenActive(notesAs, before.refreshToken!), false, 'the rotated-out refresh token is spent');
    assert.equal(await tokenActive(notesAs, after.refreshToken!), true, 'the stored refresh token is the live one');

    // The kept refresh token works: at the next expiry both replicas again refresh once, and every call succeeds.
    await untilRefreshDue();
    await burst();
    assert.equal(refreshGrants - grantsBefore, 2, 'one more refresh grant, with the stored refresh token');
    const later = (await stored())!;
    assert.notEqual(later.refreshToken, after.refreshToken);
    assert.equal(await tokenActive(notesAs, later.refreshToken!), true);
  });

  it("a disconnection on replica 1's page is seen by replica 2 within the records' revalidation time", async () => {
    // Replica 2 holds alice's opened record in memory.
    assert.equal((await call(1, 'alice', 'whoami')).json.result?.isError, undefined);
    const { refreshToken } = (await stored())!;
    const browser = new PageBrowser(publicOrigin);
    const start = await browser.request(`${publicOrigin}/connections`);
    assert.equal(start.status, 302, start.body);
    await browser.request(await browser.signIn(start.headers.get('location')!, USERS[0], `${publicOrigin}/connect/callback`));
    const list = await browser.request(`${publicOrigin}/connections`);
    const csrf = /name="csrf" value="([\w-]+)"/.exec(list.body)?.[1];
    assert.ok(csrf, list.body);
    const done = await browser.request(`${publicOrigin}/connections/disconnect`, { method: 'POST', form: { server: 'upstream', csrf }, headers: { 'sec-fetch-site': 'same-origin' } });
    assert.equal(done.status, 303, done.body);
    const disconnectedAt = Date.now();
    assert.equal(await stored(), undefined, 'deleted from the shared store');
    assert.equal(await tokenActive(notesAs, refreshToken!), false, 'revoked at the notes authorization server');

    const answer = await untilAskedToConnect(1, 'alice');
    const seenAfterMs = Date.now() - disconnectedAt;
    assert.equal(answer.json.result?.resultType, 'input_required', `replica 2 asks alice to connect again: ${answer.text}`);
    assert.ok(seenAfterMs <= REVALIDATE_MS + 1_000, `seen after ${seenAfterMs} ms, within the revalidation time of ${REVALIDATE_MS} ms`);
    // Bob's connection is untouched.
    assert.match(JSON.stringify((await call(1, 'bob', 'notes_list')).json.result), /from bob/);
  });

  it("the operator's command revokes bob's connection in Redis; both replicas then ask him to connect again", async () => {
    const bob: UserRef = { issuer: gatewayAs.issuer, subject: 'bob' };
    const { refreshToken } = (await readConnection(opened.store, opened.sealer, bob, ''))!.record;
    assert.equal(await tokenActive(notesAs, refreshToken!), true);
    const run = await runGatewayCli(['connections', 'revoke', '--subject', 'bob'], { ...shared, PORT: String(new URL(replicas[1]!.url).port) });
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stdout, /^the upstream \(MCP_AUTH_UPSTREAM\): refresh token revoked at its authorization server/);
    assert.equal(await tokenActive(notesAs, refreshToken!), false);
    for (const replica of [0, 1]) {
      const answer = await untilAskedToConnect(replica, 'bob');
      assert.equal(answer.json.result?.resultType, 'input_required', `replica ${replica + 1}: ${answer.text}`);
    }
  });

  it('nothing of a token is in the replicas\' log lines', () => {
    const log = lines.join('\n');
    assert.doesNotMatch(log, /"sub":"alice"|refresh_token|access_token|Bearer /);
  });
});
