/**
 * The connections page's signed-in session: a short sealed cookie naming the user, set after a sign-in started from
 * that page, and the CSRF token of its forms, bound to that cookie.
 *
 * The token is an HMAC keyed with the cookie's value. The cookie is HttpOnly, sealed and unguessable, so another
 * site can neither read it nor compute the token; a token copied from one session is worthless in another. No
 * server secret is needed, so every replica checks it alike.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { UserRef } from '../oauth/connection-record.js';
import { readPageCookie, setPageCookie } from './page-cookies.js';
import type { PageContext } from './page-context.js';

/** Default life of the connections page's session, in milliseconds: 15 minutes. */
export const DEFAULT_SESSION_TTL_MS = 15 * 60_000;

/** The key a session is sealed under: nothing else opens as one. */
const SESSION_SEAL_KEY = 'pages:connections-session';

interface SessionValue {
  issuer: string;
  subject: string;
  expiresAt: number;
}

/** A signed-in browser on the connections page. */
export interface LoginSession {
  readonly user: UserRef;
  /** The cookie's value, which keys its CSRF token. */
  readonly cookie: string;
}

/** The `Set-Cookie` of a new session for `user`. */
export async function startLoginSession(ctx: PageContext, user: UserRef): Promise<string> {
  const value: SessionValue = { issuer: user.issuer, subject: user.subject, expiresAt: ctx.now() + ctx.sessionTtlMs };
  const sealed = await ctx.sealer.seal(SESSION_SEAL_KEY, value, ctx.sessionTtlMs);
  return setPageCookie('mcpg_login', sealed, ctx.sessionTtlMs / 1000, ctx.secure);
}

/** The request's session, or undefined when it has none, or one that does not open or expired. */
export async function readLoginSession(ctx: PageContext, req: IncomingMessage): Promise<LoginSession | undefined> {
  const cookie = readPageCookie(req, 'mcpg_login', ctx.secure);
  if (cookie === undefined) return undefined;
  const value = await ctx.sealer.open<SessionValue>(SESSION_SEAL_KEY, cookie);
  if (!value || typeof value.issuer !== 'string' || typeof value.subject !== 'string' || !(value.expiresAt > ctx.now())) return undefined;
  // A session from a sign-in at another issuer (a changed configuration) is no session here.
  if (value.issuer !== ctx.login.issuer) return undefined;
  return { user: { issuer: value.issuer, subject: value.subject }, cookie };
}

/** The CSRF token of a session's forms: HMAC-SHA256 keyed with the cookie value, base64url. */
export function csrfToken(session: LoginSession): string {
  return createHmac('sha256', session.cookie).update('mcp-oauth-guard connections form').digest('base64url');
}

/** Whether `token` is the session's CSRF token, compared in constant time. */
export function csrfTokenMatches(session: LoginSession, token: string | null): boolean {
  if (token === null) return false;
  const expected = Buffer.from(csrfToken(session));
  const given = Buffer.from(token);
  return expected.length === given.length && timingSafeEqual(expected, given);
}
