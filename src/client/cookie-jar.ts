/**
 * The cookies a scripted user keeps between the pages of a sign-in, and between sign-ins.
 *
 * @module
 */

/**
 * A browser's cookies for {@link signInToDevelopmentServer}: by origin, then by name. Paths and expiry are
 * ignored except for deletions, enough for one authorization server. Reusing one across sign-ins keeps the user
 * signed in, so a second sign-in (a step-up) skips the login page.
 *
 * @example
 * ```ts
 * const cookies: CookieJar = createCookieJar();
 * ```
 */
export type CookieJar = Map<string, Map<string, string>>;

/**
 * Creates an empty {@link CookieJar}.
 *
 * @example
 * ```ts
 * import { createCookieJar, signInToDevelopmentServer } from 'mcp-oauth-guard/client';
 *
 * const cookies = createCookieJar();
 * await signInToDevelopmentServer(firstUrl, { username: 'demo', password: 'demo-password', redirectUri, cookies });
 * await signInToDevelopmentServer(stepUpUrl, { username: 'demo', password: 'demo-password', redirectUri, cookies });
 * ```
 */
export function createCookieJar(): CookieJar {
  return new Map();
}

/** Keeps the cookies a response sets, and forgets those it clears. */
export function storeCookies(jar: CookieJar, origin: string, response: Response): void {
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

/** The `Cookie` header for a request to `origin`, if the jar holds any of its cookies. */
export function cookieHeader(jar: CookieJar, origin: string): string | undefined {
  const cookies = jar.get(origin);
  if (!cookies?.size) return undefined;
  return [...cookies].map(([name, value]) => `${name}=${value}`).join('; ');
}
