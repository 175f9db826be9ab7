/**
 * `GET /connections` lists the signed-in user's connected servers, each with a disconnect button;
 * `POST /connections/disconnect` revokes one. The page needs a signed-in browser (a short session from a sign-in
 * at the login issuer). A form is acted on only with the session's CSRF token and from the gateway's own pages:
 * `Sec-Fetch-Site: same-origin` where the browser sends it, else an `Origin` equal to the gateway's.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { addressGroup } from '../../../core/kernel/address-group.js';
import { connectionKey, userKey } from '../oauth/connection-record.js';
import { serverPublicName, SINGLE_UPSTREAM_NAME } from '../oauth/gateway-client-urls.js';
import { readFormBody } from './form-body.js';
import { LOGIN_TTL_MS } from './gateway-login.js';
import { html, sendPage, sendRedirect } from './html-page.js';
import { csrfToken, csrfTokenMatches, readLoginSession, type LoginSession } from './login-session.js';
import { startFlowBinding } from './flow-cookies.js';
import { serverLabel, userDigest, type PageContext } from './page-context.js';

/** Most connections listed. */
export const MAX_LISTED_CONNECTIONS = 1000;

/** Longest server name accepted from a form, in characters. */
const MAX_SERVER_NAME = 256;

/** Serves `GET /connections`: the list, or a 302 to sign in first. */
export async function serveConnections(ctx: PageContext, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const session = await readLoginSession(ctx, req);
  if (!session) {
    // Counted per client address group: a source starting sign-ins in a loop spends its own budget, not everyone's.
    // Behind trusted reverse proxies the client is the one their X-Forwarded-For names, not the proxy.
    const retryAfter = ctx.signInBudget(addressGroup(ctx.trustedProxies.clientAddress(req.socket.remoteAddress, req.headers['x-forwarded-for'])));
    if (retryAfter !== undefined) {
      ctx.log({ event: 'busy' });
      sendPage(res, 429, 'Try again shortly', html`<p>Too many sign-ins were started from your network in the last minute. Try again in a minute.</p>`, { 'Retry-After': String(retryAfter) });
      return;
    }
    const { url, state, binding } = await ctx.login.beginLogin({ kind: 'connections' });
    sendRedirect(res, 302, url, startFlowBinding(req, state, binding, LOGIN_TTL_MS / 1000, ctx.secure));
    return;
  }
  const prefix = `conn:${userKey(session.user)}:`;
  const servers = (await ctx.store.keys(prefix, MAX_LISTED_CONNECTIONS)).map((key) => key.slice(prefix.length)).sort();
  const token = csrfToken(session);
  const items = servers.map(
    (server) => html`<li><span class="server">${serverLabel(server)}</span>
<form method="post" action="/connections/disconnect"><input type="hidden" name="csrf" value="${token}"><input type="hidden" name="server" value="${serverPublicName(server)}"><button type="submit">Disconnect</button></form></li>`,
  );
  const list = items.length ? html`<ul id="connections">${items}</ul>` : html`<p id="connections">You have no connected servers.</p>`;
  sendPage(res, 200, 'Your connections', html`<p>Servers the gateway reaches with your own authorization. Disconnecting one revokes it at that server's authorization server where it offers revocation.</p>
${list}`);
}

/** Serves `POST /connections/disconnect`: 303 back to the list once revoked. */
export async function serveDisconnect(ctx: PageContext, req: IncomingMessage, res: ServerResponse): Promise<void> {
  if (!isSameOrigin(ctx, req)) {
    ctx.log({ event: 'refused_request', reason: 'cross_site' });
    sendPage(res, 403, 'Refused', html`<p>This form was not sent from the gateway's own page.</p>`);
    return;
  }
  const form = await readFormBody(req);
  if (form === 'too_large') {
    sendPage(res, 413, 'Too large', html`<p>The form is larger than the gateway accepts.</p>`, { Connection: 'close' });
    return;
  }
  if (form === 'wrong_type') {
    sendPage(res, 415, 'Unsupported form', html`<p>The form must be sent as an HTML form (application/x-www-form-urlencoded).</p>`);
    return;
  }
  const session = await readLoginSession(ctx, req);
  if (!session) {
    sendPage(res, 401, 'Signed out', html`<p>Your session on this page ended. <a href="/connections">Sign in again</a> to see your connections.</p>`);
    return;
  }
  if (!csrfTokenMatches(session, form.get('csrf'))) {
    ctx.log({ event: 'refused_request', user: userDigest(session.user), reason: 'csrf' });
    sendPage(res, 403, 'Refused', html`<p>This form is out of date. <a href="/connections">Open your connections</a> and try again.</p>`);
    return;
  }
  const name = form.get('server');
  if (name === null || name === '' || name.length > MAX_SERVER_NAME) {
    sendPage(res, 400, 'Bad form', html`<p>The form names no server.</p>`);
    return;
  }
  const server = await connectedServerNamed(ctx, session, name);
  // Only a connection the user has: a form naming any other server changes nothing.
  const outcome = server === undefined ? 'revoked' : await disconnect(ctx, session, server);
  if (outcome === 'revoked') {
    sendRedirect(res, 303, new URL('/connections', ctx.origin));
  } else if (outcome === 'deleted') {
    sendPage(res, 200, 'Disconnected', html`<p>The gateway no longer keeps your connection to ${serverLabel(server!)}. That server is no longer set up for connected accounts here, so the gateway could not ask its authorization server to revoke its access: revoke it in your account's settings there if you wish.</p>
<p><a href="/connections">Back to your connections</a></p>`);
  } else {
    sendPage(res, 502, 'Not disconnected', html`<p>The gateway could not disconnect ${serverLabel(server!)}. <a href="/connections">Back to your connections</a> to try again.</p>`);
  }
}

/**
 * The server of the user's connection the form names, as the list names it ({@link serverPublicName}: the single
 * upstream as `upstream`); undefined when the user has no such connection.
 */
async function connectedServerNamed(ctx: PageContext, session: LoginSession, name: string): Promise<string | undefined> {
  // A configuration file's server may itself be named "upstream": its own connection is then the one.
  const candidates = name === SINGLE_UPSTREAM_NAME ? ['', name] : [name];
  for (const server of candidates) if ((await ctx.store.get(connectionKey(session.user, server))) !== undefined) return server;
  return undefined;
}

/** Revokes the user's connection to `server`, or deletes it only ({@link UpstreamAuthorizationPort.revoke}); `failed` when neither happened. */
async function disconnect(ctx: PageContext, session: LoginSession, server: string): Promise<'revoked' | 'deleted' | 'failed'> {
  const user = userDigest(session.user);
  let outcome: 'revoked' | 'deleted';
  try {
    outcome = await ctx.port.revoke(session.user, server);
  } catch (error) {
    ctx.log({ event: 'upstream_failed', server, user, reason: error instanceof Error ? error.name : 'unknown' });
    return 'failed';
  }
  ctx.log({ event: 'disconnected', server, user, ...(outcome === 'deleted' ? { reason: 'not_revoked' } : {}) });
  return outcome;
}

/**
 * Whether the request comes from the gateway's own page. Browsers that send `Sec-Fetch-Site` say so directly; the
 * pages' `Referrer-Policy: no-referrer` makes some of them send `Origin: null` even then. Without it, the `Origin`
 * must be the gateway's. A request with neither is no browser form and is left to the CSRF token.
 */
function isSameOrigin(ctx: PageContext, req: IncomingMessage): boolean {
  const site = req.headers['sec-fetch-site'];
  if (site !== undefined) return site === 'same-origin';
  const origin = req.headers.origin;
  return origin === undefined || origin === ctx.origin;
}
