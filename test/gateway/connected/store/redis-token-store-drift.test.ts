// The Redis store's count of entries against values gone behind its back (a plain DEL without the ZREM, an older
// replica's delete, eviction under an allkeys-* policy): a write at the bound drops the members whose value is gone
// and is served, instead of the store staying full for ever. And the one start-up warning when Redis may evict.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Redis } from 'ioredis';
import { createRedisTokenStore, TOKEN_STORE_MAY_EVICT, type RedisTokenStoreOptions } from '../../../../src/gateway/connected/store/redis-token-store.js';
import { TokenStoreFullError, type TokenStore } from '../../../../src/gateway/connected/store/token-store.js';
import { REDIS_SERVER, removeTestRedis, startTestRedis, type TestRedis } from '../../../helpers/redis-server.js';

const skip = REDIS_SERVER === undefined ? 'redis-server is not installed (Debian package redis-server; CI installs it)' : false;
let redis: TestRedis | undefined;
let raw: Redis | undefined;

before(async () => {
  if (skip) return;
  redis = await startTestRedis();
  raw = new Redis(redis.url, { commandTimeout: 2_000, maxRetriesPerRequest: 0 });
});
after(async () => {
  raw?.disconnect();
  await removeTestRedis(redis);
});

const open = (keyPrefix: string, options: Partial<RedisTokenStoreOptions> = {}): Promise<TokenStore> =>
  createRedisTokenStore({ url: redis!.url, keyPrefix, onWarning: () => {}, ...options });

describe('Redis store: values gone behind its back', { skip, timeout: 20_000 }, () => {
  test('durable values deleted without their index member: a write at the bound is served, and the bound still holds', async () => {
    const prefix = 'drift:durable:';
    const store = await open(prefix, { maxEntries: 5 });
    try {
      for (let i = 0; i < 5; i++) await store.set(`conn:u${i}:notes`, 'v');
      await assert.rejects(store.set('conn:new:notes', 'v'), TokenStoreFullError);
      // An operator's plain DEL, or an eviction: the values go, their members stay.
      assert.equal(await raw!.del(`${prefix}value:conn:u1:notes`, `${prefix}value:conn:u3:notes`), 2);
      await store.set('conn:new:notes', 'v');
      await store.set('conn:newer:notes', 'v');
      assert.equal(await store.get('conn:newer:notes'), 'v');
      assert.equal(await raw!.zcard(`${prefix}index:durable`), 5, 'the gone members left the count');
      await assert.rejects(store.set('conn:one-too-many:notes', 'v'), TokenStoreFullError, 'live entries still count');
    } finally {
      await store.close();
    }
  });

  test('ephemeral values deleted behind the store\'s back leave room too', async () => {
    const prefix = 'drift:ephemeral:';
    const store = await open(prefix, { maxEphemeralEntries: 3 });
    try {
      for (let i = 0; i < 3; i++) await store.set(`ticket:t${i}`, 'v', 60_000);
      await assert.rejects(store.set('ticket:new', 'v', 60_000), TokenStoreFullError);
      await raw!.del(`${prefix}value:ticket:t0`);
      await store.set('ticket:new', 'v', 60_000);
      assert.equal(await store.get('ticket:new'), 'v');
    } finally {
      await store.close();
    }
  });

  test('a drift larger than one window is worked off by the writes that meet it', async () => {
    const prefix = 'drift:large:';
    const store = await open(prefix, { maxEntries: 400 });
    try {
      const members = Array.from({ length: 400 }, (_, i) => `${prefix}value:conn:gone${String(i).padStart(3, '0')}:notes`);
      // 400 members whose values are gone (an older replica's deletes), and no value at all.
      await raw!.zadd(`${prefix}index:durable`, ...members.flatMap((member) => ['inf', member]));
      // Every write is served (one refused would reject), each working off a window of the drift.
      for (let attempt = 0; attempt < 20; attempt++) await store.set(`conn:fresh${attempt}:notes`, 'v');
      assert.ok((await raw!.zcard(`${prefix}index:durable`)) < 400, 'the count came down');
    } finally {
      await store.close();
    }
  });
});

describe('Redis store: eviction policy at start-up', { skip, timeout: 20_000 }, () => {
  test('one warning naming the policy when it is not noeviction; none with noeviction', async () => {
    const warnings: Array<[string, string | undefined]> = [];
    const onWarning = (message: string, reason?: string): void => void warnings.push([message, reason]);
    const quiet = await open('evict:a:', { onWarning });
    await quiet.close();
    assert.deepEqual(warnings, []);
    await raw!.config('SET', 'maxmemory-policy', 'allkeys-lru');
    try {
      const loud = await open('evict:b:', { onWarning });
      await loud.close();
    } finally {
      await raw!.config('SET', 'maxmemory-policy', 'noeviction');
    }
    assert.deepEqual(warnings, [[TOKEN_STORE_MAY_EVICT, 'allkeys-lru']]);
  });
});
