// The connected-account pages end to end: a real oidc-provider as the gateway's issuer (users alice and bob, a
// pre-registered confidential web client), the pages served by node:http on 127.0.0.1, a small upstream
// authorization page that sends the browser straight back, and a scripted browser with its own cookies.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { randomBytes } from 'node:crypto';
import { startAuthorizationServer, type AuthorizationServer } from '../../../../examples/dev/authorization-server.js';
import { connectionKey, userKey, type UserRef } from '../../../../src/gateway/connected/oauth/connection-record.js';
import { parseTrustedProxies } from '../../../../src/core/kernel/trusted-proxies.js';
import { createConnectPages, type ConnectPagesHandler } from '../../../../src/gateway/connected/pages/connect-pages.js';
import { createConnectTicket, readConnectTicket } from '../../../../src/gateway/connected/pages/connect-ticket.js';
import { upstreamCallbackUrl } from '../../../../src/gateway/connected/oauth/gateway-client-urls.js';
import { MAX_PENDING_FLOWS } from '../../../../src/gateway/connected/pages/flow-cookies.js';
import { createGatewayLogin } from '../../../../src/gateway/connected/pages/gateway-login.js';
import type { UpstreamAuthorizationPort } from '../../../../src/gateway/connected/pages/page-ports.js';
import { createMemoryTokenStore } from '../../../../src/gateway/connected/store/memory-token-store.js';
import { jsonSealer, PageBrowser, type Seen } from './page-browser.js';

const ALICE = { username: 'alice', password: 'alice-password' };
const BOB = { username: 'bob', password: 'bob-password' };
const LOGIN_CLIENT = { id: 'gateway-login', secret: randomBytes(24).toString('base64url') };
const HOSTILE = `<script>alert(1)</script>"'&x`;

/** A stand-in for the upstream authorization: its authorization page redirects straight back with a code. */
function fakeUpstream(store: ReturnType<typeof createMemoryTokenStore>, sealer: ReturnType<typeof jsonSealer>, upstreamOrigin: () => string, callback: (server: string) => string) {
  const pending = new Map<string, string>();
  const calls = { begin: [] as { ticketId: string; scope?: string; server: string }[], complete: 0, revoke: [] as { user: UserRef; server: string }[] };
  /** Set to make the next begin or revoke fail, as an unreachable upstream authorization server would. */
  const fail = { begin: false, revoke: false };
  const port: UpstreamAuthorizationPort = {
    async begin(input) {
      calls.begin.push(input);
      if (fail.begin) throw new Error('upstream authorization server unreachable');
      const state = randomBytes(32).toString('base64url');
      pending.set(state, input.ticketId);
      const url = new URL('/authorize', upstreamOrigin());
      url.searchParams.set('state', state);
      url.searchParams.set('server', input.server);
      return url;
    },
    async complete(callbackUrl) {
      calls.complete++;
      const state = callbackUrl.searchParams.get('state') ?? '';
      const ticketId = pending.get(state);
      if (ticketId === undefined || callbackUrl.searchParams.get('code') !== 'upstream-code') return undefined;
      pending.delete(state);
      const ticket = await readConnectTicket(store, sealer, ticketId);
      assert.ok(ticket, 'the ticket is readable while the upstream step completes');
      const key = connectionKey(ticket.user, ticket.server);
      await store.set(key, await sealer.seal(key, { accessToken: 'upstream-access-token' }));
      return { ticketId };
    },
    async revoke(user, server) {
      calls.revoke.push({ user, server });
      if (fail.revoke) throw new Error('revocation endpoint unreachable');
      await store.delete(connectionKey(user, server));
      return 'revoked';
    },
  };
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', upstreamOrigin());
    const back = new URL(callback(url.searchParams.get('server') ?? ''));
    back.searchParams.set('code', 'upstream-code');
    back.searchParams.set('state', url.searchParams.get('state') ?? '');
    res.writeHead(302, { location: back.href }).end();
  });
  return { port, calls, fail, server };
}

async function listen(server: Server): Promise<string> {
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

describe('connected-account pages', { timeout: 30_000 }, () => {
  const store = createMemoryTokenStore({ maxEntries: 1000 });
  const sealer = jsonSealer();
  const lines: object[] = [];
  let as: AuthorizationServer;
  let gateway: Server;
  let origin = '';
  let upstreamOrigin = '';
  let alice: UserRef;
  let bob: UserRef;
  let handler: ConnectPagesHandler;
  const upstream = fakeUpstream(store, sealer, () => upstreamOrigin, (server) => upstreamCallbackUrl(origin, server));
  const browsers: PageBrowser[] = [];
  const browser = (): PageBrowser => {
    const b = new PageBrowser(origin);
    browsers.push(b);
    return b;
  };

  before(async () => {
    let serve: ConnectPagesHandler | undefined;
    gateway = createServer((req, res) => {
      if (!serve?.(req, res)) res.writeHead(404).end('not a page');
    });
    origin = await listen(gateway);
    upstreamOrigin = await listen(upstream.server);
    as = await startAuthorizationServer({
      users: [ALICE, BOB],
      clients: [{ clientId: LOGIN_CLIENT.id, clientSecret: LOGIN_CLIENT.secret, redirectUris: [`${origin}/connect/callback`], name: 'Gateway sign-in' }],
    });
    alice = { issuer: as.issuer, subject: 'alice' };
    bob = { issuer: as.issuer, subject: 'bob' };
    const login = createGatewayLogin({ issuer: as.issuer, clientId: LOGIN_CLIENT.id, clientSecret: LOGIN_CLIENT.secret, gatewayOrigin: origin, store, sealer, timeoutMs: 5_000 });
    handler = createConnectPages({ gatewayOrigin: origin, store, sealer, login, port: upstream.port, log: (line) => lines.push(line) });
    serve = handler;
  });

  after(async () => {
    gateway.closeAllConnections();
    upstream.server.closeAllConnections();
    await Promise.all([as?.close(), new Promise((r) => gateway.close(r)), new Promise((r) => upstream.server.close(r))]);
    await store.close();
  });

  /** Opens a connect link and signs in as `user`; returns the gateway's answer to the login callback. */
  async function openLinkAndSignIn(b: PageBrowser, ticketId: string, user: { username: string; password: string }): Promise<{ callback: URL; answer: Seen }> {
    const link = await b.request(`${origin}/connect/${ticketId}`);
    assert.equal(link.status, 302, link.body);
    const location = new URL(link.headers.get('location')!);
    assert.equal(location.origin, as.issuer, 'the link leads to the login issuer only');
    assert.equal(location.searchParams.get('code_challenge_method'), 'S256');
    assert.ok(location.searchParams.get('nonce'));
    assert.match(link.headers.get('set-cookie') ?? '', /^mcpg_flow_[\w-]{16}=[\w-]{43}; Path=\/; Max-Age=600; HttpOnly; SameSite=Lax$/);
    const callback = await b.signIn(location, user, `${origin}/connect/callback`);
    return { callback, answer: await b.request(callback) };
  }

  it("connects alice's server when alice opens her link: port.begin, then the upstream, then the connected page", async () => {
    const ticketId = await createConnectTicket(store, sealer, { user: alice, server: 'notes', scope: 'notes:read' });
    const b = browser();
    const beginCalls = upstream.calls.begin.length;
    const { answer } = await openLinkAndSignIn(b, ticketId, ALICE);
    assert.equal(answer.status, 302, answer.body);
    // The pending authorization counts against alice's share of the store's short-lived entries.
    assert.deepEqual(upstream.calls.begin.slice(beginCalls), [{ ticketId, server: 'notes', owner: userKey(alice), scope: 'notes:read' }]);
    const toUpstream = new URL(answer.headers.get('location')!);
    assert.equal(toUpstream.origin, upstreamOrigin);
    const back = await b.request(toUpstream);
    const done = await b.request(back.headers.get('location')!);
    assert.equal(done.status, 200, done.body);
    assert.match(done.body, /Connected to notes\. Return to your client and retry\./);
    assert.ok(await store.get(connectionKey(alice, 'notes')), 'the connection is stored');
    assert.equal(await readConnectTicket(store, sealer, ticketId), undefined, 'the ticket is used up');
    assert.equal((await b.request(`${origin}/connect/${ticketId}`)).status, 410, 'the link works once');
    const replay = await b.request(back.headers.get('location')!);
    assert.equal(replay.status, 400, 'a replayed upstream callback is refused');
    const connected = lines.find((l) => (l as { event?: string }).event === 'connected') as Record<string, string>;
    assert.equal(connected.server, 'notes');
    assert.match(connected.user ?? '', /^[\w-]{16}$/);
  });

  it("refuses an upstream's state at another server's redirect URI, and a sign-in's state there, taking nothing", async () => {
    const ticketId = await createConnectTicket(store, sealer, { user: alice, server: 'archive' });
    const b = browser();
    const { answer } = await openLinkAndSignIn(b, ticketId, ALICE);
    assert.equal(answer.status, 302, answer.body);
    const back = new URL((await b.request(answer.headers.get('location')!)).headers.get('location')!);
    assert.equal(back.pathname, '/connect/callback/archive', "the upstream sends the browser to the server's own redirect URI");
    const completeCalls = upstream.calls.complete;
    // A mix-up: the state of `archive`'s flow, brought back to the redirect URI of `notes` (or of the sign-in).
    for (const path of ['/connect/callback/notes', '/connect/callback/upstream', '/connect/callback']) {
      const mixed = await b.request(`${origin}${path}${back.search}`);
      assert.equal(mixed.status, 400, `${path}: ${mixed.body}`);
    }
    assert.equal(upstream.calls.complete, completeCalls, 'the upstream authorization was never asked to exchange the code');
    assert.ok(lines.some((l) => (l as { event?: string }).event === 'refused_other_server'));
    const done = await b.request(back);
    assert.equal(done.status, 200, `the refusals took nothing: the real callback still completes (${done.body})`);
    assert.ok(await store.get(connectionKey(alice, 'archive')));
    // A sign-in's state is only looked for at the sign-in's redirect URI.
    const login = await b.request(`${origin}/connect/${await createConnectTicket(store, sealer, { user: alice, server: 'archive' })}`);
    const loginBack = await b.signIn(login.headers.get('location')!, ALICE, `${origin}/connect/callback`);
    const atUpstream = await b.request(`${origin}/connect/callback/notes${loginBack.search}`);
    assert.equal(atUpstream.status, 400, atUpstream.body);
    assert.equal((await b.request(loginBack)).status, 302, 'the sign-in still completes at its own redirect URI');
  });

  it("refuses bob opening alice's link: 403, nothing stored, the ticket burnt", async () => {
    const ticketId = await createConnectTicket(store, sealer, { user: alice, server: 'mail' });
    const beginCalls = upstream.calls.begin.length;
    const { answer } = await openLinkAndSignIn(browser(), ticketId, BOB);
    assert.equal(answer.status, 403);
    assert.match(answer.body, /signed in as someone other than the user who asked to connect/);
    assert.equal(upstream.calls.begin.length, beginCalls, 'the upstream is never asked');
    assert.equal(await store.get(connectionKey(alice, 'mail')), undefined);
    assert.equal(await store.get(connectionKey(bob, 'mail')), undefined);
    assert.equal(await readConnectTicket(store, sealer, ticketId), undefined, 'the ticket is burnt');
    const later = await browser().request(`${origin}/connect/${ticketId}`);
    assert.equal(later.status, 410, 'alice cannot use it afterwards either');
    const refusal = lines.find((l) => (l as { event?: string }).event === 'refused_other_user') as Record<string, string>;
    assert.equal(refusal.server, 'mail');
    assert.notEqual(refusal.user, refusal.signedIn);
  });

  it('answers an unknown, malformed or expired link with a page, never a redirect', async () => {
    const unknown = await browser().request(`${origin}/connect/${randomBytes(32).toString('base64url')}`);
    assert.equal(unknown.status, 410);
    assert.match(unknown.body, /expired, was already used, or was never issued/);
    const malformed = await browser().request(`${origin}/connect/not-a-ticket`);
    assert.equal(malformed.status, 404);
    const expiredId = await createConnectTicket(store, sealer, { user: alice, server: 'notes' }, () => Date.now() - 11 * 60_000);
    const expired = await browser().request(`${origin}/connect/${expiredId}`);
    assert.equal(expired.status, 410);
    assert.equal(expired.headers.get('location'), null);
    assert.ok(lines.some((l) => (l as { event?: string }).event === 'expired_ticket'));
  });

  it('refuses a replayed login callback, and one from a browser without the binding cookie, which takes nothing', async () => {
    const ticketId = await createConnectTicket(store, sealer, { user: alice, server: 'calendar' });
    const b = browser();
    const { callback, answer } = await openLinkAndSignIn(b, ticketId, ALICE);
    assert.equal(answer.status, 302);
    const replay = await b.request(callback);
    assert.equal(replay.status, 400, 'the login state is one-time');
    assert.match(replay.body, /unknown to the gateway/);

    // Another browser holds a callback URL for a sign-in it did not start.
    const ticket2 = await createConnectTicket(store, sealer, { user: alice, server: 'calendar' });
    const starter = browser();
    const link = await starter.request(`${origin}/connect/${ticket2}`);
    const stolen = await starter.signIn(link.headers.get('location')!, ALICE, `${origin}/connect/callback`);
    const other = browser();
    const refused = await other.request(stolen);
    assert.equal(refused.status, 403);
    assert.match(refused.body, /not started in this browser/);
    assert.equal(await store.get(connectionKey(alice, 'calendar')), undefined);
    const own = await starter.request(stolen);
    assert.equal(own.status, 302, `the refusal took nothing: the browser that started it still signs in (${own.body})`);
    assert.equal(new URL(own.headers.get('location')!).origin, upstreamOrigin);
  });

  it('connects two servers from two links opened at once in one browser, each flow bound by its own cookie', async () => {
    const b = browser();
    const [first, second] = [await createConnectTicket(store, sealer, { user: alice, server: 'tab-one' }), await createConnectTicket(store, sealer, { user: alice, server: 'tab-two' })];
    // Both links are opened before either sign-in comes back, as two tabs would.
    const links = [await b.request(`${origin}/connect/${first}`), await b.request(`${origin}/connect/${second}`)];
    assert.deepEqual(links.map((link) => link.status), [302, 302]);
    const flowCookies = () => [...(b.jar.get(origin)?.keys() ?? [])].filter((name) => name.startsWith('mcpg_flow_'));
    assert.equal(flowCookies().length, 2, 'one binding per flow');
    const callbacks = [];
    for (const link of links) callbacks.push(await b.signIn(link.headers.get('location')!, ALICE, `${origin}/connect/callback`));
    // Both go on to their upstreams; then both upstream callbacks come back, in the other order.
    const toUpstream = [];
    for (const callback of callbacks) {
      const answer = await b.request(callback);
      assert.equal(answer.status, 302, answer.body);
      toUpstream.push(answer.headers.get('location')!);
    }
    const backs = [];
    for (const url of toUpstream) backs.push((await b.request(url)).headers.get('location')!);
    for (const back of backs.reverse()) {
      const done = await b.request(back);
      assert.equal(done.status, 200, done.body);
    }
    assert.ok(await store.get(connectionKey(alice, 'tab-one')));
    assert.ok(await store.get(connectionKey(alice, 'tab-two')));
    assert.deepEqual(flowCookies(), [], 'every binding is cleared when its flow ends');
  });

  it('keeps at most MAX_PENDING_FLOWS bindings in one browser: the oldest flow is dropped, the newest complete', async () => {
    const b = browser();
    const links = [];
    for (let i = 0; i <= MAX_PENDING_FLOWS; i++) {
      const ticketId = await createConnectTicket(store, sealer, { user: alice, server: `many-${i}` });
      links.push(await b.request(`${origin}/connect/${ticketId}`));
    }
    assert.equal([...(b.jar.get(origin)?.keys() ?? [])].filter((name) => name.startsWith('mcpg_flow_')).length, MAX_PENDING_FLOWS);
    const oldest = await b.signIn(links[0]!.headers.get('location')!, ALICE, `${origin}/connect/callback`);
    assert.equal((await b.request(oldest)).status, 403, 'the dropped binding no longer matches');
    const newest = await b.signIn(links.at(-1)!.headers.get('location')!, ALICE, `${origin}/connect/callback`);
    assert.equal((await b.request(newest)).status, 302);
  });

  it('keeps one pending sign-in per ticket: opening the link again replaces it and renews the ticket', async () => {
    const ticketId = await createConnectTicket(store, sealer, { user: alice, server: 'reopened' });
    const before = (await store.keys('login:', 1000)).length;
    const first = browser();
    const firstLink = await first.request(`${origin}/connect/${ticketId}`);
    assert.equal(firstLink.status, 302);
    const expiresFirst = (await readConnectTicket(store, sealer, ticketId))!.expiresAt;
    await new Promise((resolve) => setTimeout(resolve, 5));
    const second = browser();
    const again = await second.request(`${origin}/connect/${ticketId}`);
    assert.equal(again.status, 302);
    assert.equal((await store.keys('login:', 1000)).length, before + 1, 'one pending sign-in, not two');
    assert.ok((await readConnectTicket(store, sealer, ticketId))!.expiresAt > expiresFirst, 'opening the link renews the ticket');
    // The replaced sign-in is unknown; the current one, from its own browser only, goes on to the upstream.
    const stale = await first.signIn(firstLink.headers.get('location')!, ALICE, `${origin}/connect/callback`);
    assert.equal((await first.request(stale)).status, 400);
    const current = await second.signIn(again.headers.get('location')!, ALICE, `${origin}/connect/callback`);
    const answer = await second.request(current);
    assert.equal(answer.status, 302);
    assert.equal(new URL(answer.headers.get('location')!).origin, upstreamOrigin);
  });

  it('refuses an upstream callback from a browser other than the one sent there, without calling complete or taking the flow', async () => {
    const ticketId = await createConnectTicket(store, sealer, { user: alice, server: 'files' });
    const b = browser();
    const { answer } = await openLinkAndSignIn(b, ticketId, ALICE);
    const back = await b.request(answer.headers.get('location')!);
    const completes = upstream.calls.complete;
    const refused = await browser().request(back.headers.get('location')!);
    assert.equal(refused.status, 403);
    assert.equal(upstream.calls.complete, completes, 'the code is never exchanged');
    assert.equal(await store.get(connectionKey(alice, 'files')), undefined);
    const own = await b.request(back.headers.get('location')!);
    assert.equal(own.status, 200, `the refusal took nothing: the browser sent there still completes (${own.body})`);
    assert.ok(await store.get(connectionKey(alice, 'files')));
    assert.equal((await browser().request(back.headers.get('location')!)).status, 400, 'and then it is used up, for everyone');
  });

  it('shows a cancelled sign-in when the user denies at the login issuer, and nothing is connected', async () => {
    const ticketId = await createConnectTicket(store, sealer, { user: alice, server: 'denied' });
    const b = browser();
    const link = await b.request(`${origin}/connect/${ticketId}`);
    const callback = await b.signIn(link.headers.get('location')!, ALICE, `${origin}/connect/callback`, true);
    assert.equal(callback.searchParams.get('error'), 'access_denied');
    const page = await b.request(callback);
    assert.equal(page.status, 403);
    assert.match(page.body, /cancelled/);
    assert.equal(await store.get(connectionKey(alice, 'denied')), undefined);
  });

  it('answers 503 with Retry-After when the login issuer does not answer', async () => {
    const closed = createServer();
    const deadIssuer = await listen(closed);
    await new Promise((r) => closed.close(r));
    const login = createGatewayLogin({ issuer: deadIssuer, clientId: LOGIN_CLIENT.id, gatewayOrigin: origin, store, sealer, timeoutMs: 1_000 });
    const pages = createConnectPages({ gatewayOrigin: origin, store, sealer, login, port: upstream.port });
    const server = createServer((req, res) => void (pages(req, res) || res.writeHead(404).end()));
    const local = await listen(server);
    try {
      const b = new PageBrowser(local);
      const ticketId = await createConnectTicket(store, sealer, { user: { issuer: deadIssuer, subject: 'alice' }, server: 'notes' });
      const page = await b.request(`${local}/connect/${ticketId}`);
      assert.equal(page.status, 503);
      assert.ok(Number(page.headers.get('retry-after')) >= 1);
      assert.doesNotMatch(page.body, /Error|at \//, 'no error text or stack');
    } finally {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    }
  });

  it('answers 502 pages when the upstream authorization fails to begin or to revoke, and stores nothing', async () => {
    const ticketId = await createConnectTicket(store, sealer, { user: alice, server: 'flaky' });
    const b = browser();
    upstream.fail.begin = true;
    try {
      const { answer } = await openLinkAndSignIn(b, ticketId, ALICE);
      assert.equal(answer.status, 502);
      assert.match(answer.body, /did not complete/);
      assert.doesNotMatch(answer.body, /unreachable/, 'no error text');
    } finally {
      upstream.fail.begin = false;
    }
    const key = connectionKey(alice, 'flaky');
    await store.set(key, await sealer.seal(key, { accessToken: 'x' }));
    const start = await b.request(`${origin}/connections`);
    await b.request(await b.signIn(start.headers.get('location')!, ALICE, `${origin}/connect/callback`));
    const csrf = /name="csrf" value="([\w-]+)"/.exec((await b.request(`${origin}/connections`)).body)?.[1] ?? '';
    upstream.fail.revoke = true;
    try {
      const refused = await b.request(`${origin}/connections/disconnect`, { method: 'POST', form: { server: 'flaky', csrf }, headers: { 'sec-fetch-site': 'same-origin' } });
      assert.equal(refused.status, 502);
      assert.match(refused.body, /could not disconnect flaky/);
    } finally {
      upstream.fail.revoke = false;
    }
    assert.ok(lines.some((l) => (l as { event?: string; server?: string }).event === 'upstream_failed' && (l as { server?: string }).server === 'flaky'));
  });

  it('budgets the sign-ins the connections page starts per client address: one address flooding leaves another its own, under a ceiling for all', async () => {
    const login = createGatewayLogin({ issuer: as.issuer, clientId: LOGIN_CLIENT.id, clientSecret: LOGIN_CLIENT.secret, gatewayOrigin: origin, store, sealer, timeoutMs: 5_000 });
    const pages = createConnectPages({ gatewayOrigin: origin, store, sealer, login, port: upstream.port, signInsPerMinute: 5, signInsPerAddressPerMinute: 2 });
    const server = createServer((req, res) => void (pages(req, res) || res.writeHead(404).end()));
    const local = await listen(server);
    // Each from a loopback address of its own (Linux routes all of 127/8 to the loopback interface).
    const from = (address: string, path = '/connections'): Promise<{ status: number; retryAfter: string | undefined }> =>
      new Promise((resolve, reject) => {
        const target = new URL(path, local);
        const req = httpRequest({ host: '127.0.0.1', port: target.port, path: target.pathname, localAddress: address, timeout: 5_000 }, (res) => {
          res.resume();
          resolve({ status: res.statusCode ?? 0, retryAfter: res.headers['retry-after'] as string | undefined });
        });
        req.on('timeout', () => req.destroy(new Error('timed out'))).on('error', reject).end();
      });
    try {
      const flood = [];
      for (let i = 0; i < 6; i++) flood.push(await from('127.0.0.2'));
      assert.deepEqual(flood.map((answer) => answer.status), [302, 302, 429, 429, 429, 429], 'one address gets its own budget, then 429');
      assert.match(flood[2]!.retryAfter ?? '', /^([1-9]|[1-5][0-9]|60)$/);
      assert.equal((await from('127.0.0.3')).status, 302, 'another address is not locked out by the flood');
      assert.equal((await from('127.0.0.3')).status, 302);
      // The ceiling for every address together (5 a minute here) is the last resort.
      assert.equal((await from('127.0.0.4')).status, 302);
      assert.equal((await from('127.0.0.5')).status, 429);
      // A connect link draws on no budget: it needs a live ticket.
      const ticketId = await createConnectTicket(store, sealer, { user: alice, server: 'notes' });
      assert.equal((await from('127.0.0.2', `/connect/${ticketId}`)).status, 302);
    } finally {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    }
  });

  it('behind a trusted proxy, budgets per client its X-Forwarded-For names; an untrusted peer\'s header is ignored', async () => {
    const login = createGatewayLogin({ issuer: as.issuer, clientId: LOGIN_CLIENT.id, clientSecret: LOGIN_CLIENT.secret, gatewayOrigin: origin, store, sealer, timeoutMs: 5_000 });
    const trustedProxies = parseTrustedProxies('127.0.0.1, 127.0.1.0/24');
    const pages = createConnectPages({ gatewayOrigin: origin, store, sealer, login, port: upstream.port, signInsPerMinute: 100, signInsPerAddressPerMinute: 2, trustedProxies });
    const server = createServer((req, res) => void (pages(req, res) || res.writeHead(404).end()));
    const local = await listen(server);
    const from = (address: string, forwardedFor?: string): Promise<number> =>
      new Promise((resolve, reject) => {
        const target = new URL('/connections', local);
        const headers = forwardedFor === undefined ? {} : { 'x-forwarded-for': forwardedFor };
        const req = httpRequest({ host: '127.0.0.1', port: target.port, path: target.pathname, localAddress: address, headers, timeout: 5_000 }, (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        });
        req.on('timeout', () => req.destroy(new Error('timed out'))).on('error', reject).end();
      });
    try {
      // Two users behind the proxy (127.0.0.1): each has a budget of their own.
      assert.deepEqual([await from('127.0.0.1', '198.51.100.1'), await from('127.0.0.1', '198.51.100.1'), await from('127.0.0.1', '198.51.100.1')], [302, 302, 429]);
      assert.equal(await from('127.0.0.1', '198.51.100.2'), 302, 'another user behind the same proxy is not locked out');
      // The right-most address that is no trusted proxy: a chain of two proxies, and a forged left-most entry.
      assert.equal(await from('127.0.0.1', '198.51.100.1, 198.51.100.2, 127.0.1.9'), 302, "198.51.100.2's second");
      assert.equal(await from('127.0.0.1', '198.51.100.2'), 429, '198.51.100.2 has spent its two');
      // An untrusted peer's header names nobody: its sign-ins are its own address's, whatever it writes.
      assert.deepEqual([await from('127.0.0.7', '203.0.113.1'), await from('127.0.0.7', '203.0.113.2'), await from('127.0.0.7', '203.0.113.3')], [302, 302, 429]);
      // The proxy's own requests with no header count as the proxy's.
      assert.deepEqual([await from('127.0.0.1'), await from('127.0.0.1'), await from('127.0.0.1')], [302, 302, 429]);
    } finally {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    }
  });

  it('tells a caller of another issuer that they cannot connect here', async () => {
    const ticketId = await createConnectTicket(store, sealer, { user: { issuer: 'https://other.example', subject: 'carol' }, server: 'notes' });
    const page = await browser().request(`${origin}/connect/${ticketId}`);
    assert.equal(page.status, 403);
    assert.match(page.body, /cannot be used here/);
    assert.doesNotMatch(page.body, /other\.example|carol/, 'nothing of the user the link was made for, to whoever holds it');
  });

  it('lists the signed-in user\'s connections and disconnects one only with a valid CSRF token from the same origin', async () => {
    for (const [user, server] of [[alice, 'wiki'], [alice, ''], [bob, 'bobs-secret-server'], [alice, HOSTILE]] as const) {
      const key = connectionKey(user, server);
      await store.set(key, await sealer.seal(key, { accessToken: 'x' }));
    }
    const b = browser();
    const start = await b.request(`${origin}/connections`);
    assert.equal(start.status, 302);
    assert.equal(new URL(start.headers.get('location')!).origin, as.issuer);
    const callback = await b.signIn(start.headers.get('location')!, ALICE, `${origin}/connect/callback`);
    const signedIn = await b.request(callback);
    assert.equal(signedIn.status, 303);
    assert.equal(signedIn.headers.get('location'), `${origin}/connections`);
    assert.match(signedIn.headers.get('set-cookie') ?? '', /mcpg_login=[\w.-]+; Path=\/; Max-Age=900; HttpOnly; SameSite=Lax/);

    const list = await b.request(`${origin}/connections`);
    assert.equal(list.status, 200);
    assert.match(list.body, /wiki/);
    assert.match(list.body, /the upstream server/);
    assert.doesNotMatch(list.body, /bobs-secret-server/);
    assert.doesNotMatch(list.body, /<script>/);
    assert.match(list.body, /&lt;script&gt;alert\(1\)&lt;\/script&gt;&quot;&#39;&amp;x/);
    const csrf = /name="csrf" value="([\w-]+)"/.exec(list.body)?.[1];
    assert.ok(csrf);

    const post = (form: Record<string, string>, headers: Record<string, string> = { origin, 'sec-fetch-site': 'same-origin' }) =>
      b.request(`${origin}/connections/disconnect`, { method: 'POST', form, headers });
    const revokes = upstream.calls.revoke.length;
    assert.equal((await post({ server: 'wiki' })).status, 403, 'no token');
    assert.equal((await post({ server: 'wiki', csrf: csrf.slice(1) + 'A' })).status, 403, 'wrong token');
    const crossSite = await post({ server: 'wiki', csrf }, { origin: 'http://evil.example', 'sec-fetch-site': 'cross-site' });
    assert.equal(crossSite.status, 403, 'cross-site');
    assert.equal((await post({ server: 'wiki', csrf }, { origin: 'http://evil.example' })).status, 403, 'another Origin, no Sec-Fetch-Site');
    assert.equal(upstream.calls.revoke.length, revokes, 'nothing revoked by a refused form');
    assert.ok(await store.get(connectionKey(alice, 'wiki')));

    const signedOut = await new PageBrowser(origin).request(`${origin}/connections/disconnect`, { method: 'POST', form: { server: 'wiki', csrf } });
    assert.equal(signedOut.status, 401, 'a token without its session is worthless');

    const ok = await post({ server: 'wiki', csrf }, { origin: 'null', 'sec-fetch-site': 'same-origin' });
    assert.equal(ok.status, 303);
    assert.equal(ok.headers.get('location'), `${origin}/connections`);
    assert.deepEqual(upstream.calls.revoke.slice(revokes), [{ user: alice, server: 'wiki' }]);
    assert.doesNotMatch((await b.request(`${origin}/connections`)).body, /wiki/);

    assert.equal((await post({ server: 'bobs-secret-server', csrf })).status, 303);
    assert.equal(upstream.calls.revoke.length, revokes + 1, "another user's server is not alice's to revoke");
    assert.ok(await store.get(connectionKey(bob, 'bobs-secret-server')));

    // The single upstream's form names it "upstream", as its redirect URI and the log lines do, never "".
    const forms = (await b.request(`${origin}/connections`)).body;
    assert.match(forms, /name="server" value="upstream"/);
    assert.doesNotMatch(forms, /name="server" value=""/);
    assert.equal((await post({ server: '', csrf })).status, 400, 'an empty name names no server');
    assert.equal((await post({ server: 'upstream', csrf })).status, 303);
    assert.deepEqual(upstream.calls.revoke.at(-1), { user: alice, server: '' });
    assert.equal(await store.get(connectionKey(alice, '')), undefined);
    assert.ok(lines.some((l) => (l as { event?: string; server?: string }).event === 'disconnected' && (l as { server?: string }).server === 'upstream'));
    assert.ok(lines.some((l) => (l as { event?: string; server?: string }).event === 'disconnected' && (l as { server?: string }).server === 'wiki'));
  });

  it('escapes a hostile server name on the connected page', async () => {
    const ticketId = await createConnectTicket(store, sealer, { user: alice, server: HOSTILE });
    const b = browser();
    const { answer } = await openLinkAndSignIn(b, ticketId, ALICE);
    const back = await b.request(answer.headers.get('location')!);
    const done = await b.request(back.headers.get('location')!);
    assert.equal(done.status, 200);
    assert.ok(done.body.includes('Connected to &lt;script&gt;alert(1)&lt;/script&gt;&quot;&#39;&amp;x.'), done.body);
    assert.doesNotMatch(done.body, /<script/);
  });

  it('answers bad requests with clear 4xx pages', async () => {
    const b = browser();
    const wrongMethod = await b.request(`${origin}/connect/callback`, { method: 'POST', form: {} });
    assert.equal(wrongMethod.status, 405);
    assert.equal(wrongMethod.headers.get('allow'), 'GET');
    const getDisconnect = await b.request(`${origin}/connections/disconnect`);
    assert.equal(getDisconnect.status, 405);
    assert.equal(getDisconnect.headers.get('allow'), 'POST');
    const big = await b.request(`${origin}/connections/disconnect`, { method: 'POST', form: { server: 'x'.repeat(10_000) }, headers: { 'sec-fetch-site': 'same-origin' } });
    assert.equal(big.status, 413);
    const json = await b.request(`${origin}/connections/disconnect`, { method: 'POST', body: '{}', headers: { 'content-type': 'application/json' } });
    assert.equal(json.status, 415);
    const noState = await b.request(`${origin}/connect/callback?code=abc`);
    assert.equal(noState.status, 400);
    const upstreamError = await b.request(`${origin}/connect/callback?error=access_denied&state=${'a'.repeat(43)}`);
    assert.equal(upstreamError.status, 400);
    const notOurs = await b.request(`${origin}/mcp`);
    assert.equal(notOurs.status, 404);
    assert.equal(notOurs.body, 'not a page', 'other paths are left to the gateway');
  });

  it('sends every page and redirect with the security headers and no script', () => {
    const seen = browsers.flatMap((b) => b.seen);
    assert.ok(seen.length > 40, `${seen.length} answers seen`);
    for (const answer of seen.filter((s) => new URL(s.url).pathname !== '/mcp')) {
      const where = `${answer.status} ${new URL(answer.url).pathname}`;
      assert.equal(answer.headers.get('content-security-policy'), "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'", where);
      assert.equal(answer.headers.get('cache-control'), 'no-store', where);
      assert.equal(answer.headers.get('referrer-policy'), 'no-referrer', where);
      assert.equal(answer.headers.get('x-content-type-options'), 'nosniff', where);
      assert.notEqual(answer.status, 500, where);
      assert.doesNotMatch(answer.body, /\bat \/|Error\b/, where);
      assert.doesNotMatch(answer.body, /<script|javascript:|\son\w+=/i, where);
      if (answer.body !== '') assert.equal(answer.headers.get('content-type'), 'text/html; charset=utf-8', where);
    }
  });

  it('logs outcomes with a server name and a user digest only: no subject, ticket, code or token', () => {
    assert.ok(lines.length > 5);
    const text = JSON.stringify(lines);
    for (const secret of ['alice', 'bob', 'upstream-code', 'upstream-access-token', LOGIN_CLIENT.secret, as.issuer]) assert.ok(!text.includes(secret), secret);
    for (const line of lines) assert.deepEqual(Object.keys(line).filter((k) => !['event', 'server', 'user', 'signedIn', 'reason', 'error', 'setting'].includes(k)), []);
    // An OAuth error code only (the user declining: access_denied), never its description.
    for (const line of lines as { error?: string }[]) if (line.error !== undefined) assert.match(line.error, /^[a-z_]{1,64}$/);
  });

  it('names its cookies __Host- and Secure on an https gateway, and redirects only to the login issuer', async () => {
    const httpsOrigin = 'https://gateway.example';
    const login = createGatewayLogin({ issuer: as.issuer, clientId: LOGIN_CLIENT.id, clientSecret: LOGIN_CLIENT.secret, gatewayOrigin: httpsOrigin, store, sealer, timeoutMs: 5_000 });
    const pages = createConnectPages({ gatewayOrigin: `${httpsOrigin}/mcp`, store, sealer, login, port: upstream.port });
    const server = createServer((req, res) => void (pages(req, res) || res.writeHead(404).end()));
    const local = await listen(server);
    try {
      const ticketId = await createConnectTicket(store, sealer, { user: alice, server: 'notes' });
      const response = await fetch(`${local}/connect/${ticketId}`, { redirect: 'manual', headers: { host: 'evil.example' } });
      assert.equal(response.status, 302);
      assert.match(response.headers.get('set-cookie') ?? '', /^__Host-mcpg_flow_[\w-]{16}=[\w-]+; Path=\/; Max-Age=600; HttpOnly; SameSite=Lax; Secure$/);
      const location = new URL(response.headers.get('location')!);
      assert.equal(location.origin, as.issuer);
      assert.equal(location.searchParams.get('redirect_uri'), `${httpsOrigin}/connect/callback`, 'the callback is on the configured origin, not the Host');
    } finally {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    }
  });
});
