/**
 * mcp-oauth-guard/redis: rate limits and the DPoP replay cache shared by a fleet through Redis. Needs the
 * optional peer dependencies ioredis and rate-limiter-flexible, which only this entry point loads. Re-exports only.
 *
 * @module mcp-oauth-guard/redis
 */
export {
  createRedisStores,
  DEFAULT_REDIS_COMMAND_TIMEOUT_MS,
  DEFAULT_REDIS_CONNECT_TIMEOUT_MS,
  type RedisFailureMode,
  type RedisStores,
  type RedisStoresOptions,
} from './redis-stores.js';
export { redactRedisUrl } from './redis-url.js';
export type { RateLimit, RateLimiter, ReplayCache } from '../core/index.js';
