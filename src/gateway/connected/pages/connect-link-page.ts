/**
 * `GET /connect/<ticketId>`: a connect link opened. It grants nothing by itself: a live ticket sends the browser to
 * the login issuer, binding the sign-in to this browser with a cookie of its own; the callback then checks who signed in.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { userKey } from '../oauth/connection-record.js';
import { readConnectTicket, renewConnectTicket } from './connect-ticket.js';
import { LOGIN_TTL_MS, pendingLoginKey } from './gateway-login.js';
import { html, sendPage, sendRedirect } from './html-page.js';
import { startFlowBinding } from './flow-cookies.js';
import { serverLabel, userDigest, type PageContext } from './page-context.js';

/**
 * Serves a connect link: 410 for an unknown, expired or used ticket; 403 for a caller of another issuer; else a 302 to sign in.
 * A ticket has at most one pending sign-in: opening its link again replaces the one before (whose callback is
 * then unknown), and gives the ticket its full life again for the sign-ins to come.
 */
export async function serveConnectLink(ctx: PageContext, req: IncomingMessage, res: ServerResponse, ticketId: string): Promise<void> {
  const ticket = await readConnectTicket(ctx.store, ctx.sealer, ticketId, ctx.now);
  if (!ticket) {
    ctx.log({ event: 'expired_ticket' });
    sendExpiredTicket(res);
    return;
  }
  if (ticket.user.issuer !== ctx.login.issuer) {
    ctx.log({ event: 'refused_other_issuer', server: ticket.server, user: userDigest(ticket.user) });
    sendPage(
      res,
      403,
      'Cannot connect here',
      // Whoever holds the link sees this page: it names nothing of the user the link was made for (not their issuer).
      html`<p>This gateway connects accounts only for users who sign in through <code>${ctx.login.issuer}</code>, and this link was made for an account of another issuer, so it cannot be used here.</p>
<p>Ask the gateway's operator how to reach ${serverLabel(ticket.server)}.</p>`,
    );
    return;
  }
  if (ticket.loginState !== undefined) await ctx.store.delete(pendingLoginKey(ticket.loginState));
  const { url, state, binding } = await ctx.login.beginLogin({ kind: 'connect', ticketId }, userKey(ticket.user));
  await renewConnectTicket(ctx.store, ctx.sealer, ticketId, ticket, state, ctx.now);
  sendRedirect(res, 302, url, startFlowBinding(req, state, binding, LOGIN_TTL_MS / 1000, ctx.secure));
}

/** The page for a connect link that leads nowhere (410: it may have been good once). */
export function sendExpiredTicket(res: ServerResponse, status: 404 | 410 = 410): void {
  sendPage(
    res,
    status,
    'Link expired',
    html`<p>This connect link is not valid: it expired, was already used, or was never issued.</p>
<p>Go back to your client and retry the request; it will give you a new link.</p>`,
  );
}
