/**
 * The gateway's connected-account pages as one plain `node:http` handler: `/connect/<ticketId>`,
 * `/connect/callback` (sign-in), `/connect/callback/<server>` (each upstream), `/connections` and `/connections/disconnect`. Every answer is a small page or a redirect
 * with the pages' security headers; bad input gets a clear 4xx page, an unexpected failure a page naming no detail.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { AuthorizationServerUnavailableError } from '../../../core/kernel/errors.js';
import { parseTrustedProxies, type TrustedProxies } from '../../../core/kernel/trusted-proxies.js';
import { serverPublicName } from '../oauth/gateway-client-urls.js';
import { TokenStoreFullError, TokenStoreShareExceededError, type TokenStore } from '../store/token-store.js';
import { sendLoginFailed, serveLoginCallback, serveUpstreamCallback, whatToCheck } from './connect-callback-page.js';
import { sendExpiredTicket, serveConnectLink } from './connect-link-page.js';
import { isTicketId } from './connect-ticket.js';
import { serveConnections, serveDisconnect } from './connections-page.js';
import { GatewayLoginError, type GatewayLogin } from './gateway-login.js';
import { html, sendPage } from './html-page.js';
import { DEFAULT_SESSION_TTL_MS } from './login-session.js';
import type { ConnectPageEvent, PageContext } from './page-context.js';
import type { PageSealer, UpstreamAuthorizationPort } from './page-ports.js';
import { createSignInBudget, DEFAULT_SIGN_INS_PER_ADDRESS_PER_MINUTE, DEFAULT_SIGN_INS_PER_MINUTE } from './sign-in-budget.js';

/**
 * A route served before the pages' own, e.g. `GET /connect/client-metadata/<server>.json`: true when it served the
 * request. `url` is the request's path and query on the gateway's origin.
 */
export type ExtraPageRoute = (req: IncomingMessage, res: ServerResponse, url: URL) => boolean;

/** Options of {@link createConnectPages}. */
export interface ConnectPagesOptions {
  /** The gateway's origin, from its configured resource URI (never from a `Host` header), e.g. `https://mcp.example.com`. */
  gatewayOrigin: string;
  store: TokenStore;
  sealer: PageSealer;
  /** The sign-in at the login issuer ({@link createGatewayLogin}), with the same origin. */
  login: GatewayLogin;
  port: UpstreamAuthorizationPort;
  /** Receives one line per outcome ({@link ConnectPageEvent}). Default: none. */
  log?: (line: object) => void;
  /** Served first; see {@link ExtraPageRoute}. */
  extraRoute?: ExtraPageRoute;
  /** Life of the connections page's session, in milliseconds. Default 15 minutes. */
  sessionTtlMs?: number;
  /**
   * Sign-ins the connections page may start per minute from every address together (each is kept 10 minutes in the
   * store): the last resort. Default {@link DEFAULT_SIGN_INS_PER_MINUTE} (600).
   */
  signInsPerMinute?: number;
  /** Sign-ins the connections page may start per minute from one address group. Default {@link DEFAULT_SIGN_INS_PER_ADDRESS_PER_MINUTE} (10). */
  signInsPerAddressPerMinute?: number;
  /**
   * Reverse proxies whose `X-Forwarded-For` names the client, for the sign-in budget per address only
   * (`MCP_AUTH_TRUSTED_PROXIES`). Default none: the peer is the client.
   */
  trustedProxies?: TrustedProxies;
  /** Current time in milliseconds since the epoch. Default `Date.now`. */
  now?: () => number;
}

/** A request handler: true when it served the request, false when the path is none of its own. */
export type ConnectPagesHandler = (req: IncomingMessage, res: ServerResponse) => boolean;

/**
 * Creates the pages' handler. It answers synchronously whether the path is its own; the page follows.
 *
 * @example
 * const pages = createConnectPages({ gatewayOrigin, store, sealer, login, port, log: (line) => console.log(JSON.stringify(line)) });
 * createServer((req, res) => { if (!pages(req, res)) serveMcp(req, res); });
 */
export function createConnectPages(options: ConnectPagesOptions): ConnectPagesHandler {
  const origin = new URL(options.gatewayOrigin).origin;
  const sink = options.log;
  const ctx: PageContext = {
    origin,
    secure: origin.startsWith('https:'),
    store: options.store,
    sealer: options.sealer,
    login: options.login,
    port: options.port,
    sessionTtlMs: options.sessionTtlMs ?? DEFAULT_SESSION_TTL_MS,
    now: options.now ?? Date.now,
    signInBudget: createSignInBudget({
      perMinute: options.signInsPerMinute ?? DEFAULT_SIGN_INS_PER_MINUTE,
      perAddress: options.signInsPerAddressPerMinute ?? DEFAULT_SIGN_INS_PER_ADDRESS_PER_MINUTE,
      ...(options.now ? { now: options.now } : {}),
    }),
    trustedProxies: options.trustedProxies ?? parseTrustedProxies(''),
    log: (event: ConnectPageEvent) => {
      try {
        // The single upstream has no name of its own: its lines say "upstream", as its client metadata document does.
        sink?.(event.server === '' ? { ...event, server: serverPublicName('') } : event);
      } catch {
        // A failing log must not fail the page the user is on.
      }
    },
  };
  return (req, res) => {
    const url = requestUrl(req, origin);
    if (url === undefined) return false;
    if (options.extraRoute?.(req, res, url)) return true;
    const route = routeOf(url.pathname);
    if (route === undefined) return false;
    if (req.method !== route.method) {
      sendPage(res, 405, 'Method not allowed', html`<p>This page answers ${route.method} only.</p>`, { Allow: route.method });
      return true;
    }
    route.serve(ctx, req, res, url).catch((error: unknown) => {
      try {
        sendFailure(ctx, res, error);
      } catch {
        // A sink or a socket that throws must not turn into an unhandled rejection.
        res.destroy();
      }
    });
    return true;
  };
}

interface Route {
  method: 'GET' | 'POST';
  serve(ctx: PageContext, req: IncomingMessage, res: ServerResponse, url: URL): Promise<void>;
}

/** The page for a path, or undefined when the path is not the pages'. */
function routeOf(path: string): Route | undefined {
  if (path === '/connect/callback') return { method: 'GET', serve: (ctx, req, res, url) => serveLoginCallback(ctx, req, res, url.search) };
  // Each upstream's own redirect URI; the page checks that the path names the server of the state's flow.
  if (path.startsWith('/connect/callback/')) return { method: 'GET', serve: (ctx, req, res, url) => serveUpstreamCallback(ctx, req, res, url) };
  if (path === '/connections') return { method: 'GET', serve: (ctx, req, res) => serveConnections(ctx, req, res) };
  if (path === '/connections/disconnect') return { method: 'POST', serve: (ctx, req, res) => serveDisconnect(ctx, req, res) };
  if (path.startsWith('/connect/')) {
    const ticketId = path.slice('/connect/'.length);
    if (!isTicketId(ticketId)) return { method: 'GET', serve: async (_ctx, _req, res) => sendExpiredTicket(res, 404) };
    return { method: 'GET', serve: (ctx, req, res) => serveConnectLink(ctx, req, res, ticketId) };
  }
  return undefined;
}

/**
 * The request's path and query on the gateway's origin. Only an origin-form target (`/path?query`) is read: an
 * absolute-form or authority-form target is none of the pages', and `//host` would name another host.
 */
function requestUrl(req: IncomingMessage, origin: string): URL | undefined {
  const target = req.url ?? '';
  if (!target.startsWith('/') || target.startsWith('//')) return undefined;
  try {
    const url = new URL(target, origin);
    return url.origin === origin ? url : undefined;
  } catch {
    return undefined;
  }
}

/**
 * An unexpected failure: a page naming no detail, and its error's name in the log. A sign-in that could not start
 * because the issuer refuses the login client is logged as `login_failed` with the setting to check.
 */
function sendFailure(ctx: PageContext, res: ServerResponse, error: unknown): void {
  if (error instanceof GatewayLoginError && !res.headersSent) {
    ctx.log({ event: 'login_failed', reason: error.reason, ...whatToCheck(error) });
    sendLoginFailed(ctx, res, error);
    return;
  }
  ctx.log({ event: 'error', reason: error instanceof Error ? error.name : 'unknown' });
  if (res.headersSent) {
    res.destroy();
    return;
  }
  if (error instanceof AuthorizationServerUnavailableError) {
    sendPage(res, 503, 'Try again shortly', html`<p>The sign-in service is not answering. Try again in a minute.</p>`, { 'Retry-After': error.headers['Retry-After'] ?? '5' });
  } else if (error instanceof TokenStoreShareExceededError) {
    const retryAfter = String(Math.max(1, Math.ceil((error.retryAfterMs ?? 1000) / 1000)));
    sendPage(res, 429, 'Try again later', html`<p>You have too many connect links and sign-ins in progress. Finish or leave one, then try again in a few minutes.</p>`, { 'Retry-After': retryAfter });
  } else if (error instanceof TokenStoreFullError) {
    sendPage(res, 503, 'Try again later', html`<p>The gateway cannot take new connections at the moment. Try again later.</p>`);
  } else {
    sendPage(res, 500, 'Something went wrong', html`<p>The gateway could not complete this page. Try again; if it keeps failing, tell the gateway's operator.</p>`);
  }
}
