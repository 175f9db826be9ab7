/**
 * The redirect URI of a native client (RFC 8252 §7.3): a listener on 127.0.0.1 at a free port, where the
 * authorization server sends the user's browser back with the code.
 *
 * @module
 */
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { AuthorizationRedirectError } from './authorization-redirect-error.js';

/** Default of {@link LoopbackRedirectListenerOptions.timeoutMs}: five minutes, time for a person to sign in. */
const DEFAULT_REDIRECT_TIMEOUT_MS = 300_000;

/**
 * Options of {@link LoopbackRedirectListener.listen}.
 *
 * @example
 * ```ts
 * const listener = await LoopbackRedirectListener.listen({ path: '/oauth/callback', timeoutMs: 120_000 });
 * ```
 */
export interface LoopbackRedirectListenerOptions {
  /** The redirect URI's path. Default `/callback`. */
  path?: string;
  /**
   * How long one wait for the redirect lasts before it fails, in milliseconds. Default 300000 (five minutes).
   */
  timeoutMs?: number;
}

/** The page the browser shows once it is back; the terminal says what happened, so it names nothing. */
const PAGES = {
  signedIn: '<!DOCTYPE html><title>Signed in</title><p>Signed in. You can close this window and return to the application.</p>',
  refused: '<!DOCTYPE html><title>Sign-in refused</title><p>The sign-in was refused. The application says why.</p>',
  unexpected: '<!DOCTYPE html><title>Unexpected redirect</title><p>No sign-in is waiting for this redirect.</p>',
} as const;

/**
 * A one-shot redirect URI on 127.0.0.1 at a free port (RFC 8252 §7.3: a loopback redirect URI may use any port,
 * so nothing has to be free in advance). Each sign-in arms it with the `state` it sent; the first redirect that
 * brings the same `state` back settles that wait, once (RFC 6749 §10.12). A redirect with another `state`, or
 * none, is answered 400 and ignored, and the wait goes on: any web page the user opens can send the browser to a
 * loopback URL, and must not be able to cancel the sign-in in progress. A redirect nobody waits for (a replay) is
 * answered 400 and ignored too. A wait that sees no redirect with its `state` within `timeoutMs` fails.
 *
 * Arm the wait before sending the user: a scripted user can be back before the call that sent it returns.
 *
 * @example
 * ```ts
 * import { LoopbackRedirectListener } from 'mcp-oauth-guard/client';
 *
 * const listener = await LoopbackRedirectListener.listen({ timeoutMs: 120_000 });
 * // Register listener.redirectUri as the client's redirect URI, and send `state` with the authorization request.
 * const code = listener.waitForCode(state);
 * console.log(`Open ${authorizationUrl} to sign in`);
 * try {
 *   await exchange(await code);
 * } finally {
 *   await listener.close();
 * }
 * ```
 */
export class LoopbackRedirectListener {
  /** The redirect URI to register and to send: `http://127.0.0.1:PORT/callback`. */
  readonly redirectUri: string;
  readonly #server: Server;
  readonly #path: string;
  readonly #timeoutMs: number;
  /** The wait for one redirect: the `state` it must bring back, and how to settle it. */
  #pending: { state: string; resolve(redirect: URL): void; reject(error: Error): void; timer: NodeJS.Timeout } | undefined;
  #closed = false;

  private constructor(server: Server, path: string, timeoutMs: number) {
    this.#server = server;
    this.#path = path;
    this.#timeoutMs = timeoutMs;
    this.redirectUri = `http://127.0.0.1:${(server.address() as AddressInfo).port}${path}`;
    server.on('request', (req: IncomingMessage, res: ServerResponse) => this.#answer(req, res));
  }

  /**
   * Listens on 127.0.0.1 at a port the system picks.
   *
   * @param options - the path and the wait's time limit
   * @throws TypeError for a path that does not start with `/` or a time limit that is not a positive number of
   *   milliseconds
   * @example
   * ```ts
   * const listener = await LoopbackRedirectListener.listen();
   * console.log(listener.redirectUri); // http://127.0.0.1:49152/callback
   * ```
   */
  static async listen(options: LoopbackRedirectListenerOptions = {}): Promise<LoopbackRedirectListener> {
    const path = options.path ?? '/callback';
    const timeoutMs = options.timeoutMs ?? DEFAULT_REDIRECT_TIMEOUT_MS;
    if (!path.startsWith('/') || path.startsWith('//')) throw new TypeError(`path must start with a single "/", e.g. "/callback" (got "${path}")`);
    if (!Number.isSafeInteger(timeoutMs) || timeoutMs <= 0) throw new TypeError(`timeoutMs must be a positive whole number of milliseconds (got ${timeoutMs})`);
    const server = createServer();
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    return new LoopbackRedirectListener(server, path, timeoutMs);
  }

  /**
   * Waits for the redirect that brings `expectedState` back, and resolves to its URL (carrying `code`, or
   * `error`). Redirects that bring another `state`, or none, are answered 400 and do not end the wait. A wait
   * armed while another is pending replaces it: the older one fails.
   *
   * @param expectedState - the `state` sent with the authorization request
   * @returns the redirect's URL; rejects when no redirect brings `expectedState` back within the time limit,
   *   when a newer wait replaces this one, or when the listener closes
   * @example
   * ```ts
   * const redirect = await listener.waitForRedirect(state);
   * const code = redirect.searchParams.get('code');
   * ```
   */
  waitForRedirect(expectedState: string): Promise<URL> {
    if (!expectedState) throw new TypeError('expectedState must be the state sent with the authorization request');
    if (this.#closed) return Promise.reject(new Error('the redirect listener is closed'));
    this.#settle(new Error('a newer sign-in replaced this one'));
    const waiting = new Promise<URL>((resolve, reject) => {
      const timer = setTimeout(() => this.#settle(new Error(`no redirect came back to ${this.redirectUri} within ${this.#timeoutMs} ms`)), this.#timeoutMs);
      timer.unref();
      this.#pending = { state: expectedState, resolve, reject, timer };
    });
    // A wait nobody reads any more (its sign-in failed first) must not end the process as an unhandled rejection.
    waiting.catch(() => undefined);
    return waiting;
  }

  /**
   * Waits for the redirect that brings `expectedState` back, and resolves to its authorization code.
   *
   * @param expectedState - the `state` sent with the authorization request
   * @returns the code; rejects with {@link AuthorizationRedirectError} when the authorization server sent an
   *   error, and as {@link LoopbackRedirectListener.waitForRedirect} does otherwise
   * @example
   * ```ts
   * const code = await listener.waitForCode(state);
   * ```
   */
  waitForCode(expectedState: string): Promise<string> {
    const code = this.waitForRedirect(expectedState).then((redirect) => {
      const refused = AuthorizationRedirectError.fromRedirect(redirect);
      if (refused) throw refused;
      const found = redirect.searchParams.get('code');
      if (!found) throw new Error('the redirect carries neither a code nor an error');
      return found;
    });
    // Read later (after the SDK's UnauthorizedError), or never when the sign-in failed first: not unhandled.
    code.catch(() => undefined);
    return code;
  }

  /**
   * Stops listening, drops open connections and fails a pending wait.
   *
   * @example
   * ```ts
   * await listener.close();
   * ```
   */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#settle(new Error('the redirect listener is closed'));
    this.#server.closeAllConnections();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  /** Ends the pending wait, with its redirect or with an error. */
  #settle(outcome: URL | Error): void {
    const pending = this.#pending;
    if (!pending) return;
    this.#pending = undefined;
    clearTimeout(pending.timer);
    if (outcome instanceof URL) pending.resolve(outcome);
    else pending.reject(outcome);
  }

  #answer(req: IncomingMessage, res: ServerResponse): void {
    // The request target is a path here; anything else (an absolute form, garbage) is not our redirect.
    // Resolved against this listener's own origin, port included: the URL resolved to is the redirect URI the
    // code was issued for, and a code exchange that derives `redirect_uri` from it must send the registered one.
    const target = req.url ?? '';
    const href = `${new URL(this.redirectUri).origin}${target}`;
    const redirect = target.startsWith('/') && URL.canParse(href) ? new URL(href) : undefined;
    if (req.method !== 'GET' || redirect?.pathname !== this.#path) return void res.writeHead(404).end();
    const pending = this.#pending;
    if (!pending) return this.#page(res, 400, PAGES.unexpected);
    // Another state, or none (RFC 6749 §10.12): not the redirect of this sign-in. Any page the user opens can send
    // the browser here, so it is refused without ending the wait: the real redirect may still come.
    if (redirect.searchParams.get('state') !== pending.state) return this.#page(res, 400, PAGES.unexpected);
    this.#page(res, 200, redirect.searchParams.has('error') ? PAGES.refused : PAGES.signedIn);
    this.#settle(redirect);
  }

  #page(res: ServerResponse, status: number, html: string): void {
    // The URL carried a code: no cache keeps the page, no link on it passes the URL on.
    res.writeHead(status, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store', 'referrer-policy': 'no-referrer' });
    res.end(html);
  }
}
