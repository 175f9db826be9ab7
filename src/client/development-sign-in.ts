/**
 * A scripted user for the login and consent pages of this package's development authorization server
 * (`npm run auth-server`). Development and tests only.
 *
 * @module
 */
import { cookieHeader, createCookieJar, storeCookies, type CookieJar } from './cookie-jar.js';
import { pageError, parseForms } from './development-server-pages.js';

/**
 * A page or redirect {@link signInToDevelopmentServer} saw: URLs only, never cookies or credentials.
 *
 * @example
 * ```ts
 * const onStep = (step: DevelopmentSignInStep) => console.log(`${step.method} ${step.url} → ${step.status} ${step.page ?? ''}`);
 * ```
 */
export interface DevelopmentSignInStep {
  /** `GET` or `POST`. */
  method: string;
  /** The URL requested. */
  url: string;
  /** The HTTP status it answered. */
  status: number;
  /** `login`, `consent` or `other` for a page; absent for a redirect. */
  page?: string;
}

/**
 * Options of {@link signInToDevelopmentServer}.
 *
 * @example
 * ```ts
 * const options: DevelopmentSignInOptions = { username: 'demo', password: 'demo-password', redirectUri: listener.redirectUri, deny: true };
 * ```
 */
export interface DevelopmentSignInOptions {
  /** Username typed into `input[name=login]`. */
  username: string;
  /** Password typed into `input[name=password]`. */
  password: string;
  /** Redirect URI registered by the client; the walk stops when the server redirects there. */
  redirectUri: string | URL;
  /** Press Deny instead of Approve on the consent page. Default false. */
  deny?: boolean;
  /** Cookies to reuse across sign-ins (a signed-in session skips the login page). Default: a new jar. */
  cookies?: CookieJar;
  /** Maximum number of requests before giving up. Default 20. */
  maxSteps?: number;
  /** Called with each page or redirect seen, for transcripts. */
  onStep?: (step: DevelopmentSignInStep) => void;
}

function sameEndpoint(a: URL, b: URL): boolean {
  return a.protocol === b.protocol && a.hostname === b.hostname && a.port === b.port && a.pathname === b.pathname;
}

/**
 * Signs in at this package's development authorization server (`npm run auth-server`) as a scripted user, with
 * no browser: it follows the redirects, fills in the login page, presses Approve (or Deny) on the consent page,
 * and stops at the client's redirect URI, which it requests too, as a browser would, so a
 * {@link LoopbackRedirectListener} waiting there receives the code.
 *
 * **Development only.** It types a password into a form and understands only the development server's pages
 * (`#login-form`, `#consent-form`, `#deny-form`); it is not a way to sign in to any other authorization server,
 * where a person signs in in a browser. Use it in tests, demos and scripts against `npm run auth-server`.
 *
 * @param authorizationUrl - the authorization request, as the client built it
 * @param options - the user's credentials, the redirect URI, and Approve or Deny
 * @returns the URL the authorization server redirected to (carrying `code` and `state`, or `error`)
 * @throws Error when a page is not one it understands (a wrong password, an error page: the error is in the
 *   message), or after `maxSteps` requests
 * @example
 * ```ts
 * import { LoopbackOAuthClientProvider, LoopbackRedirectListener, signInToDevelopmentServer } from 'mcp-oauth-guard/client';
 *
 * // Development only: the demo user of `npm run auth-server`.
 * const listener = await LoopbackRedirectListener.listen();
 * const provider = new LoopbackOAuthClientProvider({
 *   listener,
 *   sendUser: async (url) => void (await signInToDevelopmentServer(url, { username: 'demo', password: 'demo-password', redirectUri: listener.redirectUri })),
 * });
 * ```
 */
export async function signInToDevelopmentServer(authorizationUrl: string | URL, options: DevelopmentSignInOptions): Promise<URL> {
  const jar = options.cookies ?? createCookieJar();
  const redirectUri = new URL(options.redirectUri);
  const maxSteps = options.maxSteps ?? 20;
  let url = new URL(authorizationUrl);
  let method = 'GET';
  let body: URLSearchParams | undefined;

  for (let step = 0; step < maxSteps; step++) {
    if (sameEndpoint(url, redirectUri)) {
      // The listener may answer anything; what matters to the caller is the URL.
      await fetch(url, { redirect: 'manual' }).then((r) => r.body?.cancel()).catch(() => undefined);
      return url;
    }
    const headers: Record<string, string> = { accept: 'text/html' };
    const cookie = cookieHeader(jar, url.origin);
    if (cookie) headers.cookie = cookie;
    if (body) headers['content-type'] = 'application/x-www-form-urlencoded';
    const response = await fetch(url, { method, headers, body, redirect: 'manual' });
    storeCookies(jar, url.origin, response);

    const location = response.headers.get('location');
    if (response.status >= 300 && response.status < 400 && location) {
      options.onStep?.({ method, url: url.href, status: response.status });
      await response.body?.cancel();
      url = new URL(location, url);
      method = 'GET';
      body = undefined;
      continue;
    }

    const html = await response.text();
    const forms = parseForms(html);
    const login = forms.find((f) => f.id === 'login-form');
    const consent = forms.find((f) => f.id === (options.deny ? 'deny-form' : 'consent-form'));
    options.onStep?.({ method, url: url.href, status: response.status, page: login ? 'login' : consent ? 'consent' : 'other' });

    // A login page answered with 401 means the credentials were refused; retrying would loop.
    if (login && response.status === 200) {
      body = new URLSearchParams(login.fields);
      body.set('login', options.username);
      body.set('password', options.password);
    } else if (consent && response.status === 200) {
      body = new URLSearchParams(consent.fields);
      if (consent.submit) body.set(...consent.submit);
    } else {
      throw new Error(`the scripted sign-in stopped at ${url.origin}${url.pathname} (HTTP ${response.status}): ${pageError(html)}`);
    }
    const form = login && response.status === 200 ? login : consent!;
    url = new URL(form.action, url);
    method = form.method;
  }
  throw new Error(`the scripted sign-in gave up after ${maxSteps} steps`);
}
