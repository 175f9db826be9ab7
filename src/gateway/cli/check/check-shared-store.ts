import { randomUUID } from 'node:crypto';
import { ConfigurationError } from '../../../core/kernel/errors.js';
import { explainFailure } from '../../../core/kernel/explain-failure.js';
import { redactRedisUrl } from '../../../redis/redis-url.js';
import type { SharedStoreConfig } from '../../config/shared-store-config.js';
import type { CheckResult } from './check-result.js';

/** How long the keys the check writes live, in milliseconds: long enough to be written, short enough to leave nothing. */
const CHECK_KEY_LIFETIME_MS = 5_000;

const URL_FIX = 'check the host and port of MCP_AUTH_REDIS_URL, and that this host can reach Redis';

/** What a Redis failure means for the operator: the line's message and its fix, from the reason Redis gave. */
function explainRedisFailure(reason: string, tls: boolean): { message: string; fix: string } {
  if (/\b(WRONGPASS|NOAUTH)\b|invalid password|AUTH failed/i.test(reason)) {
    return { message: `Redis refused the credentials (${reason})`, fix: 'correct the user and password in MCP_AUTH_REDIS_URL (redis://user:password@host:port)' };
  }
  if (/DB index is out of range/i.test(reason)) {
    return { message: `Redis has no such database (${reason})`, fix: 'use a database number this Redis has: the path of MCP_AUTH_REDIS_URL, /0 when absent' };
  }
  if (/\bNOPERM\b/.test(reason)) {
    return { message: `the Redis user may not run a command the gateway needs (${reason})`, fix: 'allow the user SET, EVAL, EVALSHA and the string commands on the key prefix (MCP_AUTH_REDIS_KEY_PREFIX)' };
  }
  if (tls && /no connection within/.test(reason)) {
    return { message: `no TLS connection (${reason})`, fix: `a rediss:// URL needs a Redis that speaks TLS on that port: use redis:// for a plain one, or ${URL_FIX}` };
  }
  return { message: `Redis cannot be reached (${reason})`, fix: URL_FIX };
}

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
  const { createRedisStores } = await import('../../../redis/redis-stores.js');
  // The reason of each loss Redis or the connection reported; the gateway would log it as an outage.
  const failures: string[] = [];
  const tls = redis.url.startsWith('rediss:');
  let stores: Awaited<ReturnType<typeof createRedisStores>>;
  try {
    stores = await createRedisStores({
      ...redis,
      resource,
      names: { url: 'MCP_AUTH_REDIS_URL', failure: 'MCP_AUTH_REDIS_FAIL' },
      connectTimeoutMs: timeoutMs,
      commandTimeoutMs: timeoutMs,
      onWarning: (message, reason) => {
        if (reason !== undefined) failures.push(reason);
      },
    });
  } catch (error) {
    if (error instanceof ConfigurationError) return { ...base, status: 'fail', message: error.message, fix: 'npm install ioredis rate-limiter-flexible beside mcp-oauth-guard' };
    throw error;
  }
  try {
    if (failures.length > 0) return { ...base, status: 'fail', ...explainRedisFailure(failures[0]!, tls) };
    try {
      const claimed = await stores.replayCache.claim(`check-${randomUUID()}`, Date.now() + CHECK_KEY_LIFETIME_MS);
      if (!claimed) return { ...base, status: 'fail', message: 'a new DPoP proof id was refused as a replay', fix: 'check that no other program writes under MCP_AUTH_REDIS_KEY_PREFIX' };
    } catch (error) {
      const reason = explainFailure(error, 200);
      if (/\bNOPERM\b/.test(reason)) return { ...base, status: 'fail', ...explainRedisFailure(reason, tls) };
      return { ...base, status: 'fail', message: `a DPoP replay claim (SET NX PXAT) failed: ${reason}`, fix: 'use Redis 6.2 or later (PXAT)' };
    }
    const limit = { points: 1_000_000, windowMs: CHECK_KEY_LIFETIME_MS, text: 'check' };
    try {
      // With MCP_AUTH_REDIS_FAIL=fallback a failure falls back to counting in the process and is only warned of.
      await stores.rateLimiter.consume(`check-${randomUUID()}`, limit);
    } catch (error) {
      failures.push(explainFailure(error, 200));
    }
    if (failures.length > 0) {
      const { message, fix } = explainRedisFailure(failures[0]!, tls);
      return { ...base, status: 'fail', message: `a rate-limit count failed: ${message}`, fix };
    }
    return { ...base, status: 'ok', message: 'reachable: a DPoP replay claim and a rate-limit count succeeded (their keys expire within 5 s)' };
  } finally {
    await stores.close();
  }
}
