import { ConfigurationError } from '../../core/kernel/errors.js';
import { readSetting } from '../../core/kernel/settings.js';
import { checkRedisFailureMode, type RedisFailureMode } from '../../redis/redis-stores.js';
import { checkRedisUrl } from '../../redis/redis-url.js';
import type { GatewaySetting } from './gateway-setting.js';

/** The Redis the gateway shares its rate limits and DPoP replay cache through (`MCP_AUTH_REDIS_URL`). */
export interface SharedStoreConfig {
  /** The Redis URL; may hold a password: never log it (see `redactRedisUrl`). */
  url: string;
  /** What rate limits do while Redis is down (`MCP_AUTH_REDIS_FAIL`). */
  failure: RedisFailureMode;
  /** Prefix of every key (`MCP_AUTH_REDIS_KEY_PREFIX`); absent: `mcp-guard:<canonical resource>:`. */
  keyPrefix?: string;
}

/** The rate-limit and Redis settings, listed by `--help` with the gateway's others. */
export const SHARED_STORE_SETTINGS = Object.freeze([
  { env: 'MCP_AUTH_RATE_LIMIT', group: 'limits', flag: '--rate-limit', value: '<count/s|min|h>', description: 'Requests allowed per caller (issuer, subject, client), e.g. 120/min; over it 429 with Retry-After. Per-tool limits are the policy\'s "rateLimits". Per process unless MCP_AUTH_REDIS_URL is set.', defaultValue: 'no limit' },
  { env: 'MCP_AUTH_REDIS_URL', group: 'shared-store', value: '<redis://…>', description: 'A Redis shared by every replica: rate limits and the DPoP replay cache are kept there (needs the ioredis and rate-limiter-flexible packages). Environment only, never logged: it may hold a password.', defaultValue: 'off (per process)' },
  { env: 'MCP_AUTH_REDIS_KEY_PREFIX', group: 'shared-store', flag: '--redis-key-prefix', value: '<prefix>', description: 'Prefix of every Redis key. The default holds the resource, so gateways for different MCP servers on one Redis count apart; give several resources one prefix to share their counts on purpose.', defaultValue: 'mcp-guard:<resource>:' },
  { env: 'MCP_AUTH_REDIS_FAIL', group: 'shared-store', flag: '--redis-fail', value: '<fallback|closed>', description: 'While Redis is unreachable: "fallback" counts rate limits per process and logs a warning, "closed" refuses rate-limited requests with 503. DPoP requests get 503 either way.', defaultValue: 'fallback' },
] satisfies GatewaySetting[]);

/**
 * Reads `MCP_AUTH_REDIS_URL`, `MCP_AUTH_REDIS_FAIL` and `MCP_AUTH_REDIS_KEY_PREFIX`.
 *
 * @returns undefined when no Redis is set.
 * @throws ConfigurationError naming the setting: a URL that is not a Redis one (never repeated), a failure mode
 *   other than fallback or closed, or a failure mode or key prefix without a URL (it would do nothing).
 */
export function loadSharedStoreConfig(settings: Readonly<Record<string, string | undefined>>): SharedStoreConfig | undefined {
  const url = readSetting(settings, 'MCP_AUTH_REDIS_URL');
  const failure = readSetting(settings, 'MCP_AUTH_REDIS_FAIL')?.toLowerCase();
  const keyPrefix = readSetting(settings, 'MCP_AUTH_REDIS_KEY_PREFIX');
  if (url === undefined) {
    if (failure !== undefined) throw new ConfigurationError('MCP_AUTH_REDIS_FAIL', 'has no effect without MCP_AUTH_REDIS_URL: set it too, or unset MCP_AUTH_REDIS_FAIL');
    if (keyPrefix !== undefined) throw new ConfigurationError('MCP_AUTH_REDIS_KEY_PREFIX', 'has no effect without MCP_AUTH_REDIS_URL: set it too, or unset MCP_AUTH_REDIS_KEY_PREFIX');
    return undefined;
  }
  if (keyPrefix !== undefined && (keyPrefix.length > 200 || /[\s\p{Cc}]/u.test(keyPrefix))) {
    throw new ConfigurationError('MCP_AUTH_REDIS_KEY_PREFIX', 'must be at most 200 characters, without spaces or control characters, e.g. team-a:');
  }
  return { url: checkRedisUrl(url, 'MCP_AUTH_REDIS_URL'), failure: checkRedisFailureMode(failure, 'MCP_AUTH_REDIS_FAIL') ?? 'fallback', ...(keyPrefix !== undefined ? { keyPrefix } : {}) };
}
