// A scripted browser for the connected-account pages: a cookie jar per origin, no automatic redirects, and a walk
// through the development authorization server's login and consent pages that stops at the gateway's callback
// without requesting it (the test requests it, with or without the browser's cookies).
import { cookieHeader, createCookieJar, storeCookies, type CookieJar } from '../../../../src/client/cookie-jar.js';
import { parseForms } from '../../../../src/client/development-server-pages.js';
import type { PageSealer } from '../../../../src/gateway/connected/pages/page-ports.js';

/** A response the browser saw, its body read. */
export interface Seen {
  readonly url: string;
  readonly status: number;
  readonly headers: Headers;
  readonly body: string;
}

export class PageBrowser {
  readonly jar: CookieJar = createCookieJar();
  /** Every response from `watchOrigin`, for checks that span all pages. */
  readonly seen: Seen[] = [];
  constructor(private readonly watchOrigin: string) {}

  async request(url: string | URL, init: { method?: string; form?: Record<string, string>; headers?: Record<string, string>; body?: string } = {}): Promise<Seen> {
    const target = new URL(url);
    const headers: Record<string, string> = { accept: 'text/html', ...init.headers };
    const cookie = cookieHeader(this.jar, target.origin);
    if (cookie) headers.cookie = cookie;
    let body = init.body;
    if (init.form) {
      body = new URLSearchParams(init.form).toString();
      headers['content-type'] ??= 'application/x-www-form-urlencoded';
    }
    const response = await fetch(target, { method: init.method ?? 'GET', headers, body, redirect: 'manual', signal: AbortSignal.timeout(5_000) });
    storeCookies(this.jar, target.origin, response);
    const seen: Seen = { url: target.href, status: response.status, headers: response.headers, body: await response.text() };
    if (target.origin === this.watchOrigin) this.seen.push(seen);
    return seen;
  }

  /** Follows the authorization server's redirects and pages as `user`, until a redirect to `stopAt`; returns it. */
  async signIn(authorizationUrl: string | URL, user: { username: string; password: string }, stopAt: string, deny = false): Promise<URL> {
    let url = new URL(authorizationUrl);
    let method = 'GET';
    let form: Record<string, string> | undefined;
    for (let step = 0; step < 12; step++) {
      const seen = await this.request(url, { method, form });
      const location = seen.headers.get('location');
      if (seen.status >= 300 && seen.status < 400 && location) {
        const next = new URL(location, url);
        if (next.href.startsWith(stopAt)) return next;
        [url, method, form] = [next, 'GET', undefined];
        continue;
      }
      const forms = parseForms(seen.body);
      const login = forms.find((f) => f.id === 'login-form');
      const consent = forms.find((f) => f.id === (deny ? 'deny-form' : 'consent-form'));
      const chosen = login ?? consent;
      if (seen.status !== 200 || !chosen) throw new Error(`sign-in stopped at ${url.href} (HTTP ${seen.status})`);
      form = Object.fromEntries(chosen.fields);
      if (login) Object.assign(form, { login: user.username, password: user.password });
      else if (consent?.submit) form[consent.submit[0]] = consent.submit[1];
      [url, method] = [new URL(chosen.action, url), chosen.method];
    }
    throw new Error('sign-in did not reach the callback');
  }

  /**
   * Opens the connect `link` and signs in as `user` at the gateway's issuer (back at `loginCallback`), then at the
   * upstream's authorization server (back at `upstreamCallback`); each step must be a 302 on. The final page.
   */
  async connect(link: string, user: { username: string; password: string }, loginCallback: string, upstreamCallback: string): Promise<Seen> {
    const toLogin = await this.request(link);
    if (toLogin.status !== 302) throw new Error(`the link answered ${toLogin.status}: ${toLogin.body}`);
    const afterLogin = await this.request(await this.signIn(toLogin.headers.get('location')!, user, loginCallback));
    if (afterLogin.status !== 302) throw new Error(`the sign-in's callback answered ${afterLogin.status}: ${afterLogin.body}`);
    return this.request(await this.signIn(afterLogin.headers.get('location')!, user, upstreamCallback));
  }

  /** Forgets this browser's cookies for `origin` (another browser, or the same one in a private window). */
  forget(origin: string): void {
    this.jar.delete(origin);
  }
}

/** A sealer for tests: JSON, bound to its key, with an expiry; no encryption (the real one is tested on its own). */
export function jsonSealer(now: () => number = Date.now): PageSealer {
  return {
    seal: (key, value, ttlMs) => Promise.resolve(Buffer.from(JSON.stringify({ key, value, exp: ttlMs === undefined ? null : now() + ttlMs })).toString('base64url')),
    open<T>(key: string, sealed: string): Promise<T | undefined> {
      try {
        const parsed = JSON.parse(Buffer.from(sealed, 'base64url').toString('utf8')) as { key: string; value: T; exp: number | null };
        return Promise.resolve(parsed.key === key && (parsed.exp === null || parsed.exp > now()) ? parsed.value : undefined);
      } catch {
        return Promise.resolve(undefined);
      }
    },
  };
}
