/**
 * OAuth 2.0 Token Exchange (RFC 8693) for the upstream: the caller's verified token is exchanged for one whose
 * audience is the upstream, so the upstream learns who the caller is without ever seeing the caller's token.
 */
import type { AuthInfo } from '../../core/kernel/auth-info.js';
import { createTokenCache } from '../../core/token/token-cache.js';
import { tokenDigest } from '../../core/wire/token-digest.js';
import { usableUntil, type UpstreamCredentials } from './upstream-credentials.js';
import type { UpstreamTokenClient } from './upstream-token-client.js';

/** RFC 8693 §2.1 grant type. */
export const TOKEN_EXCHANGE_GRANT_TYPE = 'urn:ietf:params:oauth:grant-type:token-exchange';
/** RFC 8693 §3 token type of an OAuth access token. */
export const ACCESS_TOKEN_TYPE = 'urn:ietf:params:oauth:token-type:access_token';

/** Options of {@link tokenExchangeCredentials}. */
export interface TokenExchangeOptions {
  /** `MCP_AUTH_UPSTREAM_SCOPE`: the scope asked for, else the server's default. */
  scope?: string;
  /** Most exchanged tokens kept. Default 10 000. */
  maxEntries?: number;
  /** Most memory they take, estimated from their lengths, in bytes. Default 16 MiB. */
  maxBytes?: number;
}

const DEFAULT_MAX_ENTRIES = 10_000;
const DEFAULT_MAX_BYTES = 16 * 1_048_576;
/** Estimated bytes of one entry besides its key and token (the cache entry, the object, the numbers). */
const ENTRY_OVERHEAD_BYTES = 160;
/** No exchanged token is reused longer than this, in seconds, whatever the expiries say. */
const MAX_REUSE_SECONDS = 86_400;

/** An exchanged token, as cached: the `Authorization` value and when it stops being usable (seconds). */
interface ExchangedToken {
  readonly value: string;
  readonly expiresAt: number;
}

/**
 * One exchanged token per caller token: `subject_token` = the caller's token, `subject_token_type` =
 * `urn:ietf:params:oauth:token-type:access_token`, `resource` = the upstream (RFC 8707), with the gateway's client credentials. The
 * result is cached until the earlier of its own expiry and the caller token's (a token exchanged from an expired
 * one must not outlive it), less a margin, in the core's least-recently-used cache bounded by entries and bytes,
 * keyed by the caller token's digest (`tokenDigest`), never the token. Concurrent requests with the same
 * caller token share one exchange.
 */
export function tokenExchangeCredentials(tokens: UpstreamTokenClient, options: TokenExchangeOptions = {}): UpstreamCredentials & { readonly size: number } {
  const cache = createTokenCache<ExchangedToken>({
    maxEntries: options.maxEntries ?? DEFAULT_MAX_ENTRIES,
    maxBytes: options.maxBytes ?? DEFAULT_MAX_BYTES,
    maxTtlSeconds: MAX_REUSE_SECONDS,
  });
  const pending = new Map<string, Promise<string>>();

  const exchange = (key: string, caller: AuthInfo): Promise<string> => {
    const running = pending.get(key);
    if (running) return running;
    const started = tokens
      .request(() => ({
        grantType: TOKEN_EXCHANGE_GRANT_TYPE,
        parameters: {
          subject_token: caller.token,
          subject_token_type: ACCESS_TOKEN_TYPE,
          requested_token_type: ACCESS_TOKEN_TYPE,
          ...(options.scope ? { scope: options.scope } : {}),
        },
      }))
      .then((issued) => {
        const value = `Bearer ${issued.accessToken}`;
        const callerExpiresAt = caller.expiresAt === undefined ? undefined : caller.expiresAt * 1000;
        const expiresAt = [issued.expiresAt, callerExpiresAt].filter((t): t is number => t !== undefined);
        const until = usableUntil(expiresAt.length ? Math.min(...expiresAt) : undefined);
        cache.set(key, { value, expiresAt: until / 1000 }, { bytes: key.length + value.length * 2 + ENTRY_OVERHEAD_BYTES });
        return value;
      })
      .finally(() => pending.delete(key));
    pending.set(key, started);
    return started;
  };

  return {
    perCaller: true,
    reachable: () => tokens.configured(),
    get size() {
      return cache.size;
    },
    authorization(caller) {
      const key = tokenDigest(caller.token);
      const entry = cache.get(key);
      return entry ? Promise.resolve(entry.value) : exchange(key, caller);
    },
    async renew(caller, rejected) {
      const key = tokenDigest(caller.token);
      const entry = cache.get(key);
      if (entry?.value === rejected) cache.delete(key);
      else if (entry) return entry.value;
      const value = await exchange(key, caller);
      return value === rejected ? undefined : value;
    },
  };
}
