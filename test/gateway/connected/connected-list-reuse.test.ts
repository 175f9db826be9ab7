// A server in connected mode with `listReuseMs`, beside a plain one, and two users: bob has not connected it, alice
// connects it in a scripted browser. Before anyone has connected, lists carry each user's own note and link, and
// that answer is never served to the other. Once alice has listed with her token, bob's lists show the server's tools
// (filtered by the gateway's policy for bob), without the server being asked again; bob's call of one of them gets
// his own connect answer; nothing of alice's (her link, her tokens) ever reaches bob. With MCP_AUTH_CONNECT_LISTS=hide,
// bob sees neither the tools nor a note.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { CONNECT_INPUT_KEY } from '../../../src/gateway/connected/flow/connection-required-answer.js';
import { loadGatewayConfig } from '../../../src/gateway/config/gateway-config.js';
import { startGateway, type RunningGateway } from '../../../src/gateway/server/start-gateway.js';
import { CONNECTED_USERS, LOGIN_CLIENT, STORE_KEY, startConnectedAccountsParts, UPSTREAM_CLIENT, watchIssuedTokens, type ConnectedAccountsParts, type IssuedTokens } from '../../helpers/connected-accounts.js';
import { messages, postMcp, type HttpAnswer } from '../../helpers/http-client.js';
import { startPlainMcpServer, type PlainMcpServer } from '../../helpers/plain-mcp-server.js';
import { PageBrowser } from './pages/page-browser.js';

const STATELESS = '2026-07-28';
const SESSION_VERSION = '2025-11-25';
const URL_CAPS = { elicitation: { url: {} } };

let parts: ConnectedAccountsParts;
let plain: PlainMcpServer;
let issued: IssuedTokens;
let gateway: RunningGateway | undefined;
/** Lists the notes server was asked for, and calls it got. */
const notesSeen = { lists: 0, calls: 0 };
/** Every answer bob got, as text. */
const bobSaw: string[] = [];

before(async () => {
  parts = await startConnectedAccountsParts({ notesServer: 'notes' });
  plain = await startPlainMcpServer();
  issued = watchIssuedTokens(parts.notesAs);
  parts.notes.server.prependListener('request', (req) => {
    let body = '';
    req.on('data', (chunk: Buffer) => void (body += chunk.toString()));
    req.on('end', () => {
      if (body.includes('"tools/list"')) notesSeen.lists++;
      if (body.includes('"tools/call"')) notesSeen.calls++;
    });
  });
});

after(async () => {
  await gateway?.shutdown();
  plain?.close();
  await parts?.close();
});

/**
 * The gateway on the parts' port (the redirect URIs name it) from a configuration file: notes in connected mode with
 * `listReuseMs` and a policy listing `whoami` only to callers with the `extra` scope, and the plain server.
 */
async function startSet(lists: 'show' | 'hide'): Promise<RunningGateway> {
  const file = join(parts.tempDir, `gateway-${lists}.json`);
  const notes = { url: parts.notes.url, auth: { mode: 'connected', clientId: UPSTREAM_CLIENT.clientId, clientSecretEnv: 'NOTES_SECRET', scope: 'notes:read' }, listReuseMs: 60_000, policy: { tools: { whoami: ['extra'] } } };
  const gatewaySettings = { issuer: parts.gatewayAs.issuer, host: '127.0.0.1', port: parts.port, loginClientId: LOGIN_CLIENT.clientId, tokenStore: parts.storeDir, connectLists: lists };
  writeFileSync(file, JSON.stringify({ gateway: gatewaySettings, servers: { notes, plain: { url: plain.url } } }));
  const env = { PATH: process.env.PATH, MCP_AUTH_CONFIG: file, NOTES_SECRET: UPSTREAM_CLIENT.clientSecret, MCP_AUTH_TOKEN_STORE_SECRET: STORE_KEY, MCP_AUTH_LOGIN_CLIENT_SECRET: LOGIN_CLIENT.clientSecret };
  const started = await startGateway(loadGatewayConfig(env), { log: () => {}, warn: () => {} });
  parts.gatewayAs.addResource(started.resource, { scopes: ['mcp', 'extra'] });
  return started;
}

/** A caller token of the gateway's authorization server: alice's has the `extra` scope too. */
const tokenOf = (sub: 'alice' | 'bob'): Promise<string> => parts.gatewayAs.issueAccessToken({ resource: gateway!.resource, scope: sub === 'alice' ? 'mcp extra' : 'mcp', sub });

/** A raw 2026-07-28 request of `sub`; bob's answers are kept for the leak checks. */
async function post(sub: 'alice' | 'bob', method: string, params: Record<string, unknown> = {}, capabilities: unknown = URL_CAPS): Promise<any> {
  const meta = { 'io.modelcontextprotocol/protocolVersion': STATELESS, 'io.modelcontextprotocol/clientCapabilities': capabilities };
  const headers: Record<string, string> = { 'mcp-protocol-version': STATELESS, 'mcp-method': method };
  if (typeof params.name === 'string') headers['mcp-name'] = params.name;
  const answer = await postMcp(gateway!.resource, { jsonrpc: '2.0', id: 1, method, params: { ...params, _meta: meta } }, await tokenOf(sub), headers);
  if (sub === 'bob') bobSaw.push(answer.text);
  assert.equal(answer.status, 200, answer.text);
  return answer.json;
}

const toolNames = (answer: any): string[] => answer.result.tools.map((tool: { name: string }) => tool.name);
const noteOf = (answer: any): { message: string; url: string } | undefined => answer.result._meta?.[CONNECT_INPUT_KEY]?.notes;

/** Opens `link` and signs in as alice at both authorization servers; the final page. */
async function connectAlice(link: string): Promise<{ status: number; body: string }> {
  const browser = new PageBrowser(parts.origin);
  const toLogin = await browser.request(link);
  assert.equal(toLogin.status, 302, toLogin.body);
  const afterLogin = await browser.request(await browser.signIn(toLogin.headers.get('location')!, CONNECTED_USERS[0], parts.callback));
  assert.equal(afterLogin.status, 302, afterLogin.body);
  return browser.request(await browser.signIn(afterLogin.headers.get('location')!, CONNECTED_USERS[0], parts.upstreamCallback));
}

describe('a connected server with listReuseMs: users who have not connected it see its tools', () => {
  let aliceLink = '';
  let bobLink = '';

  it("before anyone connects: each user's list has their own note and link, and a connect answer is never served again", async () => {
    gateway = await startSet('show');
    const bob = await post('bob', 'tools/list');
    assert.deepEqual(toolNames(bob), ['plain__echo']);
    bobLink = noteOf(bob)!.url;
    const alice = await post('alice', 'tools/list');
    assert.deepEqual(toolNames(alice), ['plain__echo']);
    aliceLink = noteOf(alice)!.url;
    assert.match(aliceLink, new RegExp(`^${parts.origin}/connect/[A-Za-z0-9_-]{43}$`));
    assert.notEqual(aliceLink, bobLink, "alice got her own link, not bob's answer again");
    assert.equal(notesSeen.lists, 0, 'the notes server was not asked: nobody has connected it');
  });

  it("once alice has connected and listed, bob sees the server's tools, filtered by the gateway's policy for him, and the server is not asked again", async () => {
    const page = await connectAlice(aliceLink);
    assert.equal(page.status, 200, page.body);
    const alice = await post('alice', 'tools/list');
    assert.deepEqual(toolNames(alice), ['notes__whoami', 'notes__notes_list', 'plain__echo']);
    assert.equal(noteOf(alice), undefined);
    assert.equal(notesSeen.lists, 1, "alice's list asked the notes server with her token");
    const bob = await post('bob', 'tools/list');
    assert.deepEqual(toolNames(bob), ['notes__notes_list', 'plain__echo'], 'whoami needs the extra scope bob lacks');
    assert.equal(bob.result._meta, undefined, 'no note: bob sees the tools themselves');
    assert.equal(notesSeen.lists, 1, "bob was served alice's page, not the server's answer to him");
  });

  it('bob calling one of those tools gets his own connect answer, and the server is not called', async () => {
    const elicited = await post('bob', 'tools/call', { name: 'notes__notes_list', arguments: {} });
    assert.equal(elicited.result.resultType, 'input_required', JSON.stringify(elicited));
    const [request] = Object.values(elicited.result.inputRequests) as Array<{ params: { mode: string; url: string } }>;
    assert.equal(request!.params.mode, 'url');
    assert.equal(request!.params.url, bobLink, "bob's own link");
    const told = await post('bob', 'tools/call', { name: 'notes__notes_list', arguments: {} }, {});
    assert.equal(told.result.isError, true, JSON.stringify(told));
    assert.match(told.result.content[0].text, /"notes" is not connected\. Open http:\/\/127\.0\.0\.1:\d+\/connect\/\S+ in a browser/);
    assert.equal(notesSeen.calls, 0);
  });

  it('in a 2025-11-25 session too: bob lists the tools and his call gets the link as a tool result', async () => {
    const token = await tokenOf('bob');
    const init = await postMcp(gateway!.resource, { jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: SESSION_VERSION, capabilities: {}, clientInfo: { name: 't', version: '1' } } }, token);
    assert.equal(init.status, 200, init.text);
    const headers = { 'mcp-session-id': String(init.headers['mcp-session-id']), 'mcp-protocol-version': SESSION_VERSION };
    const inSession = async (message: object): Promise<any> => {
      const answer: HttpAnswer = await postMcp(gateway!.resource, { jsonrpc: '2.0', ...message }, token, headers);
      bobSaw.push(answer.text);
      return messages(answer).find((m) => 'result' in m || 'error' in m);
    };
    await postMcp(gateway!.resource, { jsonrpc: '2.0', method: 'notifications/initialized' }, token, headers);
    // Kept under the revision it was listed with: alice lists in her session first.
    const aliceToken = await tokenOf('alice');
    const aliceInit = await postMcp(gateway!.resource, { jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: SESSION_VERSION, capabilities: {}, clientInfo: { name: 't', version: '1' } } }, aliceToken);
    const aliceHeaders = { 'mcp-session-id': String(aliceInit.headers['mcp-session-id']), 'mcp-protocol-version': SESSION_VERSION };
    await postMcp(gateway!.resource, { jsonrpc: '2.0', method: 'notifications/initialized' }, aliceToken, aliceHeaders);
    const aliceList = messages(await postMcp(gateway!.resource, { jsonrpc: '2.0', id: 1, method: 'tools/list' }, aliceToken, aliceHeaders)).find((m) => 'result' in m);
    assert.ok(toolNames(aliceList).includes('notes__notes_list'), JSON.stringify(aliceList));
    const listed = notesSeen.lists;
    assert.deepEqual(toolNames(await inSession({ id: 1, method: 'tools/list' })), ['notes__notes_list', 'plain__echo']);
    assert.equal(notesSeen.lists, listed);
    const call = await inSession({ id: 2, method: 'tools/call', params: { name: 'notes__notes_list', arguments: {} } });
    assert.equal(call.result?.isError, true, JSON.stringify(call));
    assert.match(call.result.content[0].text, /Open http:\/\/127\.0\.0\.1:\d+\/connect\/\S+ in a browser/);
    assert.equal(notesSeen.calls, 0);
  });

  it("nothing of alice's ever reached bob: not her link, not a token the notes authorization server issued her", () => {
    assert.ok(issued.tokens.length >= 2, 'alice got an access and a refresh token');
    for (const text of bobSaw) {
      assert.ok(!text.includes(aliceLink), text);
      for (const token of issued.tokens) assert.ok(!text.includes(token), 'an upstream token in an answer to bob');
    }
  });

  it("hide: bob sees neither the server's tools nor a note, while alice still lists them", async () => {
    await gateway!.shutdown();
    gateway = await startSet('hide');
    const alice = await post('alice', 'tools/list');
    assert.deepEqual(toolNames(alice), ['notes__whoami', 'notes__notes_list', 'plain__echo']);
    const listed = notesSeen.lists;
    const bob = await post('bob', 'tools/list');
    assert.deepEqual(toolNames(bob), ['plain__echo']);
    assert.equal(bob.result._meta, undefined, JSON.stringify(bob.result));
    assert.equal(notesSeen.lists, listed);
    const again = await post('alice', 'tools/list');
    assert.deepEqual(toolNames(again), ['notes__whoami', 'notes__notes_list', 'plain__echo'], 'alice is served the kept page');
    assert.equal(notesSeen.lists, listed);
  });
});
