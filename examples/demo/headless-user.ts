/**
 * A scripted end user for the demo authorization server's login and consent pages.
 *
 * It plays the part of a browser in tests and on machines without a display: it follows redirects by hand,
 * keeps cookies per origin, reads the simple HTML forms (`#login-form`, `#consent-form`) and submits them,
 * until the authorization server redirects to the client's loopback redirect URI, which it then requests
 * like a browser would. It is deliberately small and only understands the pages of
 * `examples/dev/authorization-server.ts`; use a real browser (playwright-core) for anything else.
 *
 * @module
 */

/** Options of {@link authorizeAsHeadlessUser}. */
export interface HeadlessUserOptions {
  /** Username typed into `input[name=login]`. */
  username: string;
  /** Password typed into `input[name=password]`. */
  password: string;
  /** Redirect URI registered by the client; the walk stops when the server redirects there. */
  redirectUri: string | URL;
  /** Press Deny instead of Approve on the consent page. Default false. */
  deny?: boolean;
  /** Cookie jar to reuse across authorizations (a signed-in session skips the login page). */
  cookies?: CookieJar;
  /** Maximum number of requests before giving up. Default 20. */
  maxSteps?: number;
  /** Called with each page or redirect seen, for transcripts. URLs only, never cookies. */
  onStep?: (step: { method: string; url: string; status: number; page?: string }) => void;
}

/** Cookies by origin, then by name. Paths and expiry are ignored except for deletions; enough for one AS. */
export type CookieJar = Map<string, Map<string, string>>;

/** Creates an empty {@link CookieJar}. */
export function createCookieJar(): CookieJar {
  return new Map();
}

interface ParsedForm {
  id?: string;
  action: string;
  method: string;
  fields: Array<[string, string]>;
  submit?: [string, string];
}

function attr(tag: string, name: string): string | undefined {
  const match = new RegExp(`\\s${name}\\s*=\\s*("([^"]*)"|'([^']*)'|([^\\s>]+))`, 'i').exec(tag);
  if (!match) return undefined;
  return decodeEntities(match[2] ?? match[3] ?? match[4] ?? '');
}

function decodeEntities(value: string): string {
  return value
    .replace(/&#(\d+);/g, (_, code: string) => String.fromCharCode(Number(code)))
    .replace(/&quot;/g, '"')
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&amp;/g, '&');
}

function parseForms(html: string): ParsedForm[] {
  const forms: ParsedForm[] = [];
  for (const match of html.matchAll(/<form\b([^>]*)>([\s\S]*?)<\/form>/gi)) {
    const [, openTag = '', inner = ''] = match;
    const fields: Array<[string, string]> = [];
    for (const input of inner.matchAll(/<input\b[^>]*>/gi)) {
      const name = attr(input[0], 'name');
      if (name) fields.push([name, attr(input[0], 'value') ?? '']);
    }
    const button = /<button\b[^>]*>/i.exec(inner)?.[0];
    const buttonName = button && attr(button, 'name');
    forms.push({
      id: attr(openTag, 'id'),
      action: attr(openTag, 'action') ?? '',
      method: (attr(openTag, 'method') ?? 'get').toUpperCase(),
      fields,
      submit: button && buttonName ? [buttonName, attr(button, 'value') ?? ''] : undefined,
    });
  }
  return forms;
}

function storeCookies(jar: CookieJar, origin: string, response: Response): void {
  let cookies = jar.get(origin);
  if (!cookies) jar.set(origin, (cookies = new Map()));
  for (const line of response.headers.getSetCookie()) {
    const [pair = '', ...attributes] = line.split(';');
    const eq = pair.indexOf('=');
    if (eq <= 0) continue;
    const name = pair.slice(0, eq).trim();
    const value = pair.slice(eq + 1).trim();
    // Servers clear cookies with an expiry in the past or Max-Age=0.
    const expired = attributes.some((a) => {
      const [key = '', val = ''] = a.split('=').map((s) => s.trim());
      if (key.toLowerCase() === 'max-age') return Number(val) <= 0;
      if (key.toLowerCase() === 'expires') return Date.parse(val) <= Date.now();
      return false;
    });
    if (expired) cookies.delete(name);
    else cookies.set(name, value);
  }
}

function cookieHeader(jar: CookieJar, origin: string): string | undefined {
  const cookies = jar.get(origin);
  if (!cookies?.size) return undefined;
  return [...cookies].map(([name, value]) => `${name}=${value}`).join('; ');
}

function pageError(html: string): string {
  const error = /id="error"[^>]*>([\s\S]*?)</i.exec(html)?.[1];
  const description = /id="error_description"[^>]*>([\s\S]*?)</i.exec(html)?.[1];
  const title = /<title>([\s\S]*?)<\/title>/i.exec(html)?.[1];
  return decodeEntities([error, description].filter(Boolean).join(': ') || title || 'unrecognised page');
}

function sameEndpoint(a: URL, b: URL): boolean {
  return a.protocol === b.protocol && a.hostname === b.hostname && a.port === b.port && a.pathname === b.pathname;
}

/**
 * Walks an authorization URL to the client's redirect URI as the given user, and returns the URL the
 * authorization server redirected to (carrying `code` and `state`, or `error`). The redirect URI itself is
 * requested too, as a browser would, so a loopback listener waiting for it receives the code.
 *
 * @throws Error when a page is not one it understands (for example a wrong password or an error page).
 */
export async function authorizeAsHeadlessUser(authorizationUrl: string | URL, options: HeadlessUserOptions): Promise<URL> {
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
      throw new Error(`headless user stopped at ${url.origin}${url.pathname} (HTTP ${response.status}): ${pageError(html)}`);
    }
    const form = login && response.status === 200 ? login : consent!;
    url = new URL(form.action, url);
    method = form.method;
  }
  throw new Error(`headless user gave up after ${maxSteps} steps`);
}
