/**
 * Credentials the gateway presents to a protected HTTP upstream, in its own name. The client's token never goes
 * upstream (MCP security best practices, "token passthrough"): the gateway sends a static token, a token it got
 * with the client credentials grant, or one it exchanged the caller's token for (see `token-exchange.ts`).
 */
import { statSync } from 'node:fs';
import type { AuthInfo } from '../../core/kernel/auth-info.js';
import { ConfigurationError } from '../../core/kernel/errors.js';
import { readSecretFile } from '../config/secret-file.js';
import type { CallerFlow } from './caller-flow.js';
import type { KeptLists } from './kept-lists.js';
import type { KeptProfiles } from './kept-profile.js';
import type { UpstreamTokenClient } from './upstream-token-client.js';

/** `MCP_AUTH_UPSTREAM_AUTH`: how the gateway authenticates to the upstream. */
export type UpstreamAuthMode = 'none' | 'static' | 'client_credentials' | 'token_exchange' | 'connected';

/** The modes, as `MCP_AUTH_UPSTREAM_AUTH` spells them. */
export const UPSTREAM_AUTH_MODES: readonly UpstreamAuthMode[] = ['none', 'static', 'client_credentials', 'token_exchange', 'connected'];

/**
 * Credentials that live in a store the gateway keeps (connected accounts' token store) could not be read: the
 * store, not the upstream's authorization server, is what is unavailable. Answered 503 with `Retry-After`.
 */
export class CredentialStoreUnavailableError extends Error {}

/**
 * The store the credentials' flow keeps its entries in (connected accounts' token store) refused a new one: it is
 * full (503 with `Retry-After`), or, with {@link retryAfterMs}, this caller already holds its share of it (429 with
 * `Retry-After`, while every other caller is served). Never the upstream's authorization server's doing.
 */
export class CredentialStoreFullError extends Error {
  /** Set when the caller holds its share: milliseconds until its oldest entry expires and makes room. */
  readonly retryAfterMs: number | undefined;
  constructor(message: string, retryAfterMs?: number) {
    super(message);
    this.retryAfterMs = retryAfterMs;
  }
}

/** A source of `Authorization` header values for upstream requests. */
export interface UpstreamCredentials {
  /**
   * The `Authorization` value for a request made for `caller`, e.g. `Bearer …`.
   *
   * @throws UpstreamTokenRefusedError or AuthorizationServerUnavailableError (from the token client).
   */
  authorization(caller: AuthInfo): Promise<string>;
  /**
   * After the upstream answered 401 to `rejected`: a different value to retry with once, or undefined when there
   * is none (a static token that has not changed). Drops what was cached for `rejected`.
   */
  renew(caller: AuthInfo, rejected: string): Promise<string | undefined>;
  /**
   * True when the value depends on the caller (token exchange): the gateway then has nothing to send on its own
   * behalf, e.g. to list the upstream for the policy check. Default false: the gateway's own credential.
   */
  readonly perCaller?: boolean;
  /**
   * For {@link perCaller} credentials, which readiness cannot use without a caller: resolves once the source of
   * tokens is known (the upstream's authorization server metadata loaded, with a token endpoint), rejects with why
   * not. Nothing is sent to the token endpoint.
   */
  reachable?(): Promise<void>;
  /**
   * For credentials the caller must act for first (connected accounts): how the exchange prepares a request, answers
   * a failure the caller can fix, and hears of an upstream's `insufficient_scope`. Absent for every other mode.
   */
  readonly flow?: CallerFlow;
  /**
   * For connected accounts: what the upstream said of itself, kept across restarts and replicas, for the gateway's
   * own answer to a user who has not connected yet. Absent for every other mode.
   */
  readonly profile?: KeptProfiles;
  /**
   * For connected accounts, unless lists hide what a user has not connected: the definitions the upstream last
   * listed for a connected user, kept across restarts and replicas, which the connect flow lists to a user who has
   * not connected. The exchange tells it the lists it relays. Absent for every other mode.
   */
  readonly keptLists?: KeptLists;
}

/**
 * Who the gateway is when it calls the upstream for itself (the policy check's listing): no user, no token. Only
 * credentials that are not {@link UpstreamCredentials.perCaller} are asked for it.
 */
export const GATEWAY_ITSELF: AuthInfo = Object.freeze({ token: '', clientId: '', scopes: [], extra: Object.freeze({ claims: Object.freeze({}), tokenType: 'jwt' as const }) });

/** Least time between two checks of `MCP_AUTH_UPSTREAM_TOKEN_FILE`'s modification time, in milliseconds. */
export const TOKEN_FILE_CHECK_INTERVAL_MS = 1_000;

/**
 * A static token: `token` as given, or the contents of `file` (trimmed), re-read when its modification time or
 * size changes, so a rotated secret (a Kubernetes secret volume, a sidecar) is picked up without a restart. The
 * file is stat'ed on use, at most once per `TOKEN_FILE_CHECK_INTERVAL_MS` (a second), and at once after an upstream
 * 401. A file that becomes unreadable keeps the last token (the writer may be mid-rotation).
 *
 * @throws ConfigurationError naming `setting` when the file cannot be read, is empty or too large at start-up (the
 *   refusals of every secret file, see `readSecretFile`), or holds more than one token.
 */
export function staticCredentials(source: { token: string } | { file: string; setting: string }): UpstreamCredentials {
  if ('token' in source) {
    const value = `Bearer ${source.token}`;
    return { authorization: () => Promise.resolve(value), renew: () => Promise.resolve(undefined) };
  }
  const { file, setting } = source;
  let version = '';
  let value = '';
  let checkedAt = -Infinity;
  const load = (atStartup: boolean): void => {
    checkedAt = Date.now();
    let seen: string | undefined;
    try {
      const stats = statSync(file);
      seen = `${stats.mtimeMs}:${stats.size}:${stats.ino}`;
    } catch {
      // Unreadable: the reader below says why.
    }
    if (seen !== undefined && seen === version) return;
    let token: string;
    try {
      token = readSecretFile(file, setting);
    } catch (error) {
      if (atStartup) throw error;
      return;
    }
    if (/[\s\x00-\x1f\x7f]/.test(token)) {
      if (atStartup) throw new ConfigurationError(setting, `"${file}" must hold one token with no white space inside`);
      return;
    }
    version = seen ?? '';
    value = `Bearer ${token}`;
  };
  load(true);
  return {
    authorization() {
      if (Date.now() - checkedAt >= TOKEN_FILE_CHECK_INTERVAL_MS) load(false);
      return Promise.resolve(value);
    },
    renew(_caller, rejected) {
      load(false);
      return Promise.resolve(value === rejected ? undefined : value);
    },
  };
}

/** Time before a token's expiry at which it is no longer used, in milliseconds: it must not expire in flight. */
export const EXPIRY_MARGIN_MS = 30_000;
/** Lifetime assumed for a token whose response had no `expires_in`, in milliseconds. */
export const DEFAULT_TOKEN_LIFETIME_MS = 300_000;

/**
 * The client credentials grant (RFC 6749 §4.4): one token for every caller, with `resource` = the upstream
 * (RFC 8707) and `scope`. Cached until `EXPIRY_MARGIN_MS` (30 s) before it expires; concurrent requests share
 * one token request, and a failed one is not cached.
 */
export function clientCredentials(tokens: UpstreamTokenClient, scope: string | undefined): UpstreamCredentials {
  let current: { value: string; usableUntil: number } | undefined;
  let pending: Promise<string> | undefined;
  const fetchToken = (): Promise<string> =>
    (pending ??= tokens
      .request(() => ({ grantType: 'client_credentials', parameters: scope ? { scope } : ({} as Record<string, string>) }))
      .then(
        (issued) => {
          pending = undefined;
          const value = `Bearer ${issued.accessToken}`;
          current = { value, usableUntil: usableUntil(issued.expiresAt) };
          return value;
        },
        (error: unknown) => {
          pending = undefined;
          throw error;
        },
      ));
  return {
    authorization() {
      if (current && Date.now() < current.usableUntil) return Promise.resolve(current.value);
      return fetchToken();
    },
    async renew(_caller, rejected) {
      // Concurrent 401s for the same token share one new token; a 401 for a token already replaced uses the new one.
      if (current?.value === rejected) current = undefined;
      else if (current && Date.now() < current.usableUntil) return current.value;
      const value = await fetchToken();
      return value === rejected ? undefined : value;
    },
  };
}

/** When a token stops being used: {@link EXPIRY_MARGIN_MS} before `expiresAt`, or half its life if that is short. */
export function usableUntil(expiresAt: number | undefined, now = Date.now()): number {
  const end = expiresAt ?? now + DEFAULT_TOKEN_LIFETIME_MS;
  const margin = Math.min(EXPIRY_MARGIN_MS, Math.max(0, (end - now) / 2));
  return end - margin;
}
