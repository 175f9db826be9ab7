// `mcp-oauth-guard connections revoke`, the real program, against real parts: the gateway's own authorization
// server (users alice and bob), the notes example behind an authorization server of its own, a running gateway whose
// token store is a directory, and connections made in a scripted browser. The command reads the gateway's settings,
// revokes alice's connection at the notes authorization server (RFC 7009) and deletes it; the gateway then asks her
// to connect again, and bob's connection stays.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { startAuthorizationServer, type AuthorizationServer } from '../../../examples/dev/authorization-server.js';
import { startNotesServer, type RunningNotesServer } from '../../../examples/notes-server.js';
import { loadGatewayConfig } from '../../../src/gateway/config/gateway-config.js';
import { connectionKey, userKey, type ConnectionRecord, type UserRef } from '../../../src/gateway/connected/oauth/connection-record.js';
import { readConnection, writeConnection } from '../../../src/gateway/connected/oauth/sealed-connections.js';
import { openConnectionStore, type OpenedConnectionStore } from '../../../src/gateway/connected/open-connections.js';
import { revokeUserConnections } from '../../../src/gateway/cli/connections/revoke-user-connections.js';
import { flowKey } from '../../../src/gateway/connected/oauth/authorization-code-flow.js';
import { createConnectTicket, readConnectTicket, renewConnectTicket } from '../../../src/gateway/connected/pages/connect-ticket.js';
import { pendingLoginKey } from '../../../src/gateway/connected/pages/gateway-login.js';
import { startGateway, type RunningGateway } from '../../../src/gateway/server/start-gateway.js';
import { PageBrowser } from '../connected/pages/page-browser.js';
import { CONNECTED_USERS, LOGIN_CLIENT, STORE_KEY, UPSTREAM_CLIENT, tokenActive } from '../../helpers/connected-accounts.js';
import { freePort } from '../../helpers/free-port.js';
import { postMcp, type HttpAnswer } from '../../helpers/http-client.js';
import { runGatewayCli, type CliRun } from '../../helpers/run-cli.js';

const STATELESS = '2026-07-28';
const USERS = CONNECTED_USERS;
/** How long the gateway serves an opened record from memory before reading the store again, in milliseconds. */
const REVALIDATE_MS = 300;

let gatewayAs: AuthorizationServer;
let notesAs: AuthorizationServer;
let notes: RunningNotesServer;
let storeDir: string;
let settings: Record<string, string>;
let gateway: RunningGateway;
let opened: OpenedConnectionStore;
let origin: string;

before(async () => {
  const port = await freePort();
  origin = `http://127.0.0.1:${port}`;
  storeDir = join(mkdtempSync(join(tmpdir(), 'connections-command-')), 'tokens');
  const callback = `${origin}/connect/callback`;
  gatewayAs = await startAuthorizationServer({ users: [...USERS], extraScopes: ['mcp'], clients: [{ ...LOGIN_CLIENT, redirectUris: [callback] }] });
  // The upstream's own redirect URI, not the sign-in's: each authorization server has its own (mix-up defence).
  notesAs = await startAuthorizationServer({ users: [...USERS], clients: [{ ...UPSTREAM_CLIENT, redirectUris: [`${callback}/upstream`] }] });
  notes = await startNotesServer({ issuer: notesAs.issuer });
  notesAs.addResource(notes.url, { scopes: ['notes:read', 'notes:write'] });
  settings = {
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
  };
  const config = loadGatewayConfig(settings);
  gateway = await startGateway(config, { log: () => {}, warn: () => {}, connectedRecordsRevalidateMs: REVALIDATE_MS });
  gatewayAs.addResource(gateway.resource, { scopes: ['mcp'] });
  opened = await openConnectionStore(config.connectedAccounts!, gateway.resource, config.redis);
});

after(async () => {
  await gateway?.shutdown();
  await opened?.store.close();
  await notes?.close();
  await notesAs?.close();
  await gatewayAs?.close();
  if (storeDir) rmSync(join(storeDir, '..'), { recursive: true, force: true });
});

const meta = { 'io.modelcontextprotocol/protocolVersion': STATELESS, 'io.modelcontextprotocol/clientCapabilities': { elicitation: { url: {} } } };
const userOf = (subject: string): UserRef => ({ issuer: gatewayAs.issuer, subject });

async function call(sub: string, name: string, extra: Record<string, unknown> = {}): Promise<HttpAnswer> {
  const token = await gatewayAs.issueAccessToken({ resource: gateway.resource, scope: 'mcp', sub });
  return postMcp(`${origin}/mcp`, { jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name, arguments: {}, _meta: meta, ...extra } }, token, {
    'mcp-protocol-version': STATELESS,
    'mcp-method': 'tools/call',
    'mcp-name': name,
  });
}

/** Connects `user` as a user would: a call, the link in a browser, both sign-ins, the retry. */
async function connectInBrowser(user: (typeof USERS)[number]): Promise<void> {
  const first = await call(user.username, 'whoami');
  assert.equal(first.json.result?.resultType, 'input_required', first.text);
  const [key, request] = Object.entries(first.json.result.inputRequests)[0] as [string, { params: { url: string } }];
  const browser = new PageBrowser(origin);
  const toLogin = await browser.request(request.params.url);
  const afterLogin = await browser.request(await browser.signIn(toLogin.headers.get('location')!, user, `${origin}/connect/callback`));
  const page = await browser.request(await browser.signIn(afterLogin.headers.get('location')!, user, `${origin}/connect/callback/upstream`));
  assert.equal(page.status, 200, page.body);
  const retry = await call(user.username, 'whoami', { requestState: first.json.result.requestState, inputResponses: { [key]: { action: 'accept' } } });
  assert.match(JSON.stringify(retry.json.result), new RegExp(user.username), retry.text);
}

function connections(args: string[], env: Record<string, string> = settings): Promise<CliRun> {
  return runGatewayCli(['connections', ...args], env);
}

/** Nothing secret or identifying in what the command printed. */
function assertNothingSecret(run: CliRun, record?: ConnectionRecord): void {
  const printed = run.stdout + run.stderr;
  for (const value of [record?.accessToken, record?.refreshToken, userKey(userOf('alice')), STORE_KEY, UPSTREAM_CLIENT.clientSecret]) {
    if (value !== undefined) assert.ok(!printed.includes(value), 'no token, digest or secret printed');
  }
  assert.doesNotMatch(printed, /\balice\b/);
}

describe('mcp-oauth-guard connections revoke', { timeout: 180_000 }, () => {
  it("revokes alice's connection at the notes authorization server and deletes it; the gateway asks her to connect again; bob's stays", async () => {
    await connectInBrowser(USERS[0]);
    await connectInBrowser(USERS[1]);
    const record = (await readConnection(opened.store, opened.sealer, userOf('alice'), ''))!.record;
    assert.ok(record.refreshToken, 'the connection holds a refresh token');
    assert.equal(await tokenActive(notesAs, record.refreshToken), true);
    // A connection to a server since removed from the configuration: deleted, with nowhere to revoke it.
    await writeConnection(opened.store, opened.sealer, userOf('alice'), 'retired', { ...record, refreshToken: 'not-a-live-token' });

    const run = await connections(['revoke', '--subject', 'alice']);
    assert.equal(run.code, 0, run.stderr);
    assert.equal(
      run.stdout,
      // oidc-provider cannot revoke its self-contained JWT access tokens (RFC 7009 §2.2.1): said, not hidden.
      'the upstream (MCP_AUTH_UPSTREAM): refresh token revoked at its authorization server, access token not revoked: its authorization server does not revoke that kind of token, which stays valid until it expires; deleted\n' +
        'retired: deleted without revocation: the server is not in connected mode in this configuration, so its authorization server is unknown\n',
    );
    assertNothingSecret(run, record);
    assert.equal(await tokenActive(notesAs, record.refreshToken), false, 'the refresh token is revoked at the authorization server');
    assert.equal(await opened.store.get(connectionKey(userOf('alice'), '')), undefined);
    assert.equal(await opened.store.get(connectionKey(userOf('alice'), 'retired')), undefined);

    let answer: HttpAnswer;
    const deadline = Date.now() + 10 * REVALIDATE_MS;
    do {
      await new Promise((resolve) => setTimeout(resolve, REVALIDATE_MS / 2));
      answer = await call('alice', 'whoami');
    } while (answer.json.result?.resultType !== 'input_required' && Date.now() < deadline);
    assert.equal(answer.json.result?.resultType, 'input_required', `the gateway asks alice to connect again: ${answer.text}`);
    assert.match(JSON.stringify((await call('bob', 'whoami')).json.result), /bob/, "bob's connection is untouched");
  });

  it('with no connection says so and exits 0; another issuer is another user; a server named revokes only its connection', async () => {
    const none = await connections(['revoke', '--subject', 'alice']);
    assert.equal(none.code, 0, none.stderr);
    assert.equal(none.stdout, `No connection of that subject at ${gatewayAs.issuer}: nothing to revoke.\n`);
    assertNothingSecret(none);
    const otherIssuer = await connections(['revoke', '--subject=bob', '--issuer', 'https://other.example']);
    assert.equal(otherIssuer.code, 0, otherIssuer.stderr);
    assert.match(otherIssuer.stdout, /^No connection of that subject at https:\/\/other\.example/);
    assert.match(JSON.stringify((await call('bob', 'whoami')).json.result), /bob/, 'bob at another issuer is someone else');

    // What --server does, on the store: only that server's connection goes.
    const record = (await readConnection(opened.store, opened.sealer, userOf('bob'), ''))!.record;
    for (const server of ['wiki', 'mail']) await writeConnection(opened.store, opened.sealer, userOf('bob'), server, record);
    const outcomes = await revokeUserConnections({ opened, authorizations: new Map(), user: userOf('bob'), server: 'wiki' });
    assert.deepEqual(outcomes.map(({ server, outcome }) => [server, outcome]), [['wiki', 'deleted']]);
    assert.equal(await opened.store.get(connectionKey(userOf('bob'), 'wiki')), undefined);
    assert.ok(await opened.store.get(connectionKey(userOf('bob'), 'mail')));
    assert.ok(await opened.store.get(connectionKey(userOf('bob'), '')));
    await opened.store.delete(connectionKey(userOf('bob'), 'mail'));
  });

  it("ends the user's connects in progress too: tickets, their pending sign-in and upstream authorization; another user's stay", async () => {
    const begin = async (subject: string, server: string): Promise<{ ticketId: string; login: string; flow: string }> => {
      const ticketId = await createConnectTicket(opened.store, opened.sealer, { user: userOf(subject), server });
      const ticket = (await readConnectTicket(opened.store, opened.sealer, ticketId))!;
      const login = pendingLoginKey(`login-state-${subject}-${server}-0123456789`);
      await opened.store.set(login, await opened.sealer.seal(login, {}, 60_000), 60_000);
      await renewConnectTicket(opened.store, opened.sealer, ticketId, ticket, login.slice('login:'.length));
      const flow = flowKey(`flow-state-${subject}-${server}`);
      await opened.store.set(flow, await opened.sealer.seal(flow, { kind: 'upstream', server, ticketId }, 60_000), 60_000);
      return { ticketId, login, flow };
    };
    const [carol, carolWiki, dave] = [await begin('carol', ''), await begin('carol', 'wiki'), await begin('dave', '')];
    const live = async (keys: { ticketId: string; login: string; flow: string }): Promise<boolean[]> => [
      (await readConnectTicket(opened.store, opened.sealer, keys.ticketId)) !== undefined,
      (await opened.store.get(keys.login)) !== undefined,
      (await opened.store.get(keys.flow)) !== undefined,
    ];
    // --server ends only that server's connect.
    await revokeUserConnections({ opened, authorizations: new Map(), user: userOf('carol'), server: 'wiki' });
    assert.deepEqual(await live(carolWiki), [false, false, false]);
    assert.deepEqual(await live(carol), [true, true, true]);
    const run = await connections(['revoke', '--subject', 'carol']);
    assert.equal(run.code, 0, run.stderr);
    assert.deepEqual(await live(carol), [false, false, false], 'no authorization under way can complete after the revocation');
    assert.deepEqual((await opened.store.keys(`ticketof:${userKey(userOf('carol'))}:`, 10)).length, 0, 'its ticket index is gone too');
    assert.deepEqual(await live(dave), [true, true, true], "another user's connect goes on");
  });

  it('bad usage and a configuration error: a message and exit 2, nothing revoked', async () => {
    for (const [args, message] of [
      [['revoke'], /--subject: is required/],
      [['revoke', '--subject'], /--subject: needs a value/],
      [[], /^mcp-oauth-guard connections: action: is missing: connections revoke --subject <sub>/],
      [['list', '--subject', 'bob'], /action: is "list"; the one action is revoke/],
      [['revoke', '--subject', 'bob', '--server', 'mail'], /--server: names a server of a configuration file/],
      [['revoke', '--subject', 'bob', '--upstreem', 'x'], /--upstreem: is not a known flag/],
    ] as const) {
      const run = await connections([...args]);
      assert.equal(run.code, 2, `${args.join(' ')}: ${run.stdout}${run.stderr}`);
      assert.match(run.stderr, message);
      assert.doesNotMatch(run.stderr, /connections: connections:/, 'the program is named once');
      assert.equal(run.stdout, '');
    }
    const { MCP_AUTH_UPSTREAM_AUTH: _, MCP_AUTH_UPSTREAM_CLIENT_ID: _id, MCP_AUTH_UPSTREAM_CLIENT_SECRET: _secret, MCP_AUTH_UPSTREAM_SCOPE: _scope, MCP_AUTH_TOKEN_STORE: _store, MCP_AUTH_TOKEN_STORE_SECRET: _key, MCP_AUTH_LOGIN_CLIENT_ID: _login, MCP_AUTH_LOGIN_CLIENT_SECRET: _loginSecret, ...plain } = settings;
    const notConnected = await connections(['revoke', '--subject', 'bob'], plain);
    assert.equal(notConnected.code, 2);
    assert.match(notConnected.stderr, /no upstream is in connected mode/);
    assert.match(JSON.stringify((await call('bob', 'whoami')).json.result), /bob/, "bob's connection is untouched");
  });

  it('reads a configuration file (--config): --server names one of its servers in connected mode; an unreachable authorization server is said', async () => {
    const dir = join(storeDir, '..', 'file-config');
    mkdirSync(dir);
    const file = join(dir, 'servers.json');
    const closed = `http://127.0.0.1:${await freePort()}/mcp`;
    writeFileSync(file, JSON.stringify({ gateway: { issuer: gatewayAs.issuer, loginClientId: 'gateway-login' }, servers: { crm: { url: closed, auth: { mode: 'connected' } }, notes: { url: notes.url } } }));
    const env = { HOST: '127.0.0.1', PORT: '0', MCP_AUTH_TOKEN_STORE: join(dir, 'tokens'), MCP_AUTH_TOKEN_STORE_SECRET: STORE_KEY };
    const fileConfig = loadGatewayConfig({ ...env, MCP_AUTH_CONFIG: file });
    const fileStore = await openConnectionStore(fileConfig.connectedAccounts!, fileConfig.guard.resource, undefined);
    try {
      const record: ConnectionRecord = { accessToken: 'crm-access', refreshToken: 'crm-refresh', tokenType: 'Bearer', asIssuer: 'http://127.0.0.1:9', clientId: 'gw', createdAt: 1, updatedAt: 1 };
      await writeConnection(fileStore.store, fileStore.sealer, userOf('alice'), 'crm', record);
      const notConnected = await connections(['revoke', '--subject', 'alice', '--config', file, '--server', 'notes'], env);
      assert.equal(notConnected.code, 2);
      assert.match(notConnected.stderr, /--server: names no server in connected mode; those are: crm/);

      const run = await connections(['revoke', '--config', file, '--subject', 'alice', '--server=crm'], env);
      assert.equal(run.code, 0, run.stderr);
      assert.equal(run.stdout, 'crm: deleted without revocation: refresh token and access token not revoked: its authorization server could not be reached\n');
      assertNothingSecret(run, record);
      assert.equal(await fileStore.store.get(connectionKey(userOf('alice'), 'crm')), undefined);
    } finally {
      await fileStore.store.close();
    }
  });

  it('--help explains the command and the settings; the gateway\'s --help names it', async () => {
    const help = await connections(['--help']);
    assert.equal(help.code, 0);
    assert.match(help.stdout, /^Usage: mcp-oauth-guard connections revoke --subject <sub> \[--issuer <url>\] \[--server <name>\]/);
    assert.match(help.stdout, /RFC 7009/);
    assert.match(help.stdout, /MCP_AUTH_TOKEN_STORE_SECRET/);
    const gatewayHelp = await runGatewayCli(['--help']);
    assert.match(gatewayHelp.stdout, /mcp-oauth-guard connections revoke --subject <sub>/);
    // Its endpoint list names the pages, as those of connected accounts only.
    assert.match(gatewayHelp.stdout, /with connected\s+accounts, the pages \/connect\/… and \/connections\./);
  });

  it("with a key other than the gateway's: keeps the connection unrevoked and exits 2; --delete-unreadable deletes it, saying it was not revoked", async () => {
    const record = (await readConnection(opened.store, opened.sealer, userOf('bob'), ''))!.record;
    assert.equal(await tokenActive(notesAs, record.refreshToken!), true);
    const otherKey = { ...settings, MCP_AUTH_TOKEN_STORE_SECRET: randomBytes(32).toString('base64url') };

    const run = await connections(['revoke', '--subject', 'bob'], otherKey);
    assert.equal(run.code, 2, run.stdout + run.stderr);
    assert.match(run.stdout, /^the upstream \(MCP_AUTH_UPSTREAM\): not revoked, kept: its record does not open with the configured MCP_AUTH_TOKEN_STORE_SECRET \(is this the gateway's key\?\); .*--delete-unreadable/);
    assert.match(run.stderr, /MCP_AUTH_TOKEN_STORE_SECRET: a connection's record does not open with this key \(is this the gateway's MCP_AUTH_TOKEN_STORE_SECRET\?\)/);
    assertNothingSecret(run, record);
    assert.ok(await opened.store.get(connectionKey(userOf('bob'), '')), 'the record is kept');
    assert.equal(await tokenActive(notesAs, record.refreshToken!), true, 'nothing was revoked');
    assert.match(JSON.stringify((await call('bob', 'whoami')).json.result), /bob/, "bob's connection still works");

    const forced = await connections(['revoke', '--subject', 'bob', '--delete-unreadable'], otherKey);
    assert.equal(forced.code, 0, forced.stdout + forced.stderr);
    assert.equal(forced.stdout, 'the upstream (MCP_AUTH_UPSTREAM): deleted without revocation: its record does not open with the configured MCP_AUTH_TOKEN_STORE_SECRET\n');
    assert.equal(await opened.store.get(connectionKey(userOf('bob'), '')), undefined);
    assert.equal(await tokenActive(notesAs, record.refreshToken!), true, 'deleted unrevoked, as the flag says');
  });
});
