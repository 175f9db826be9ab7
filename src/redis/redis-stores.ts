import type { Redis as RedisClient } from 'ioredis';
import type { RateLimiterRedis as RedisLimiter } from 'rate-limiter-flexible';
import { ConfigurationError } from '../core/kernel/errors.js';
import type { RateLimit } from '../core/limits/rate-limit.js';
import { createMemoryRateLimiter, type RateLimiter } from '../core/limits/rate-limiter.js';
import { ReplayShareExceededError, type ReplayCache } from '../core/limits/replay-cache.js';
import { checkInteger } from '../core/kernel/settings.js';
import { openRedisConnection } from './redis-connection.js';
import { RedisHealth } from './redis-health.js';
import { checkRedisUrl, redactRedisUrl } from './redis-url.js';

/**
 * What the rate limits do while Redis cannot be reached: `fallback` counts them per process (each replica then
 * allows the limit by itself) and logs a warning once per outage; `closed` refuses the requests they would count
 * with 503 and `Retry-After`. The DPoP replay cache fails closed either way (503): a replay cache per process
 * would accept a proof replayed to another replica.
 */
export type RedisFailureMode = 'fallback' | 'closed';

/**
 * Checks a {@link RedisFailureMode}: undefined stays undefined (the default, `fallback`, is the caller's).
 *
 * @example
 * checkRedisFailureMode('closed', 'MCP_AUTH_REDIS_FAIL'); // 'closed'
 *
 * @throws ConfigurationError naming `setting` for anything but fallback or closed.
 */
export function checkRedisFailureMode(value: unknown, setting: string): RedisFailureMode | undefined {
  if (value === undefined || value === 'fallback' || value === 'closed') return value;
  throw new ConfigurationError(setting, `must be fallback (per-process limits while Redis is down) or closed (503) (got ${JSON.stringify(value)})`);
}

/** Options of {@link createRedisStores}. */
export interface RedisStoresOptions {
  /** `redis://[[user]:password@]host[:port][/db]`, or `rediss://` for TLS. Never logged (see `redactRedisUrl`). */
  url: string;
  /** See {@link RedisFailureMode}. Default `fallback`. */
  failure?: RedisFailureMode;
  /** Longest wait for one Redis command, in milliseconds; past it the command fails. Default 500. */
  commandTimeoutMs?: number;
  /** Longest wait to connect (and at start-up, for the first connection), in milliseconds. Default 2 000. */
  connectTimeoutMs?: number;
  /**
   * Prefix of every key written. Default `mcp-guard:<resource>:` with {@link RedisStoresOptions.resource}, else
   * `mcp-guard:`. Servers that share a prefix share each caller's counts.
   */
  keyPrefix?: string;
  /**
   * The canonical resource URI these stores count for, e.g. `https://mcp.example.com/mcp`: part of the default
   * key prefix, so two MCP servers on one Redis count each caller apart. DPoP `jti`s are kept under it too: a
   * proof is bound to one URL by its `htu` (RFC 9449 §4.3), so a replay to another server is refused anyway.
   */
  resource?: string;
  /**
   * Receives warnings (Redis lost, back), and for a loss the reason Redis or the connection gave (`WRONGPASS …`,
   * `connect ECONNREFUSED …`). Never given the URL's password. Default `console.warn`.
   */
  onWarning?: (message: string, reason?: string) => void;
  /**
   * Most live DPoP `jti`s one caller may hold in the shared replay cache, across every replica: past it, that
   * caller's new proofs get 429 with `Retry-After` while every other caller is served, as with the in-memory
   * cache's `maxEntriesPerCaller`. What Redis holds for DPoP is then at most this many claims per caller active
   * within a proof's lifetime (70 s by default), each a key and a sorted-set member of about 200 bytes together.
   * Unlike the in-memory cache, which has a fixed size and enforces shares only once half full, Redis has no size
   * of its own to be under pressure from (bound its memory with `maxmemory`), so the share is always enforced: one
   * caller makes at most this many DPoP requests per proof window across the fleet (about 140 a second with the
   * default). Default 10 000.
   */
  replayCacheMaxPerCaller?: number;
  /** Setting names for error messages. Default `options.url`, `options.failure`. */
  names?: { url?: string; failure?: string };
}

/** Rate limiter and DPoP replay cache kept in one Redis, shared by every replica that uses it. */
export interface RedisStores {
  /** For the guard's `rateLimiter` option. */
  readonly rateLimiter: RateLimiter;
  /**
   * For the guard's `dpopReplayCache` option: one key per `jti` (`SET key 1 PXAT expiresAtMs` if absent) and, per
   * caller, a sorted set of its live `jti`s that holds it to its share; one atomic script per claim.
   */
  readonly replayCache: ReplayCache;
  /** Closes the connection (QUIT, then a disconnect if Redis does not answer within the command timeout). */
  close(): Promise<void>;
}

/** Default {@link RedisStoresOptions.replayCacheMaxPerCaller}: 10 % of the in-memory cache's default size. */
export const DEFAULT_REDIS_REPLAY_CACHE_MAX_PER_CALLER = 10_000;
export { DEFAULT_REDIS_COMMAND_TIMEOUT_MS, DEFAULT_REDIS_CONNECT_TIMEOUT_MS } from './redis-connection.js';

/**
 * One DPoP claim, atomic in Redis. KEYS[1] is the `jti`'s key, KEYS[2] the caller's sorted set of live `jti`s
 * scored by expiry; ARGV is now and the expiry (ms since the epoch), the caller's share, and the `jti`. Returns 1
 * when claimed, 0 when the `jti` is held already, and -n when the caller holds its share: its oldest claim expires
 * in n ms. The `jti` key is the one a claim without a caller sets, so replicas of either kind see each other's.
 */
const CLAIM_SCRIPT = `
local now = tonumber(ARGV[1])
local expires = tonumber(ARGV[2])
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[3]) then
  local oldest = redis.call('ZRANGE', KEYS[2], 0, 0, 'WITHSCORES')
  return -math.max(1, math.ceil(tonumber(oldest[2]) - now))
end
redis.call('SET', KEYS[1], '1', 'PXAT', ARGV[2])
redis.call('ZADD', KEYS[2], expires, ARGV[4])
if redis.call('PTTL', KEYS[2]) < expires - now then redis.call('PEXPIREAT', KEYS[2], ARGV[2]) end
return 1
`;

/**
 * Connects to Redis and returns the stores the guard shares through it. ioredis and rate-limiter-flexible are
 * optional peer dependencies, loaded only when called (ioredis by `openRedisConnection`), so that nobody who never
 * sets a Redis URL loads them. No request waits on a dead Redis: every command has a timeout, the offline queue is
 * off (a command while disconnected fails at once) and reconnections back off to at most 2 s. Resolves once
 * connected, or after
 * `connectTimeoutMs` with a warning (the stores then behave as in an outage until Redis is reachable).
 *
 * @throws ConfigurationError naming the URL setting when it is not a Redis URL or the packages are not installed.
 */
export async function createRedisStores(options: RedisStoresOptions): Promise<RedisStores> {
  const urlSetting = options.names?.url ?? 'options.url';
  const url = checkRedisUrl(options.url, urlSetting);
  const failure = checkRedisFailureMode(options.failure, options.names?.failure ?? 'options.failure') ?? 'fallback';
  const maxPerCaller = checkInteger(options.replayCacheMaxPerCaller, 'options.replayCacheMaxPerCaller', DEFAULT_REDIS_REPLAY_CACHE_MAX_PER_CALLER, { min: 1 });
  const prefix = options.keyPrefix ?? (options.resource === undefined ? 'mcp-guard:' : `mcp-guard:${options.resource}:`);
  const warn = options.onWarning ?? ((message: string) => console.warn(message));
  const where = redactRedisUrl(url);

  const { RateLimiterRedis, RateLimiterRes } = await import('rate-limiter-flexible').catch(missingPackages(urlSetting));
  const effect = failure === 'closed' ? 'rate-limited requests are refused with 503' : 'rate limits are counted per process';
  const health = new RedisHealth(
    {
      lost: (why) => `Redis at ${where} is unavailable (${why}): ${effect}, and DPoP requests are refused with 503, until it is back`,
      back: `Redis at ${where} is back: rate limits and the DPoP replay cache are shared again`,
    },
    warn,
  );
  const connection = await openRedisConnection({
    url,
    urlSetting,
    commandTimeoutMs: options.commandTimeoutMs,
    connectTimeoutMs: options.connectTimeoutMs,
    onLost: (why) => health.lost(why),
    onReady: () => health.back(),
  });
  const redis: RedisClient = connection.client;

  return {
    rateLimiter: redisRateLimiter(redis, { RateLimiterRedis, RateLimiterRes }, prefix, failure, health),
    replayCache: redisReplayCache(redis, prefix, maxPerCaller, health),
    close: () => connection.close(),
  };
}

/**
 * The rate limiter shared through Redis: one rate-limiter-flexible limiter per limit, made on first use. While Redis
 * fails, `fallback` counts in this process and `closed` rejects (503).
 */
function redisRateLimiter(
  redis: RedisClient,
  flexible: Pick<typeof import('rate-limiter-flexible'), 'RateLimiterRedis' | 'RateLimiterRes'>,
  prefix: string,
  failure: RedisFailureMode,
  health: RedisHealth,
): RateLimiter {
  const limiters = new Map<string, RedisLimiter>();
  const limiterFor = (limit: RateLimit): RedisLimiter => {
    let limiter = limiters.get(limit.text);
    if (limiter === undefined) {
      limiter = new flexible.RateLimiterRedis({
        storeClient: redis,
        points: limit.points,
        duration: limit.windowMs / 1000,
        keyPrefix: `${prefix}rl:${limit.text}`,
        // Fail at once rather than wait for a connection that is not there.
        rejectIfRedisNotReady: true,
      });
      limiters.set(limit.text, limiter);
    }
    return limiter;
  };
  const local = createMemoryRateLimiter();
  return {
    consume(key, limit, caller) {
      return limiterFor(limit)
        .consume(key)
        .then(
          () => {
            health.back();
            return 0;
          },
          (rejection: unknown) => {
            // rate-limiter-flexible rejects with a RateLimiterRes over the limit, with an Error when Redis fails.
            if (rejection instanceof flexible.RateLimiterRes) {
              health.back();
              return Math.max(1, rejection.msBeforeNext);
            }
            health.lost(rejection instanceof Error ? rejection.message : 'not ready');
            if (failure === 'closed') throw rejection;
            return local.consume(key, limit, caller);
          },
        );
    },
  };
}

/** The DPoP replay cache shared through Redis: a key per `jti`, and with a caller, its share (`CLAIM_SCRIPT`). */
function redisReplayCache(redis: RedisClient, prefix: string, maxPerCaller: number, health: RedisHealth): ReplayCache {
  return {
    async claim(jti, expiresAtMs, caller) {
      const now = Date.now();
      // An expired proof is never claimed, as in the memory cache (and PXAT in the past would be an error).
      if (!(expiresAtMs > now)) return false;
      const key = `${prefix}dpop:${jti}`;
      const expiry = String(Math.ceil(expiresAtMs));
      let result: unknown;
      try {
        if (caller === undefined) result = (await redis.call('SET', key, '1', 'NX', 'PXAT', expiry)) === 'OK' ? 1 : 0;
        else result = await redis.eval(CLAIM_SCRIPT, 2, key, `${prefix}dpop-caller:${caller}`, String(now), expiry, String(maxPerCaller), jti);
        health.back();
      } catch (error) {
        health.lost((error as Error).message);
        throw error;
      }
      if (typeof result === 'number' && result < 0) throw new ReplayShareExceededError(maxPerCaller, -result);
      return result === 1;
    },
  };
}

function missingPackages(setting: string): (error: unknown) => never {
  return (error) => {
    throw new ConfigurationError(
      setting,
      `needs the optional packages ioredis and rate-limiter-flexible: run npm install ioredis rate-limiter-flexible (${(error as Error).message})`,
    );
  };
}
