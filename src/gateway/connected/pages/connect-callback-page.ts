/**
 * Where the authorization servers send the browser back, each to its own redirect URI:
 *
 * - `GET /connect/callback`, the gateway's own sign-in (the login issuer): the ID token names the user. For a
 *   connect ticket, that user must be the one the ticket was made for; anyone else gets a refusal, the ticket is
 *   burnt and nothing is stored. Then the browser goes on to the upstream's authorization server, bound to this
 *   browser again.
 * - `GET /connect/callback/<server>`, an upstream authorization server: only from the browser that was sent there,
 *   and only when the path names the server the authorization was started with (RFC 9700 §4.4 mix-up defence: a
 *   server cannot send the browser to another server with its own `state` to have that server's code exchanged at
 *   its token endpoint). Then the upstream authorization exchanges the code and stores the connection.
 *
 * A state is only looked for where it belongs: a sign-in's on the first path, an upstream's on the second.
 */
import { createHash, randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { burnConnectTicket, readConnectTicket, renewConnectTicket } from './connect-ticket.js';
import { sendExpiredTicket } from './connect-link-page.js';
import { bindingDigest, bindingMatches, GatewayLoginError, type GatewayLoginResult } from './gateway-login.js';
import { html, sendPage, sendRedirect } from './html-page.js';
import { startLoginSession } from './login-session.js';
import { clearFlowBinding, readFlowBinding, startFlowBinding } from './flow-cookies.js';
import { serverLabel, userDigest, type ConnectPageEvent, type PageContext } from './page-context.js';
import { upstreamCallbackUrl } from '../oauth/gateway-client-urls.js';
import { UpstreamAuthorizationError } from '../oauth/upstream-authorization-error.js';
import { userKey } from '../oauth/connection-record.js';
import { TokenStoreFullError } from '../store/token-store.js';

/**
 * Life of the binding of an upstream authorization to the browser, in milliseconds: 15 minutes, longer than the
 * upstream's own state (at most 10), so the binding is always there while the state is good.
 */
export const UPSTREAM_BINDING_TTL_MS = 15 * 60_000;

/** What is kept, sealed, under `bind:<SHA-256 of the upstream state>` while the browser is at the upstream. */
interface UpstreamBinding {
  binding: string;
  ticketId: string;
  server: string;
  user: string;
}

const bindingKey = (state: string): string => `bind:${createHash('sha256').update(state).digest('base64url')}`;

/** Serves the sign-in's callback; `search` is the request's query (`?…`), put on the sign-in's redirect URI. */
export async function serveLoginCallback(ctx: PageContext, req: IncomingMessage, res: ServerResponse, search: string): Promise<void> {
  const callbackUrl = new URL(ctx.login.redirectUri);
  callbackUrl.search = search;
  const state = callbackUrl.searchParams.get('state') ?? '';
  const binding = readFlowBinding(req, state, ctx.secure);
  let signedIn: GatewayLoginResult | undefined;
  try {
    signedIn = await ctx.login.completeLogin(callbackUrl, binding);
  } catch (error) {
    if (!(error instanceof GatewayLoginError)) throw error;
    ctx.log({ event: error.reason === 'browser_mismatch' ? 'refused_other_browser' : 'login_failed', reason: error.reason, ...whatToCheck(error) });
    sendLoginRefused(ctx, res, error, state);
    return;
  }
  if (signedIn?.purpose.kind === 'connect') await afterConnectSignIn(ctx, req, res, signedIn, signedIn.purpose.ticketId, state);
  else if (signedIn) await sendRedirectAfterSessionStart(ctx, res, signedIn, state);
  else {
    ctx.log({ event: 'unknown_state' });
    sendUnknownState(res);
  }
}

/**
 * The signed-in user must be the ticket's; then on to the upstream's authorization server, bound to this browser by
 * a cookie of that flow, which replaces the sign-in's (`loginState`).
 */
async function afterConnectSignIn(ctx: PageContext, req: IncomingMessage, res: ServerResponse, signedIn: GatewayLoginResult, ticketId: string, loginState: string): Promise<void> {
  const ticket = await readConnectTicket(ctx.store, ctx.sealer, ticketId, ctx.now);
  if (!ticket) {
    ctx.log({ event: 'expired_ticket' });
    sendExpiredTicket(res);
    return;
  }
  const user = userDigest(ticket.user);
  if (signedIn.issuer !== ticket.user.issuer || signedIn.subject !== ticket.user.subject) {
    await burnConnectTicket(ctx.store, ticketId);
    ctx.log({ event: 'refused_other_user', server: ticket.server, user, signedIn: userDigest(signedIn) });
    sendPage(
      res,
      403,
      'Not connected',
      html`<p>You signed in as someone other than the user who asked to connect ${serverLabel(ticket.server)}. Nothing was connected, and this link no longer works.</p>
<p>If the request was yours, sign out of <code>${ctx.login.issuer}</code>, retry the request in your client, and open the new link.</p>`,
      { 'Set-Cookie': clearFlowBinding(loginState, ctx.secure) },
    );
    return;
  }
  let url: URL;
  try {
    url = await ctx.port.begin({ ticketId, server: ticket.server, owner: userKey(ticket.user), ...(ticket.scope ? { scope: ticket.scope } : {}) });
  } catch (error) {
    // A store at its bound, or this user at its share of it: the pages' own answer (503, 429), not the upstream's.
    if (error instanceof TokenStoreFullError) throw error;
    ctx.log({ event: 'upstream_failed', server: ticket.server, user, ...upstreamFailure(error) });
    sendUpstreamFailed(res, ticket.server, clearFlowBinding(loginState, ctx.secure), error);
    return;
  }
  const state = url.searchParams.get('state');
  if ((url.protocol !== 'https:' && url.protocol !== 'http:') || !state) {
    ctx.log({ event: 'upstream_failed', server: ticket.server, user, reason: 'no_state' });
    sendUpstreamFailed(res, ticket.server, clearFlowBinding(loginState, ctx.secure));
    return;
  }
  // The upstream's sign-in gets its full time too: the ticket must still be good when its code comes back.
  await renewConnectTicket(ctx.store, ctx.sealer, ticketId, ticket, undefined, ctx.now);
  const next = randomBytes(32).toString('base64url');
  const key = bindingKey(state);
  const record: UpstreamBinding = { binding: bindingDigest(next), ticketId, server: ticket.server, user };
  await ctx.store.set(key, await ctx.sealer.seal(key, record, UPSTREAM_BINDING_TTL_MS), UPSTREAM_BINDING_TTL_MS, userKey(ticket.user));
  sendRedirect(res, 302, url, startFlowBinding(req, state, next, UPSTREAM_BINDING_TTL_MS / 1000, ctx.secure, loginState));
}

/** A sign-in from the connections page: the session cookie, then back to that page (a fixed path). */
async function sendRedirectAfterSessionStart(ctx: PageContext, res: ServerResponse, signedIn: GatewayLoginResult, loginState: string): Promise<void> {
  const session = await startLoginSession(ctx, signedIn);
  sendRedirect(res, 303, new URL('/connections', ctx.origin), [session, clearFlowBinding(loginState, ctx.secure)]);
}

/**
 * An upstream's answer at `<origin>/connect/callback/<server>` (`callbackUrl`, on the gateway's origin): only for
 * the server the path names, only from the browser that was sent there, and only once.
 */
export async function serveUpstreamCallback(ctx: PageContext, req: IncomingMessage, res: ServerResponse, callbackUrl: URL): Promise<void> {
  const state = callbackUrl.searchParams.get('state');
  const binding = state ? readFlowBinding(req, state, ctx.secure) : undefined;
  const key = state ? bindingKey(state) : undefined;
  const found = key === undefined ? undefined : await ctx.store.get(key);
  const pending = found === undefined ? undefined : await ctx.sealer.open<UpstreamBinding>(key!, found);
  if (!pending) {
    ctx.log({ event: 'unknown_state' });
    sendUnknownState(res);
    return;
  }
  // Checked before anything is taken: a state brought back to another server's redirect URI is a mix-up (the
  // code is that other server's), refused without consuming the flow or exchanging the code.
  if (callbackUrl.pathname !== new URL(upstreamCallbackUrl(ctx.origin, pending.server)).pathname) {
    ctx.log({ event: 'refused_other_server', server: pending.server, user: pending.user });
    sendUnknownState(res);
    return;
  }
  // So is the browser: a request without this flow's binding (another browser, a state seen in a log) cannot use
  // up the flow of the browser that was sent to the upstream.
  if (!bindingMatches(binding, pending.binding)) {
    ctx.log({ event: 'refused_other_browser', server: pending.server, user: pending.user });
    sendLoginRefused(ctx, res, new GatewayLoginError('browser_mismatch'), state!);
    return;
  }
  // One-time: of two callbacks with the binding at once, only the one that takes it goes on.
  const sealed = await ctx.store.take(key!);
  const bound = sealed === undefined ? undefined : await ctx.sealer.open<UpstreamBinding>(key!, sealed);
  if (!bound) {
    ctx.log({ event: 'unknown_state' });
    sendUnknownState(res);
    return;
  }
  let completed: { ticketId: string } | undefined;
  try {
    completed = await ctx.port.complete(callbackUrl, bound.server);
  } catch (error) {
    // The flow is over (its binding was taken): its cookie goes now rather than when it expires.
    ctx.log({ event: 'upstream_failed', server: bound.server, user: bound.user, ...upstreamFailure(error) });
    sendUpstreamFailed(res, bound.server, clearFlowBinding(state!, ctx.secure), error);
    return;
  }
  if (!completed || completed.ticketId !== bound.ticketId) {
    ctx.log({ event: 'unknown_state', server: bound.server, user: bound.user });
    sendUnknownState(res, clearFlowBinding(state!, ctx.secure));
    return;
  }
  await burnConnectTicket(ctx.store, bound.ticketId);
  ctx.log({ event: 'connected', server: bound.server, user: bound.user });
  sendPage(res, 200, 'Connected', html`<p>Connected to ${serverLabel(bound.server)}. Return to your client and retry.</p>`, {
    'Set-Cookie': clearFlowBinding(state!, ctx.secure),
  });
}

/** The OAuth error code and the setting to check of a failure, when it names them. */
export function whatToCheck(failure: { readonly error?: string | undefined; readonly setting?: string | undefined }): Pick<ConnectPageEvent, 'error' | 'setting'> {
  return { ...(failure.error !== undefined ? { error: failure.error } : {}), ...(failure.setting !== undefined ? { setting: failure.setting } : {}) };
}

/** What an upstream authorization's failure logs: its name, and for a refusal the OAuth error code and the setting to check. */
function upstreamFailure(error: unknown): Pick<ConnectPageEvent, 'reason' | 'error' | 'setting'> {
  if (!(error instanceof UpstreamAuthorizationError)) return { reason: error instanceof Error ? error.name : 'unknown' };
  const refused = error.code.startsWith('refused:') ? error.code.slice('refused:'.length) : undefined;
  return { reason: error.name, ...whatToCheck({ error: refused, setting: error.setting }) };
}

/** The 400 page of a `state` the gateway does not know; `clear`, the `Set-Cookie` ending a flow it did know. */
function sendUnknownState(res: ServerResponse, clear?: string): void {
  sendPage(
    res,
    400,
    'Sign-in not recognised',
    html`<p>This sign-in answer is unknown to the gateway: it expired, was already used, or was never started here.</p>
<p>Go back to your client and retry the request; it will give you a new link.</p>`,
    clear === undefined ? {} : { 'Set-Cookie': clear },
  );
}

/**
 * What the user is told to do when retrying cannot help: the authorization server refused the gateway's own client
 * (a setting to check), or cannot be used as the gateway is configured.
 */
export const ASK_THE_ADMINISTRATOR = html`<p>This is a problem of the gateway's configuration, which retrying does not fix: contact the gateway's administrator.</p>`;

/**
 * The 502 page of an upstream authorization that failed (`error`); `clear`, the `Set-Cookie` ending its flow's
 * binding. A refusal of the gateway's own client, or a server it cannot use, is the administrator's to fix.
 */
function sendUpstreamFailed(res: ServerResponse, server: string, clear: string, error?: unknown): void {
  const operators = error instanceof UpstreamAuthorizationError && (error.setting !== undefined || error.code === 'unsupported');
  sendPage(res, 502, 'Not connected', html`<p>The authorization at ${serverLabel(server)} did not complete. Nothing was connected.</p>
${operators ? ASK_THE_ADMINISTRATOR : html`<p>Go back to your client and retry the request to try again.</p>`}`, { 'Set-Cookie': clear });
}

function sendLoginRefused(ctx: PageContext, res: ServerResponse, error: GatewayLoginError, state: string): void {
  const { reason } = error;
  const clear = { 'Set-Cookie': clearFlowBinding(state, ctx.secure) };
  if (reason === 'browser_mismatch') {
    sendPage(res, 403, 'Not connected', html`<p>This sign-in was not started in this browser, so the gateway does not act on it. Nothing was connected.</p>
<p>Open the link from your client in the browser you sign in with.</p>`, clear);
  } else if (reason === 'denied') {
    sendPage(res, 403, 'Sign-in cancelled', html`<p>The sign-in was cancelled. Nothing was connected.</p>`, clear);
  } else {
    sendLoginFailed(ctx, res, error, clear);
  }
}

/**
 * The 502 page of a sign-in at the login issuer that failed (`error`): when the issuer refused the login client itself
 * (`error.setting`), the administrator's to fix, else worth a retry. For the callback, and for a sign-in the issuer
 * would refuse before it starts.
 */
export function sendLoginFailed(ctx: PageContext, res: ServerResponse, error: GatewayLoginError, headers: Readonly<Record<string, string>> = {}): void {
  sendPage(res, 502, 'Sign-in failed', html`<p>The sign-in at <code>${ctx.login.issuer}</code> could not be completed. Nothing was connected.</p>
${error.setting !== undefined ? ASK_THE_ADMINISTRATOR : html`<p>Go back to your client and retry the request to try again.</p>`}`, headers);
}
