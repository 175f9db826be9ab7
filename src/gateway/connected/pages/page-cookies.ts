/**
 * The pages' cookies: the short signed-in session of the connections page, and (see `flow-cookies.ts`) one browser
 * binding per sign-in in progress. All HttpOnly and SameSite=Lax (the authorization servers send the browser back
 * with a top-level GET, which Lax allows); on an https gateway all are `__Host-` cookies, Secure, for the whole
 * origin and no sub-domain, so a sibling host cannot plant or overwrite them. `__Host-` demands `Path=/`
 * (RFC 6265bis section 4.1.3.2), and that protection is worth more than a narrower path.
 */
import type { IncomingMessage } from 'node:http';

/** The connections page's session cookie, by its base name. */
export type PageCookie = 'mcpg_login';

/** Longest `Cookie` header read, in characters; a longer one is read as no cookies. */
const MAX_COOKIE_HEADER = 8 * 1024;

/** A value of the form the pages set: base64url and `.`. */
const COOKIE_VALUE = /^[A-Za-z0-9_.-]{1,4096}$/;

/**
 * The name a cookie has on the wire: `__Host-` + its base name on an https gateway (RFC 6265bis section 4.1.3.2).
 *
 * @example
 * pageCookieName('mcpg_login', true); // '__Host-mcpg_login'
 */
export function pageCookieName(cookie: string, secure: boolean): string {
  return secure ? `__Host-${cookie}` : cookie;
}

/**
 * The request's cookies as name and value, in the order sent (RFC 6265 section 5.4: oldest first among cookies of
 * one path). None when the header is longer than the pages read; values not of the pages' form are left out.
 */
export function requestCookies(req: IncomingMessage): [string, string][] {
  const header = req.headers.cookie;
  if (typeof header !== 'string' || header.length > MAX_COOKIE_HEADER) return [];
  const cookies: [string, string][] = [];
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq === -1) continue;
    const value = part.slice(eq + 1).trim();
    if (COOKIE_VALUE.test(value)) cookies.push([part.slice(0, eq).trim(), value]);
  }
  return cookies;
}

/** The value of the cookie named `name` (as on the wire), or undefined. */
export function readCookie(req: IncomingMessage, name: string): string | undefined {
  return requestCookies(req).find(([found]) => found === name)?.[1];
}

/** The value of `cookie` in the request, or undefined. Only base64url and `.` values are accepted (what the pages set). */
export function readPageCookie(req: IncomingMessage, cookie: PageCookie, secure: boolean): string | undefined {
  return readCookie(req, pageCookieName(cookie, secure));
}

/**
 * A `Set-Cookie` value for the cookie named `name` (as on the wire): HttpOnly, SameSite=Lax, Path=/, Secure on
 * https; `maxAgeS` seconds, 0 to clear it.
 */
export function cookieLine(name: string, value: string, maxAgeS: number, secure: boolean): string {
  return `${name}=${value}; Path=/; Max-Age=${Math.max(0, Math.floor(maxAgeS))}; HttpOnly; SameSite=Lax${secure ? '; Secure' : ''}`;
}

/**
 * A `Set-Cookie` value: HttpOnly, SameSite=Lax, Path=/, Secure on https; `maxAgeS` seconds, 0 to clear it.
 *
 * @example
 * setPageCookie('mcpg_login', 'abc', 900, false); // 'mcpg_login=abc; Path=/; Max-Age=900; HttpOnly; SameSite=Lax'
 */
export function setPageCookie(cookie: PageCookie, value: string, maxAgeS: number, secure: boolean): string {
  return cookieLine(pageCookieName(cookie, secure), value, maxAgeS, secure);
}

/** A `Set-Cookie` value that removes `cookie`. */
export function clearPageCookie(cookie: PageCookie, secure: boolean): string {
  return setPageCookie(cookie, '', 0, secure);
}
