/**
 * The pages' two cookies: the browser binding of a sign-in in progress, and the short signed-in session of the
 * connections page. Both HttpOnly and SameSite=Lax (the authorization servers send the browser back with a
 * top-level GET, which Lax allows); on an https gateway both are `__Host-` cookies, Secure, for the whole origin
 * and no sub-domain, so a sibling host cannot plant or overwrite them.
 */
import type { IncomingMessage } from 'node:http';

/** The two cookies, by their base names. */
export type PageCookie = 'mcpg_connect' | 'mcpg_login';

/** Longest `Cookie` header read, in characters; a longer one is read as no cookies. */
const MAX_COOKIE_HEADER = 8 * 1024;

/**
 * The name a cookie has on the wire: `__Host-` + its base name on an https gateway (RFC 6265bis section 4.1.3.2).
 *
 * @example
 * pageCookieName('mcpg_login', true); // '__Host-mcpg_login'
 */
export function pageCookieName(cookie: PageCookie, secure: boolean): string {
  return secure ? `__Host-${cookie}` : cookie;
}

/** The value of `cookie` in the request, or undefined. Only base64url and `.` values are accepted (what the pages set). */
export function readPageCookie(req: IncomingMessage, cookie: PageCookie, secure: boolean): string | undefined {
  const header = req.headers.cookie;
  if (typeof header !== 'string' || header.length > MAX_COOKIE_HEADER) return undefined;
  const name = pageCookieName(cookie, secure);
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq === -1 || part.slice(0, eq).trim() !== name) continue;
    const value = part.slice(eq + 1).trim();
    return /^[A-Za-z0-9_.-]{1,4096}$/.test(value) ? value : undefined;
  }
  return undefined;
}

/**
 * A `Set-Cookie` value: HttpOnly, SameSite=Lax, Path=/, Secure on https; `maxAgeS` seconds, 0 to clear it.
 *
 * @example
 * setPageCookie('mcpg_connect', 'abc', 600, false); // 'mcpg_connect=abc; Path=/; Max-Age=600; HttpOnly; SameSite=Lax'
 */
export function setPageCookie(cookie: PageCookie, value: string, maxAgeS: number, secure: boolean): string {
  return `${pageCookieName(cookie, secure)}=${value}; Path=/; Max-Age=${Math.max(0, Math.floor(maxAgeS))}; HttpOnly; SameSite=Lax${secure ? '; Secure' : ''}`;
}

/** A `Set-Cookie` value that removes `cookie`. */
export function clearPageCookie(cookie: PageCookie, secure: boolean): string {
  return setPageCookie(cookie, '', 0, secure);
}
