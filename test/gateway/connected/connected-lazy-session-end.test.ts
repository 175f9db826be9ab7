// Connected accounts, 2025-11-25 and a single upstream that keeps sessions of its own: when the gateway forgets a
// session it opened before the user connected (idle expiry, eviction at MCP_AUTH_MAX_SESSIONS), it ends the upstream's
// session it had opened for it with one DELETE, naming the upstream's id and the protocol version, sent with the
// user's own upstream token. The client's next request gets 404, as for any forgotten session.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import type { RunningGateway } from '../../../src/gateway/server/start-gateway.js';
import { CONNECTED_USERS, NOTES_SCOPES, singleUpstreamSettings, startConnectedAccountsParts, startConnectedGateway, type ConnectedAccountsParts } from '../../helpers/connected-accounts.js';
import { postMcp, type HttpAnswer } from '../../helpers/http-client.js';
import { PageBrowser } from './pages/page-browser.js';
import { startSessionUpstream, type Received, type SessionUpstream } from './session-upstream.js';

const VERSION = '2025-11-25';
/** The idle timeout of the expiry case, in milliseconds: short, yet long beside a few loopback round trips. */
const IDLE_MS = 1_000;

interface Setup {
  readonly parts: ConnectedAccountsParts;
  readonly upstream: SessionUpstream;
  readonly gateway: RunningGateway;
  readonly tokens: Record<string, string>;
}

/** The parts, an upstream with sessions, and a gateway in front of it with `settings` besides the usual. */
async function startSetup(settings: Record<string, string>): Promise<Setup> {
  const parts = await startConnectedAccountsParts();
  const upstream = await startSessionUpstream();
  parts.notesAs.addResource(upstream.url, { scopes: NOTES_SCOPES });
  const gateway = await startConnectedGateway(parts, {
    ...singleUpstreamSettings(parts),
    MCP_AUTH_UPSTREAM: upstream.url,
    MCP_AUTH_UPSTREAM_ISSUER: parts.notesAs.issuer,
    MCP_AUTH_UPSTREAM_RESOURCE: upstream.url,
    ...settings,
  });
  const tokens: Record<string, string> = {};
  for (const user of ['alice', 'bob']) tokens[user] = await parts.callerToken(gateway.resource, user);
  return { parts, upstream, gateway, tokens };
}

async function stopSetup(setup: Setup | undefined): Promise<void> {
  await setup?.gateway.shutdown();
  await setup?.upstream.close();
  await setup?.parts.close();
}

let nextId = 1;

async function openSession(setup: Setup, user: string): Promise<string> {
  const initialize = { jsonrpc: '2.0', id: nextId++, method: 'initialize', params: { protocolVersion: VERSION, capabilities: {}, clientInfo: { name: 'test', version: '1' } } };
  const opened = await postMcp(`${setup.parts.origin}/mcp`, initialize, setup.tokens[user]!);
  assert.equal(opened.status, 200, opened.text);
  const id = opened.headers['mcp-session-id'];
  assert.equal(typeof id, 'string');
  return id as string;
}

const echo = (setup: Setup, user: string, sessionId: string, text: string): Promise<HttpAnswer> =>
  postMcp(`${setup.parts.origin}/mcp`, { jsonrpc: '2.0', id: nextId++, method: 'tools/call', params: { name: 'echo', arguments: { text } } }, setup.tokens[user]!, {
    'mcp-protocol-version': VERSION,
    'mcp-session-id': sessionId,
  });

/**
 * Alice opens a session before connecting, connects through its link, and calls through it: the upstream's session is
 * then open. Gives the client's id, and the upstream's initialize as received (its id, alice's upstream token).
 */
async function connectThroughSession(setup: Setup): Promise<{ clientId: string; opened: Received; upstreamId: string }> {
  const clientId = await openSession(setup, 'alice');
  const first = await echo(setup, 'alice', clientId, 'before');
  assert.equal(first.status, 200, first.text);
  assert.equal(first.json.result.isError, true);
  const link = /(http:\/\/\S+?\/connect\/[A-Za-z0-9_-]+)/.exec(JSON.stringify(first.json.result.content))![1]!;
  const done = await new PageBrowser(setup.parts.origin).connect(link, CONNECTED_USERS[0], setup.parts.callback, setup.parts.upstreamCallback);
  assert.equal(done.status, 200, done.body);
  const called = await echo(setup, 'alice', clientId, 'connected');
  assert.equal(called.status, 200, called.text);
  assert.equal(called.json.result.content[0].text, 'echo: connected');
  const opened = setup.upstream.received.find((entry) => entry.method === 'initialize' && entry.status === 200);
  assert.ok(opened, 'the upstream session was opened');
  assert.equal(setup.upstream.issued.length, 1);
  return { clientId, opened, upstreamId: setup.upstream.issued[0]! };
}

const deletes = (upstream: SessionUpstream): Received[] => upstream.received.filter((entry) => entry.httpMethod === 'DELETE');

/** Waits (up to 5 s) until the upstream has received `count` DELETEs. */
async function waitForDeletes(upstream: SessionUpstream, count: number): Promise<void> {
  const deadline = Date.now() + 5_000;
  while (deletes(upstream).length < count && Date.now() < deadline) await sleep(20);
}

/** The one DELETE the upstream received ended `upstreamId`, with the protocol version and the token it was opened with. */
function assertOneDelete(setup: Setup, upstreamId: string, opened: Received): void {
  const received = deletes(setup.upstream);
  assert.equal(received.length, 1, 'exactly one DELETE');
  const [ended] = received;
  assert.equal(ended!.sessionId, upstreamId);
  assert.equal(ended!.protocolVersion, VERSION);
  assert.equal(ended!.status, 200, 'the upstream knew the session and its token');
  assert.ok(ended!.authorization?.startsWith('Bearer '));
  assert.equal(ended!.authorization, opened.authorization, "alice's own upstream token");
  assert.notEqual(ended!.authorization, `Bearer ${setup.tokens.alice}`, "never the caller's token");
  assert.equal(setup.upstream.sessions.has(upstreamId), false, "the upstream's session ended");
}

for (const sealed of [false, true]) {
  const secret: Record<string, string> = sealed ? { MCP_AUTH_SESSION_SECRET: randomBytes(32).toString('base64url') } : {};
  const label = sealed ? 'sealed session ids' : 'session ids held by the gateway';

  describe(`connected accounts: an idle session opened before the user connected ends the upstream's (${label})`, { timeout: 60_000 }, () => {
    let setup: Setup | undefined;
    before(async () => {
      setup = await startSetup({ MCP_AUTH_SESSION_IDLE_TIMEOUT_MS: String(IDLE_MS), ...secret });
    });
    after(() => stopSetup(setup));

    it('sends one DELETE once the session expired, without any request of the client, which then gets 404', async () => {
      const s = setup!;
      const { clientId, opened, upstreamId } = await connectThroughSession(s);
      assert.equal(deletes(s.upstream).length, 0, 'nothing ended while in use');
      await waitForDeletes(s.upstream, 1);
      assertOneDelete(s, upstreamId, opened);
      const expired = await echo(s, 'alice', clientId, 'after');
      assert.equal(expired.status, 404, expired.text);
      assert.deepEqual(expired.json.error, { code: -32001, message: 'Session not found' });
      await sleep(IDLE_MS / 2);
      assert.equal(deletes(s.upstream).length, 1, 'still one DELETE');
      assert.equal(s.upstream.issued.length, 1, 'no upstream session opened for a forgotten one');
    });
  });

  describe(`connected accounts: an evicted session opened before the user connected ends the upstream's (${label})`, { timeout: 60_000 }, () => {
    let setup: Setup | undefined;
    before(async () => {
      setup = await startSetup({ MCP_AUTH_MAX_SESSIONS: '2', ...secret });
    });
    after(() => stopSetup(setup));

    it("another caller's sessions push it out: one DELETE with alice's token, and her client gets 404", async () => {
      const s = setup!;
      const { clientId, opened, upstreamId } = await connectThroughSession(s);
      // Bob has not connected: his sessions are the gateway's too, and the second one is past the bound of two.
      await openSession(s, 'bob');
      assert.equal(deletes(s.upstream).length, 0, 'nothing forgotten within the bound');
      await openSession(s, 'bob');
      await waitForDeletes(s.upstream, 1);
      assertOneDelete(s, upstreamId, opened);
      const evicted = await echo(s, 'alice', clientId, 'after');
      assert.equal(evicted.status, 404, evicted.text);
      assert.deepEqual(evicted.json.error, { code: -32001, message: 'Session not found' });
      assert.equal(deletes(s.upstream).length, 1, 'still one DELETE');
    });
  });
}
