// Connected accounts through the running gateway, with real parts: the gateway's own authorization server (users
// alice and bob, and the gateway's sign-in client), the notes example as the upstream behind an authorization server
// of its own, the token store in a directory, and a scripted browser completing both sign-ins. Raw 2026-07-28
// requests carry the gateway's requestState.
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { loadGatewayConfig } from '../../../src/gateway/config/gateway-config.js';
import { startGateway, type RunningGateway } from '../../../src/gateway/server/start-gateway.js';
import { CONNECTED_USERS as USERS, singleUpstreamSettings, startConnectedAccountsParts, UPSTREAM_CLIENT, type ConnectedAccountsParts, type ConnectedUser } from '../../helpers/connected-accounts.js';
import { startTestIssuer } from '../../helpers/fake-issuer.js';
import { freePort } from '../../helpers/free-port.js';
import { postMcp } from '../../helpers/http-client.js';
import { PageBrowser } from './pages/page-browser.js';

const STATELESS = '2026-07-28';

let parts: ConnectedAccountsParts;
let origin: string;
let storeDir: string;
const lines: string[] = [];
let gateway: RunningGateway | undefined;
/** The audit trail's file: a connect answer is a deny there too. */
const auditDir = mkdtempSync(join(tmpdir(), 'connected-audit-'));
const auditFile = join(auditDir, 'audit.jsonl');

async function start(): Promise<RunningGateway> {
  return startGateway(loadGatewayConfig({ ...singleUpstreamSettings(parts), MCP_AUTH_AUDIT: auditFile }), { log: (line) => lines.push(line), warn: (line) => lines.push(line) });
}

before(async () => {
  parts = await startConnectedAccountsParts();
  ({ origin, storeDir } = parts);
  gateway = await start();
  parts.trustGateway(gateway.resource);
});

after(async () => {
  await gateway?.shutdown();
  await parts?.close();
  rmSync(auditDir, { recursive: true, force: true });
});

const meta = { 'io.modelcontextprotocol/protocolVersion': STATELESS, 'io.modelcontextprotocol/clientCapabilities': { elicitation: { url: {} } } };

async function call(sub: string, name: string, args: Record<string, unknown> = {}, extra: Record<string, unknown> = {}) {
  const token = await parts.callerToken(gateway!.resource, sub);
  return postMcp(`${origin}/mcp`, { jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name, arguments: args, _meta: meta, ...extra } }, token, {
    'mcp-protocol-version': STATELESS,
    'mcp-method': 'tools/call',
    'mcp-name': name,
  });
}

/** A request's log line is written when its answer closes, which may be just after the client has read it. */
async function requestLineWritten(): Promise<void> {
  await new Promise((resolve) => setTimeout(resolve, 50));
}

/** Opens `link` in `browser` and signs in as `user` at both authorization servers; the final page. */
async function connect(browser: PageBrowser, link: string, user: ConnectedUser) {
  const toLogin = await browser.request(link);
  assert.equal(toLogin.status, 302, toLogin.body);
  const loginDone = await browser.signIn(toLogin.headers.get('location')!, user, `${origin}/connect/callback`);
  const afterLogin = await browser.request(loginDone);
  if (afterLogin.status !== 302) return afterLogin;
  const upstreamDone = await browser.signIn(afterLogin.headers.get('location')!, user, `${origin}/connect/callback/upstream`);
  return browser.request(upstreamDone);
}

describe('connected accounts through the gateway', () => {
  let aliceLink = '';
  let aliceState = '';
  let usedRetry: Record<string, unknown> = {};
  /** Requests to the notes authorization server's token endpoint, counted once the test below starts counting. */
  let notesTokenRequests = 0;

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
    // The request line says what happened: not an allow, since the upstream was not called.
    await requestLineWritten();
    const logged = lines.map((line) => JSON.parse(line) as Record<string, unknown>).filter((line) => line.method === 'tools/call' && line.name === 'notes_add');
    assert.deepEqual(logged.map((line) => [line.decision, line.reason, line.status]), [['deny', 'connection_required', 200]]);
    // The audit record agrees with the log (records are written in batches, within 100 ms).
    let audited: Record<string, unknown>[] = [];
    for (let tries = 0; tries < 40 && audited.length === 0; tries++) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      const text = (() => {
        try {
          return readFileSync(auditFile, 'utf8');
        } catch {
          return '';
        }
      })();
      audited = text.split('\n').filter((line) => line !== '').map((line) => JSON.parse(line) as Record<string, unknown>).filter((record) => record.tool === 'notes_add');
    }
    assert.deepEqual(audited.map((record) => [record.decision, record.reason, record.status]), [['deny', 'connection_required', 200]]);
  });

  it("bob opening alice's link is refused, and nothing is stored", async () => {
    const filesBefore = readdirSync(storeDir).length;
    const page = await connect(new PageBrowser(origin), aliceLink, USERS[1]!);
    assert.equal(page.status, 403, page.body);
    assert.match(page.body, /signed in as someone other/i);
    const connections = readdirSync(storeDir).filter((name) => Buffer.from(name, 'base64url').toString().startsWith('conn:'));
    assert.deepEqual(connections, [], `no connection stored (${filesBefore} files before)`);
  });

  it("a ticket gone by the upstream's callback: the code is never exchanged, and nothing is stored", async () => {
    // Every request to the token endpoint ends in one of these two events of oidc-provider.
    for (const event of ['grant.success', 'grant.error']) parts.notesAs.provider.on(event, () => void notesTokenRequests++);
    const first = await call('alice', 'notes_add', { text: 'from alice' });
    const link = (Object.values(first.json.result.inputRequests)[0] as { params: { url: string } }).params.url;
    const browser = new PageBrowser(origin);
    const toLogin = await browser.request(link);
    const afterLogin = await browser.request(await browser.signIn(toLogin.headers.get('location')!, USERS[0]!, `${origin}/connect/callback`));
    assert.equal(afterLogin.status, 302, afterLogin.body);
    const upstreamDone = await browser.signIn(afterLogin.headers.get('location')!, USERS[0]!, `${origin}/connect/callback`);
    // The ticket expires (or is burnt) while the user is at the upstream.
    const ticketFile = Buffer.from(`ticket:${new URL(link).pathname.split('/').pop()}`).toString('base64url');
    rmSync(join(storeDir, ticketFile));
    const before = notesTokenRequests;
    const page = await browser.request(upstreamDone);
    assert.equal(page.status, 400, page.body);
    assert.equal(notesTokenRequests, before, "no request to the upstream's token endpoint");
    const connections = readdirSync(storeDir).filter((name) => Buffer.from(name, 'base64url').toString().startsWith('conn:'));
    assert.deepEqual(connections, []);
  });

  it('alice connects in the browser; the retry with the state reaches the upstream as alice', async () => {
    const first = await call('alice', 'notes_add', { text: 'from alice' });
    const link = (Object.values(first.json.result.inputRequests)[0] as { params: { url: string } }).params.url;
    const exchanged = notesTokenRequests;
    const page = await connect(new PageBrowser(origin), link, USERS[0]!);
    assert.equal(page.status, 200, page.body);
    assert.match(page.body, /Connected/);
    assert.equal(notesTokenRequests, exchanged + 1, 'the count above sees a code exchange');
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
    await requestLineWritten();
    const refusedLines = lines.map((line) => JSON.parse(line) as Record<string, unknown>).filter((line) => line.method === 'tools/call' && line.name === 'notes_list');
    assert.deepEqual(refusedLines.at(-1) && [refusedLines.at(-1)!.decision, refusedLines.at(-1)!.reason], ['deny', 'request_invalid']);
    // Exactly that: HTTP 200, no challenge (the caller's own token is fine), a message saying what to do, no state echoed.
    for (const refused of [replay, forged]) {
      assert.equal(refused.status, 200);
      assert.equal(refused.headers['www-authenticate'], undefined);
      assert.match(refused.json.error.message, /^Invalid params: the requestState .*; send the request again without it$/);
      assert.doesNotMatch(refused.text, /mcpg1\./);
    }
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
    assert.match(log, /"event":"connected","server":"upstream"/, "the single upstream is named upstream in page lines");
  });
});

describe('connected accounts with several issuers', () => {
  it('a caller of an issuer other than the login issuer is told in the answer that it cannot connect; no link is made', async () => {
    const partner = await startTestIssuer();
    const dir = mkdtempSync(join(tmpdir(), 'mcpg-partner-'));
    const settings = {
      ...singleUpstreamSettings(parts),
      PORT: String(await freePort()),
      MCP_AUTH_ISSUER: `${parts.gatewayAs.issuer},${partner.issuer}`,
      MCP_AUTH_LOGIN_ISSUER: parts.gatewayAs.issuer,
      MCP_AUTH_TOKEN_STORE: join(dir, 'tokens'),
    };
    const both = await startGateway(loadGatewayConfig(settings), { log: () => {}, warn: () => {} });
    try {
      const token = await partner.sign({ aud: both.resource, sub: 'carol', scope: 'mcp' });
      const answer = await postMcp(both.resource, { jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'notes_list', arguments: {}, _meta: meta } }, token, {
        'mcp-protocol-version': STATELESS,
        'mcp-method': 'tools/call',
        'mcp-name': 'notes_list',
      });
      assert.equal(answer.status, 403, answer.text);
      assert.equal(
        answer.json.error.message,
        `Forbidden: accounts of the issuer ${partner.issuer} cannot connect the upstream MCP server: this gateway connects accounts only for users who sign in through ${parts.gatewayAs.issuer}`,
      );
      assert.doesNotMatch(answer.text, /\/connect\/|carol/, 'no link, no subject');
      assert.deepEqual(readdirSync(join(dir, 'tokens')).filter((name) => !name.startsWith('.')), [], 'no ticket was stored');
    } finally {
      await both.shutdown();
      await partner.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
