// The pages' small parts on their own: escaping, cookies, tickets, and a sign-in's state looked up once only.
import assert from 'node:assert/strict';
import type { IncomingMessage } from 'node:http';
import { describe, it } from 'node:test';
import { createConnectTicket, isTicketId, readConnectTicket, ticketKey } from '../../../../src/gateway/connected/pages/connect-ticket.js';
import { createGatewayLogin } from '../../../../src/gateway/connected/pages/gateway-login.js';
import { escapeHtml, html } from '../../../../src/gateway/connected/pages/html-page.js';
import { clearFlowBinding, flowCookieName, MAX_PENDING_FLOWS, readFlowBinding, startFlowBinding } from '../../../../src/gateway/connected/pages/flow-cookies.js';
import { clearPageCookie, readPageCookie, setPageCookie } from '../../../../src/gateway/connected/pages/page-cookies.js';
import { createMemoryTokenStore } from '../../../../src/gateway/connected/store/memory-token-store.js';
import { jsonSealer } from './page-browser.js';

const request = (cookie?: string): IncomingMessage => ({ headers: cookie === undefined ? {} : { cookie } }) as IncomingMessage;

describe('page parts', () => {
  it('escapes the five HTML specials, in text and through the html tag, and keeps SafeHtml as is', () => {
    assert.equal(escapeHtml(`<a href="x" title='y'>&</a>`), '&lt;a href=&quot;x&quot; title=&#39;y&#39;&gt;&amp;&lt;/a&gt;');
    const inner = html`<b>${'<i>'}</b>`;
    assert.equal(html`<p>${inner}${[inner, inner]}${'"'}</p>`.__html, '<p><b>&lt;i&gt;</b><b>&lt;i&gt;</b><b>&lt;i&gt;</b>&quot;</p>');
  });

  it('reads only its own cookie, with a value of the form it sets, and clears with Max-Age=0', () => {
    assert.equal(readPageCookie(request('a=1; mcpg_login=abc.def_-; b=2'), 'mcpg_login', false), 'abc.def_-');
    assert.equal(readPageCookie(request('__Host-mcpg_login=abc'), 'mcpg_login', false), undefined, 'the https name is not the http one');
    assert.equal(readPageCookie(request('__Host-mcpg_login=abc'), 'mcpg_login', true), 'abc');
    assert.equal(readPageCookie(request('mcpg_login="<x>"'), 'mcpg_login', false), undefined);
    assert.equal(readPageCookie(request(`mcpg_login=${'a'.repeat(9000)}`), 'mcpg_login', false), undefined);
    assert.equal(readPageCookie(request(), 'mcpg_login', false), undefined);
    assert.equal(setPageCookie('mcpg_login', 'v', 60.9, true), '__Host-mcpg_login=v; Path=/; Max-Age=60; HttpOnly; SameSite=Lax; Secure');
    assert.match(clearPageCookie('mcpg_login', false), /^mcpg_login=; Path=\/; Max-Age=0;/);
  });

  it('keeps one binding cookie per flow, named by a digest of its state, and at most MAX_PENDING_FLOWS of them', () => {
    const states = Array.from({ length: 7 }, (_, i) => `state-${i}-${'x'.repeat(40)}`);
    const name = flowCookieName(states[0]!, false);
    assert.match(name, /^mcpg_flow_[\w-]{16}$/);
    assert.ok(!name.includes('state'), 'the state itself is no cookie name');
    assert.match(flowCookieName(states[0]!, true), /^__Host-mcpg_flow_[\w-]{16}$/);
    assert.notEqual(flowCookieName(states[1]!, false), name);
    const [line] = startFlowBinding(request(), states[0]!, 'bind0', 600, true);
    assert.equal(line, `${flowCookieName(states[0]!, true)}=bind0; Path=/; Max-Age=600; HttpOnly; SameSite=Lax; Secure`);
    const two = request(`${flowCookieName(states[0]!, false)}=bind0; ${flowCookieName(states[1]!, false)}=bind1; mcpg_login=s`);
    assert.equal(readFlowBinding(two, states[0]!, false), 'bind0');
    assert.equal(readFlowBinding(two, states[1]!, false), 'bind1');
    assert.equal(readFlowBinding(two, states[2]!, false), undefined);
    assert.equal(readFlowBinding(two, states[0]!, true), undefined, 'the https name is not the http one');
    // A browser already holding MAX_PENDING_FLOWS bindings: starting one more clears the oldest (sent first).
    const full = request(states.slice(0, MAX_PENDING_FLOWS).map((state, i) => `${flowCookieName(state, false)}=b${i}`).join('; '));
    const lines = startFlowBinding(full, states[6]!, 'new', 600, false);
    assert.deepEqual(lines, [clearFlowBinding(states[0]!, false), `${flowCookieName(states[6]!, false)}=new; Path=/; Max-Age=600; HttpOnly; SameSite=Lax`]);
    // A flow that follows another (the upstream's after the sign-in) ends that one instead.
    const next = startFlowBinding(full, states[6]!, 'new', 900, false, states[2]);
    assert.deepEqual(next.slice(0, 1), [clearFlowBinding(states[2]!, false)]);
    assert.equal(next.length, 2, 'ending the flow it follows made room');
    assert.match(clearFlowBinding(states[0]!, false), /^mcpg_flow_[\w-]{16}=; Path=\/; Max-Age=0; HttpOnly; SameSite=Lax$/);
  });

  it('keeps a ticket sealed under its key for 10 minutes, holding no user data in its id', async () => {
    const store = createMemoryTokenStore();
    const sealer = jsonSealer();
    const user = { issuer: 'https://id.example', subject: 'alice' };
    const id = await createConnectTicket(store, sealer, { user, server: 'notes', scope: 'a b' });
    assert.ok(isTicketId(id));
    assert.doesNotMatch(id, /alice|notes/);
    const ticket = await readConnectTicket(store, sealer, id);
    assert.deepEqual({ ...ticket, expiresAt: undefined }, { user, server: 'notes', scope: 'a b', expiresAt: undefined });
    assert.ok(Math.abs(ticket!.expiresAt - Date.now() - 600_000) < 5_000);
    // A sealed value moved under another ticket's key does not open there.
    const other = 'B'.repeat(43);
    await store.set(ticketKey(other), (await store.get(ticketKey(id)))!);
    assert.equal(await readConnectTicket(store, sealer, other), undefined);
    assert.equal(await readConnectTicket(store, sealer, 'short'), undefined);
    assert.equal(await readConnectTicket(store, sealer, id, () => Date.now() + 600_001), undefined, 'expired');
  });

  it('hands out one ticket per user, server and scope while it is good: 1 000 answers write one entry and one index', async () => {
    const store = createMemoryTokenStore();
    const sealer = jsonSealer();
    const user = { issuer: 'https://id.example', subject: 'alice' };
    const ids = new Set<string>();
    for (let i = 0; i < 1000; i++) ids.add(await createConnectTicket(store, sealer, { user, server: 'notes' }));
    assert.equal(ids.size, 1);
    assert.equal((await store.keys('ticket:', 10)).length, 1);
    assert.equal((await store.keys('ticketof:', 10)).length, 1);
    assert.equal((await store.keys('', 10)).length, 2, 'nothing else is written');
    const scoped = await createConnectTicket(store, sealer, { user, server: 'notes', scope: 'notes:write' });
    const bobs = await createConnectTicket(store, sealer, { user: { ...user, subject: 'bob' }, server: 'notes' });
    assert.equal(new Set([...ids, scoped, bobs]).size, 3, 'another scope or user gets its own ticket');
    // A ticket gone (used or burnt) is not handed out again: the next answer makes a new one.
    await store.delete(ticketKey([...ids][0]!));
    const next = await createConnectTicket(store, sealer, { user, server: 'notes' });
    assert.ok(!ids.has(next) && (await readConnectTicket(store, sealer, next)) !== undefined);
    assert.equal((await store.keys('ticket:', 10)).length, 3);
  });

  it('answers undefined for a state that is no pending sign-in, without asking the issuer', async () => {
    let discovered = 0;
    const store = createMemoryTokenStore();
    const login = createGatewayLogin({
      issuer: 'http://127.0.0.1:1',
      clientId: 'c',
      gatewayOrigin: 'https://gw.example/mcp',
      store,
      sealer: jsonSealer(),
      discover: () => {
        discovered++;
        return Promise.reject(new Error('not reached'));
      },
    });
    assert.equal(login.redirectUri.href, 'https://gw.example/connect/callback');
    assert.equal(await login.completeLogin(new URL('https://gw.example/connect/callback?state=' + 'x'.repeat(43) + '&code=c'), 'b'), undefined);
    assert.equal(await login.completeLogin(new URL('https://gw.example/connect/callback?state=../../etc'), 'b'), undefined);
    assert.equal(discovered, 0);
  });
});
