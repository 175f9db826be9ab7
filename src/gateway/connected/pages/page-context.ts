/**
 * What every page handler shares: the gateway's origin, the store, the sign-in, the upstream authorization, and the
 * log of outcomes. A log line names the outcome, the server and a digest of the user; never a subject, a token, a
 * code, a state or a ticket id.
 */
import type { TrustedProxies } from '../../../core/kernel/trusted-proxies.js';
import { userKey, type UserRef } from '../oauth/connection-record.js';
import type { TokenStore } from '../store/token-store.js';
import type { GatewayLogin } from './gateway-login.js';
import type { PageSealer, UpstreamAuthorizationPort } from './page-ports.js';
import type { SignInBudget } from './sign-in-budget.js';

/**
 * The outcomes the pages log, one line each:
 * - `connected`: the upstream authorization completed and the connection is stored;
 * - `refused_other_user`: a connect link was opened by someone signed in as another user (the ticket is burnt);
 * - `refused_other_issuer`: a connect link for a caller of another issuer than the login issuer;
 * - `refused_other_browser`: a callback from a browser other than the one that started it;
 * - `refused_other_server`: an upstream's state brought back to another server's redirect URI (a mix-up attempt,
 *   RFC 9700 §4.4); nothing is taken or exchanged;
 * - `expired_ticket`: an unknown, expired or used connect link;
 * - `unknown_state`: a callback whose `state` is no pending authorization (a replay, expired);
 * - `login_failed`: the sign-in came back refused (declined, or the response or ID token refused);
 * - `upstream_failed`: the upstream authorization failed;
 * - `disconnected`: the user disconnected a server on the connections page;
 * - `refused_request`: a connections form refused (CSRF token, origin);
 * - `busy`: the connections page's sign-in budget is spent for this minute;
 * - `error`: an unexpected failure (its error name only).
 */
export type ConnectPageOutcome =
  | 'connected'
  | 'refused_other_user'
  | 'refused_other_issuer'
  | 'refused_other_browser'
  | 'refused_other_server'
  | 'expired_ticket'
  | 'unknown_state'
  | 'login_failed'
  | 'upstream_failed'
  | 'disconnected'
  | 'refused_request'
  | 'busy'
  | 'error';

/** A log line of the pages. */
export interface ConnectPageEvent {
  readonly event: ConnectPageOutcome;
  /** The configuration file's server name, `""` for the single upstream. */
  readonly server?: string;
  /** {@link userDigest} of the user concerned (the ticket's, for a refusal). */
  readonly user?: string;
  /** {@link userDigest} of the user who signed in instead, for `refused_other_user`. */
  readonly signedIn?: string;
  /** Why, in a word: the sign-in's refusal reason, an error's name. */
  readonly reason?: string;
  /** The OAuth error code the issuer or the upstream's authorization server answered, e.g. `invalid_client`. */
  readonly error?: string;
  /** The setting an operator should check (its name, never its value), e.g. `MCP_AUTH_LOGIN_CLIENT_SECRET`. */
  readonly setting?: string;
}

/**
 * A short digest naming a user in a log line: the first 16 characters of the store's {@link userKey}, enough to
 * correlate lines, not to recover the subject.
 */
export function userDigest(user: UserRef): string {
  return userKey(user).slice(0, 16);
}

/** What the page handlers share. */
export interface PageContext {
  /** The gateway's origin, from its configured resource URI. */
  readonly origin: string;
  /** Whether the origin is https: cookies are then `__Host-` and Secure. */
  readonly secure: boolean;
  readonly store: TokenStore;
  readonly sealer: PageSealer;
  readonly login: GatewayLogin;
  readonly port: UpstreamAuthorizationPort;
  /** Life of the connections page's signed-in cookie, in milliseconds. */
  readonly sessionTtlMs: number;
  /** Sign-ins the connections page may still start, per client address group. */
  readonly signInBudget: SignInBudget;
  /** Reverse proxies whose `X-Forwarded-For` names the client: for the sign-in budget only. */
  readonly trustedProxies: TrustedProxies;
  readonly now: () => number;
  log(event: ConnectPageEvent): void;
}

/** How a server is named on a page: its name, or "the upstream server" for the single upstream. */
export function serverLabel(server: string): string {
  return server === '' ? 'the upstream server' : server;
}
