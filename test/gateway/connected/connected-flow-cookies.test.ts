// The browser bindings of the connect flow, read from the Set-Cookie headers of the running gateway (real
// authorization servers, the notes example as the upstream): each for the whole origin (`__Host-` on https, which
// demands Path=/; the gateway never passes cookies on to an upstream), HttpOnly, SameSite=Lax; and when the upstream's
// authorization fails (the user declines there, or the code exchange is refused), the answer clears that flow's
// cookie at once rather than leaving it to expire.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { loadGatewayConfig } from '../../../src/gateway/config/gateway-config.js';
import { startGateway, type RunningGateway } from '../../../src/gateway/server/start-gateway.js';
import { CONNECTED_USERS, singleUpstreamSettings, startConnectedAccountsParts, type ConnectedAccountsParts } from '../../helpers/connected-accounts.js';
import { postMcp } from '../../helpers/http-client.js';
import { PageBrowser, type Seen } from './pages/page-browser.js';

const VERSION = '2025-11-25';
const ALICE = CONNECTED_USERS[0];
/** A flow binding being set: its name and attributes as the gateway writes them on http. */
const SET_BINDING = /^(mcpg_flow_[\w-]{16})=[\w-]{43}; Path=\/; Max-Age=(\d+); HttpOnly; SameSite=Lax$/;

/** The names a `Set-Cookie` list clears, each checked to be cleared for the path it was set for. */
function clearedNames(seen: Seen): string[] {
  return seen.headers
    .getSetCookie()
    .filter((line) => / Max-Age=0;/.test(line))
    .map((line) => {
      assert.match(line, /^mcpg_flow_[\w-]{16}=; Path=\/; Max-Age=0; HttpOnly; SameSite=Lax$/);
      return line.slice(0, line.indexOf('='));
    });
}

describe('connected accounts: the connect flow cookies', { timeout: 60_000 }, () => {
  let parts: ConnectedAccountsParts;
  let gateway: RunningGateway | undefined;
  let nextId = 1;

  before(async () => {
    parts = await startConnectedAccountsParts();
    gateway = await startGateway(loadGatewayConfig(singleUpstreamSettings(parts)), { log: () => undefined, warn: () => undefined });
    parts.trustGateway(gateway.resource);
  });

  after(async () => {
    await gateway?.shutdown();
    await parts?.close();
  });

  /** A fresh connect link for alice: a 2025 session's call gets it in a tool result. */
  async function connectLink(): Promise<string> {
    const token = await parts.callerToken(gateway!.resource, 'alice');
    const initialize = { jsonrpc: '2.0', id: nextId++, method: 'initialize', params: { protocolVersion: VERSION, capabilities: {}, clientInfo: { name: 'test', version: '1' } } };
    const opened = await postMcp(`${parts.origin}/mcp`, initialize, token);
    const session = { 'mcp-session-id': String(opened.headers['mcp-session-id']), 'mcp-protocol-version': VERSION };
    const call = await postMcp(`${parts.origin}/mcp`, { jsonrpc: '2.0', id: nextId++, method: 'tools/call', params: { name: 'notes_list', arguments: {} } }, token, session);
    return /(http:\/\/\S+?\/connect\/[A-Za-z0-9_-]+)/.exec(JSON.stringify(call.json.result.content))![1]!;
  }

  /** Opens a link and signs in at the gateway's issuer: the answer that sends the browser to the upstream's, and its binding's name. */
  async function toUpstream(browser: PageBrowser): Promise<{ answer: Seen; binding: string }> {
    const link = await browser.request(await connectLink());
    assert.equal(link.status, 302, link.body);
    const [loginLine] = link.headers.getSetCookie();
    const [, loginBinding, loginAge] = SET_BINDING.exec(loginLine ?? '') ?? [];
    assert.ok(loginBinding, `the link's binding: ${loginLine}`);
    assert.equal(loginAge, '600');
    const answer = await browser.request(await browser.signIn(link.headers.get('location')!, ALICE, parts.callback));
    assert.equal(answer.status, 302, answer.body);
    assert.deepEqual(clearedNames(answer), [loginBinding], "the sign-in's binding ends as the upstream's starts");
    const set = answer.headers.getSetCookie().map((line) => SET_BINDING.exec(line)).filter((match) => match !== null);
    assert.equal(set.length, 1, answer.headers.getSetCookie().join('\n'));
    assert.equal(set[0]![2], '900');
    return { answer, binding: set[0]![1]! };
  }

  it('binds each step of the flow with a cookie of its own, HttpOnly and SameSite=Lax, cleared when it connects', async () => {
    const browser = new PageBrowser(parts.origin);
    const { answer, binding } = await toUpstream(browser);
    const done = await browser.request(await browser.signIn(answer.headers.get('location')!, ALICE, parts.upstreamCallback));
    assert.equal(done.status, 200, done.body);
    assert.deepEqual(clearedNames(done), [binding]);
  });

  it("clears the flow's cookie when the user declines at the upstream's authorization server", async () => {
    await disconnect();
    const browser = new PageBrowser(parts.origin);
    const { answer, binding } = await toUpstream(browser);
    const back = await browser.signIn(answer.headers.get('location')!, ALICE, parts.upstreamCallback, true);
    assert.equal(back.searchParams.get('error'), 'access_denied');
    const refused = await browser.request(back);
    assert.equal(refused.status, 502, refused.body);
    assert.deepEqual(clearedNames(refused), [binding]);
  });

  it("clears the flow's cookie when the upstream's token endpoint refuses the code", async () => {
    const browser = new PageBrowser(parts.origin);
    const { answer, binding } = await toUpstream(browser);
    const back = await browser.signIn(answer.headers.get('location')!, ALICE, parts.upstreamCallback);
    back.searchParams.set('code', 'not-a-code-the-server-issued');
    const refused = await browser.request(back);
    assert.equal(refused.status, 502, refused.body);
    assert.deepEqual(clearedNames(refused), [binding]);
  });

  /** Forgets alice's connection, so that a call asks her to connect again. */
  async function disconnect(): Promise<void> {
    const browser = new PageBrowser(parts.origin);
    const start = await browser.request(`${parts.origin}/connections`);
    await browser.request(await browser.signIn(start.headers.get('location')!, ALICE, parts.callback));
    const list = await browser.request(`${parts.origin}/connections`);
    const csrf = /name="csrf" value="([\w-]+)"/.exec(list.body)?.[1];
    assert.ok(csrf, list.body);
    const done = await browser.request(`${parts.origin}/connections/disconnect`, { method: 'POST', form: { server: 'upstream', csrf }, headers: { 'sec-fetch-site': 'same-origin' } });
    assert.equal(done.status, 303, done.body);
  }
});
