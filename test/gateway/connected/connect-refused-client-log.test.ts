// A wrong client id or secret, at the gateway's issuer (the login client) or at the upstream's authorization server
// (the gateway's pre-registered client), both real oidc-provider servers: the page fails, saying to contact the
// administrator, and its log line names the OAuth error code and the setting to check, never the secret, the code or
// a token.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { DEMO_PASSWORD, DEMO_USERNAME, startAuthorizationServer, type AuthorizationServer } from '../../../examples/dev/authorization-server.js';
import { upstreamCallbackUrl } from '../../../src/gateway/connected/oauth/gateway-client-urls.js';
import { createConnectPages, type ConnectPagesHandler } from '../../../src/gateway/connected/pages/connect-pages.js';
import { createConnectTicket } from '../../../src/gateway/connected/pages/connect-ticket.js';
import { createGatewayLogin } from '../../../src/gateway/connected/pages/gateway-login.js';
import type { UpstreamAuthorizationPort } from '../../../src/gateway/connected/pages/page-ports.js';
import { closeServer, listenOnLoopback } from '../../helpers/loopback-server.js';
import { startOAuthSetup, type OAuthSetup } from './oauth/oauth-fixtures.js';
import { jsonSealer, PageBrowser } from './pages/page-browser.js';

const ALICE = { username: 'alice', password: 'alice-password' };
const LOGIN = { clientId: 'gateway-login', secret: randomBytes(24).toString('base64url') };
const UPSTREAM = { clientId: 'gw-notes', secret: randomBytes(24).toString('base64url') };
const WRONG = `wrong-${randomBytes(12).toString('base64url')}`;

describe('a refused client secret in the log', { timeout: 30_000 }, () => {
  let loginIssuer: AuthorizationServer;
  let upstream: OAuthSetup;
  let gateway: Server;
  let origin = '';
  let serve: ConnectPagesHandler | undefined;
  const lines: Record<string, unknown>[] = [];
  const sealer = jsonSealer();

  /** The pages with the login client's secret and the upstream client's secret given. */
  const pages = (loginSecret: string, upstreamSecret: string, loginClientId: string = LOGIN.clientId): void => {
    const authorization = upstream.authorization({ clientId: UPSTREAM.clientId, clientSecret: upstreamSecret });
    const port: UpstreamAuthorizationPort = {
      begin: ({ ticketId, scope }) => authorization.begin({ ticketId, ...(scope !== undefined ? { scope } : {}) }),
      complete: async (callbackUrl) => ({ ticketId: (await authorization.complete(callbackUrl)).ticketId }),
      revoke: async () => 'revoked' as const,
    };
    const login = createGatewayLogin({ issuer: loginIssuer.issuer, clientId: loginClientId, clientSecret: loginSecret, gatewayOrigin: origin, store: upstream.store, sealer, timeoutMs: 5_000 });
    serve = createConnectPages({ gatewayOrigin: origin, store: upstream.store, sealer, login, port, log: (line) => lines.push(line as Record<string, unknown>) });
  };

  /** Opens a connect link for alice and signs her in at the gateway's issuer; the gateway's answer to the callback. */
  const openLink = async (browser: PageBrowser) => {
    const ticketId = await createConnectTicket(upstream.store, sealer, { user: { issuer: loginIssuer.issuer, subject: 'alice' }, server: '' });
    const link = await browser.request(`${origin}/connect/${ticketId}`);
    assert.equal(link.status, 302, link.body);
    const callback = await browser.signIn(link.headers.get('location')!, ALICE, `${origin}/connect/callback`);
    return { callback, answer: await browser.request(callback) };
  };

  before(async () => {
    gateway = createServer((req, res) => {
      if (!serve?.(req, res)) res.writeHead(404).end();
    });
    origin = await listenOnLoopback(gateway);
    loginIssuer = await startAuthorizationServer({ users: [ALICE], clients: [{ clientId: LOGIN.clientId, clientSecret: LOGIN.secret, redirectUris: [`${origin}/connect/callback`] }] });
    upstream = await startOAuthSetup(({ redirectUri }) => ({ clients: [{ clientId: UPSTREAM.clientId, clientSecret: UPSTREAM.secret, redirectUris: [redirectUri] }] }), origin);
  });
  after(async () => {
    gateway.closeAllConnections();
    closeServer(gateway);
    await loginIssuer?.close();
    await upstream?.close();
  });

  it('the login client: refused before the user is sent to sign in; login_failed names the settings; the page says to contact the administrator', async () => {
    for (const [clientId, secret, setting] of [
      [LOGIN.clientId, WRONG, 'MCP_AUTH_LOGIN_CLIENT_ID or MCP_AUTH_LOGIN_CLIENT_SECRET'],
      // A client id the issuer does not know: it would show the user its own "invalid_client" page and never send
      // the browser back, so the gateway asks its token endpoint first.
      [`unknown-${randomBytes(6).toString('hex')}`, LOGIN.secret, 'MCP_AUTH_LOGIN_CLIENT_ID or MCP_AUTH_LOGIN_CLIENT_SECRET'],
    ] as const) {
      lines.length = 0;
      pages(secret, UPSTREAM.secret, clientId);
      const ticketId = await createConnectTicket(upstream.store, sealer, { user: { issuer: loginIssuer.issuer, subject: 'alice' }, server: '' });
      const link = await new PageBrowser(origin).request(`${origin}/connect/${ticketId}`);
      assert.equal(link.status, 502, link.body);
      assert.match(link.body, /contact the gateway's administrator/);
      assert.doesNotMatch(link.body, /Go back to your client and retry/);
      assert.deepEqual(lines, [{ event: 'login_failed', reason: 'failed', error: 'invalid_client', setting }]);
      const logged = JSON.stringify(lines);
      for (const value of [WRONG, LOGIN.secret]) assert.ok(!logged.includes(value) && !link.body.includes(value));
    }
    // The right client passes the check and goes on to sign in.
    lines.length = 0;
    pages(LOGIN.secret, UPSTREAM.secret);
    const { answer } = await openLink(new PageBrowser(origin));
    assert.equal(answer.status, 302, answer.body);
    assert.deepEqual(lines.filter((l) => l.event === 'login_failed'), []);
  });

  it("the upstream's client: upstream_failed with invalid_client and MCP_AUTH_UPSTREAM_CLIENT_SECRET", async () => {
    pages(LOGIN.secret, WRONG);
    const browser = new PageBrowser(origin);
    const { answer } = await openLink(browser);
    assert.equal(answer.status, 302, answer.body);
    const back = await browser.signIn(answer.headers.get('location')!, { username: DEMO_USERNAME, password: DEMO_PASSWORD }, upstreamCallbackUrl(origin, ''));
    const done = await browser.request(back);
    assert.equal(done.status, 502, done.body);
    // Retrying cannot fix the gateway's own client: the page says whom to tell.
    assert.match(done.body, /contact the gateway/);
    assert.doesNotMatch(done.body, /Go back to your client and retry/);
    const line = lines.find((l) => l.event === 'upstream_failed');
    assert.deepEqual({ ...line, user: undefined }, { event: 'upstream_failed', server: 'upstream', user: undefined, reason: 'UpstreamAuthorizationError', error: 'invalid_client', setting: 'MCP_AUTH_UPSTREAM_CLIENT_SECRET' });
    const logged = JSON.stringify(lines);
    for (const secret of [WRONG, UPSTREAM.secret, back.searchParams.get('code')!]) assert.ok(!logged.includes(secret));
  });
});
