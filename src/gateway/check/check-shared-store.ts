import { randomUUID } from 'node:crypto';
import { ConfigurationError } from '../../core/errors.js';
import { explainFailure } from '../../core/explain-failure.js';
import { redactRedisUrl } from '../../redis/redis-url.js';
import type { SharedStoreConfig } from '../shared-store-config.js';
import type { CheckResult } from './check-result.js';

/** How long the keys the check writes live, in milliseconds: long enough to be written, short enough to leave nothing. */
const CHECK_KEY_LIFETIME_MS = 5_000;

const URL_FIX = 'check MCP_AUTH_REDIS_URL (host, port, password, rediss:// for TLS) and that this host can reach Redis';

/**
 * Connects to the Redis the gateway shares its rate limits and DPoP replay cache through, with the gateway's own
 * client and settings (`createRedisStores`, the same key prefix), and makes one of each call the gateway makes
 * there: a DPoP replay claim (`SET … NX PXAT`, which needs Redis 6.2 or later) and a rate-limit count
 * (rate-limiter-flexible's script). Each writes a key of its own, under the gateway's prefix, that expires within
 * 5 s. Connecting and each command wait at most `timeoutMs`. The URL is shown without its user or password.
 */
export async function checkSharedStore(redis: SharedStoreConfig, resource: string, timeoutMs: number): Promise<CheckResult> {
  const base = { check: 'shared store', subject: redactRedisUrl(redis.url) } as const;
  // Loaded only here: ioredis and rate-limiter-flexible are optional dependencies, as for the gateway.
  const { createRedisStores } = await import('../../redis/redis-stores.js');
  const warnings: string[] = [];
  let stores: Awaited<ReturnType<typeof createRedisStores>>;
  try {
    stores = await createRedisStores({
      ...redis,
      resource,
      names: { url: 'MCP_AUTH_REDIS_URL', failure: 'MCP_AUTH_REDIS_FAIL' },
      connectTimeoutMs: timeoutMs,
      commandTimeoutMs: timeoutMs,
      onWarning: (message) => warnings.push(message),
    });
  } catch (error) {
    if (error instanceof ConfigurationError) return { ...base, status: 'fail', message: error.message, fix: 'npm install ioredis rate-limiter-flexible beside mcp-oauth-guard' };
    throw error;
  }
  try {
    if (warnings.length > 0) return { ...base, status: 'fail', message: `not usable: ${warnings[0]}`, fix: URL_FIX };
    try {
      const claimed = await stores.replayCache.claim(`check-${randomUUID()}`, Date.now() + CHECK_KEY_LIFETIME_MS);
      if (!claimed) return { ...base, status: 'fail', message: 'a new DPoP proof id was refused as a replay', fix: 'check that no other program writes under MCP_AUTH_REDIS_KEY_PREFIX' };
    } catch (error) {
      return {
        ...base,
        status: 'fail',
        message: `a DPoP replay claim (SET NX PXAT) failed: ${explainFailure(error, 200)}`,
        fix: 'use Redis 6.2 or later (PXAT), and a Redis user allowed SET on the key prefix',
      };
    }
    const limit = { points: 1_000_000, windowMs: CHECK_KEY_LIFETIME_MS, text: 'check' };
    try {
      // With MCP_AUTH_REDIS_FAIL=fallback a failure falls back to counting in the process and is only warned of.
      await stores.rateLimiter.consume(`check-${randomUUID()}`, limit);
    } catch (error) {
      warnings.push(explainFailure(error, 200));
    }
    if (warnings.length > 0) {
      return { ...base, status: 'fail', message: `a rate-limit count failed: ${warnings[0]}`, fix: 'use a Redis user allowed EVAL, EVALSHA and the string commands on the key prefix' };
    }
    return { ...base, status: 'ok', message: 'reachable: a DPoP replay claim and a rate-limit count succeeded (their keys expire within 5 s)' };
  } finally {
    await stores.close();
  }
}
