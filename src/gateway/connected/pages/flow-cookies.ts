/**
 * The browser binding of each sign-in in progress (the gateway's own, then the upstream's): a cookie per flow, named
 * after a short digest of the flow's `state`, holding a random value whose SHA-256 the pending flow keeps. Two
 * connect links opened at once in one browser thus each keep their own binding; the callback finds its cookie from
 * the `state` it carries. A browser holds at most {@link MAX_PENDING_FLOWS}: starting one more drops the oldest,
 * so a stream of started sign-ins cannot grow the browser's `Cookie` header without bound.
 *
 * The bindings are for {@link FLOW_COOKIE_PATH} only, where every flow starts and ends, so the browser does not send
 * them with the MCP endpoint's requests or the connections page's. A scoped path rules out `__Host-` (it demands
 * `Path=/`): on https they are `__Secure-` cookies, which a page over http cannot set.
 */
import { createHash } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { cookieLine, readCookie, requestCookies } from './page-cookies.js';

/** The path of every flow binding cookie: the connect pages (`/connect/<ticket>`, `/connect/sign-in`, the callbacks). */
export const FLOW_COOKIE_PATH = '/connect';

/** Most flow bindings one browser keeps; starting another clears the oldest. */
export const MAX_PENDING_FLOWS = 5;

/** Base name of every flow binding cookie, before the flow id. */
const FLOW_COOKIE = 'mcpg_flow_';

/** The flow id of `state`: 16 base64url characters of its SHA-256 (96 bits); the state itself is never a cookie name. */
export function flowIdOf(state: string): string {
  return createHash('sha256').update(`mcp-oauth-guard flow ${state}`).digest('base64url').slice(0, 16);
}

/**
 * The name, as on the wire, of the binding cookie of the flow of `state`: `__Secure-` first on https
 * (RFC 6265bis section 4.1.3.1).
 *
 * @example
 * flowCookieName(state, true); // '__Secure-mcpg_flow_' + flowIdOf(state)
 */
export function flowCookieName(state: string, secure: boolean): string {
  return flowWireName(`${FLOW_COOKIE}${flowIdOf(state)}`, secure);
}

function flowWireName(name: string, secure: boolean): string {
  return secure ? `__Secure-${name}` : name;
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
  const prefix = flowWireName(FLOW_COOKIE, secure);
  const others = requestCookies(req)
    .map(([name]) => name)
    .filter((name) => name.startsWith(prefix) && name !== own && name !== endedName);
  const dropped = others.slice(0, Math.max(0, others.length - (MAX_PENDING_FLOWS - 1)));
  const cleared = [...(endedName !== undefined ? [endedName] : []), ...dropped].map((name) => cookieLine(name, '', 0, secure, FLOW_COOKIE_PATH));
  return [...cleared, cookieLine(own, binding, maxAgeS, secure, FLOW_COOKIE_PATH)];
}

/** The `Set-Cookie` value that ends the flow of `state` in this browser (`Max-Age=0`, for the path it was set for). */
export function clearFlowBinding(state: string, secure: boolean): string {
  return cookieLine(flowCookieName(state, secure), '', 0, secure, FLOW_COOKIE_PATH);
}
