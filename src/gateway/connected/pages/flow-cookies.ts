/**
 * The browser binding of each sign-in in progress (the gateway's own, then the upstream's): a cookie per flow, named
 * after a short digest of the flow's `state`, holding a random value whose SHA-256 the pending flow keeps. Two
 * connect links opened at once in one browser thus each keep their own binding; the callback finds its cookie from
 * the `state` it carries. A browser holds at most {@link MAX_PENDING_FLOWS}: starting one more drops the oldest,
 * so a stream of started sign-ins cannot grow the browser's `Cookie` header without bound.
 */
import { createHash } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { cookieLine, pageCookieName, readCookie, requestCookies } from './page-cookies.js';

/** Most flow bindings one browser keeps; starting another clears the oldest. */
export const MAX_PENDING_FLOWS = 5;

/** Base name of every flow binding cookie, before the flow id. */
const FLOW_COOKIE = 'mcpg_flow_';

/** The flow id of `state`: 16 base64url characters of its SHA-256 (96 bits); the state itself is never a cookie name. */
export function flowIdOf(state: string): string {
  return createHash('sha256').update(`mcp-oauth-guard flow ${state}`).digest('base64url').slice(0, 16);
}

/**
 * The name, as on the wire, of the binding cookie of the flow of `state`.
 *
 * @example
 * flowCookieName(state, true); // '__Host-mcpg_flow_' + flowIdOf(state)
 */
export function flowCookieName(state: string, secure: boolean): string {
  return pageCookieName(`${FLOW_COOKIE}${flowIdOf(state)}`, secure);
}

/** The binding the browser holds for the flow of `state`, or undefined. */
export function readFlowBinding(req: IncomingMessage, state: string, secure: boolean): string | undefined {
  return readCookie(req, flowCookieName(state, secure));
}

/**
 * The `Set-Cookie` values that start the flow of `state` in this browser: its binding for `maxAgeS` seconds, and
 * the clearing of `ended` (the flow this one follows, if any) and of the oldest bindings beyond
 * {@link MAX_PENDING_FLOWS}.
 */
export function startFlowBinding(req: IncomingMessage, state: string, binding: string, maxAgeS: number, secure: boolean, ended?: string): string[] {
  const own = flowCookieName(state, secure);
  const endedName = ended === undefined ? undefined : flowCookieName(ended, secure);
  const prefix = pageCookieName(FLOW_COOKIE, secure);
  const others = requestCookies(req)
    .map(([name]) => name)
    .filter((name) => name.startsWith(prefix) && name !== own && name !== endedName);
  const dropped = others.slice(0, Math.max(0, others.length - (MAX_PENDING_FLOWS - 1)));
  const cleared = [...(endedName !== undefined ? [endedName] : []), ...dropped].map((name) => cookieLine(name, '', 0, secure));
  return [...cleared, cookieLine(own, binding, maxAgeS, secure)];
}

/** The `Set-Cookie` value that ends the flow of `state` in this browser. */
export function clearFlowBinding(state: string, secure: boolean): string {
  return cookieLine(flowCookieName(state, secure), '', 0, secure);
}
