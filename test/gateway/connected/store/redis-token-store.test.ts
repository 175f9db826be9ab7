// The Redis store against a real redis-server: the shared TokenStore contract, then two store instances on one Redis
// as two replicas (compare-and-set and locks exclude across them, a lock left by a stalled holder expires), prefixes
// kept apart, and Redis stopped or frozen: TokenStoreUnavailableError within the command timeout, one warning
// without the password, and service again once Redis is back.
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, test } from 'node:test';
import { ConfigurationError } from '../../../../src/core/kernel/errors.js';
import { createRedisTokenStore, type RedisTokenStoreOptions } from '../../../../src/gateway/connected/store/redis-token-store.js';
import { TokenStoreFullError, type TokenStore } from '../../../../src/gateway/connected/store/token-store.js';
import { TokenStoreUnavailableError } from '../../../../src/gateway/connected/store/token-store-unavailable-error.js';
import { REDIS_SERVER, removeTestRedis, startTestRedis, type TestRedis } from '../../../helpers/redis-server.js';
import { describeTokenStoreConformance } from './token-store-conformance.js';

const skip = REDIS_SERVER === undefined ? 'redis-server is not installed (Debian package redis-server; CI installs it)' : false;
let redis: TestRedis | undefined;
let prefixes = 0;
const newPrefix = (): string => `test:${(prefixes += 1)}:`;
const open = (options: Partial<RedisTokenStoreOptions> = {}): Promise<TokenStore> =>
  createRedisTokenStore({ url: redis!.url, keyPrefix: newPrefix(), onWarning: () => {}, ...options });

before(async () => {
  if (!skip) redis = await startTestRedis();
});
after(() => removeTestRedis(redis));

describeTokenStoreConformance('Redis store', { open: (bounds) => open(bounds), boundsEntries: true, skip });

describe('Redis store: replicas and outages', { skip, timeout: 20_000 }, () => {
  test('two replicas share the bounds on entries, durable and ephemeral apart; expired, deleted and taken entries give room', async () => {
    const prefix = newPrefix();
    const [a, b] = [await open({ keyPrefix: prefix, maxEntries: 3, maxEphemeralEntries: 2 }), await open({ keyPrefix: prefix, maxEntries: 3, maxEphemeralEntries: 2 })];
    try {
      const written = await Promise.allSettled(Array.from({ length: 8 }, (_, i) => (i % 2 ? a : b).set(`conn:u${i}:notes`, 'v')));
      assert.equal(written.filter((r) => r.status === 'fulfilled').length, 3, 'three connections in all, across both replicas');
      for (const refused of written.filter((r) => r.status === 'rejected')) assert.ok((refused as PromiseRejectedResult).reason instanceof TokenStoreFullError);
      await assert.rejects(b.compareAndSet('profile:notes', undefined, 'p'), /3 durable entries/);
      // Ephemeral entries have room of their own, and a full store of them leaves connections alone.
      await a.set('ticket:t1', 'v', 200);
      await b.set('flow:f1', 'v', 60_000);
      await assert.rejects(a.set('ticket:t2', 'v', 60_000), TokenStoreFullError);
      const kept = (await a.keys('conn:', 10))[0]!;
      await b.set(kept, 'rewritten');
      assert.equal(await a.get(kept), 'rewritten', 'an existing key is written at the bound');
      await sleep(300);
      await b.set('ticket:t2', 'v', 60_000);
      assert.equal(await a.take('flow:f1'), 'v');
      await a.set('flow:f2', 'v', 60_000);
      assert.equal(await b.delete(kept), true);
      await a.set('conn:late:notes', 'v');
      await assert.rejects(a.set('conn:later:notes', 'v'), TokenStoreFullError);
    } finally {
      await a.close();
      await b.close();
    }
  });

  test('two replicas: of many compare-and-sets split between them exactly one wins, and both read it', async () => {
    const prefix = newPrefix();
    const [a, b] = [await open({ keyPrefix: prefix }), await open({ keyPrefix: prefix })];
    try {
      await a.set('conn:u:s', 'rotated-0');
      const results = await Promise.all(Array.from({ length: 20 }, (_, i) => (i % 2 ? a : b).compareAndSet('conn:u:s', 'rotated-0', `rotated-${i + 1}`)));
      const winner = results.indexOf(true);
      assert.equal(results.filter(Boolean).length, 1);
      assert.equal(await a.get('conn:u:s'), `rotated-${winner + 1}`);
      assert.equal(await b.get('conn:u:s'), `rotated-${winner + 1}`);
      await a.set('flow:f', 'once', 60_000);
      const taken = await Promise.all([a.take('flow:f'), b.take('flow:f'), a.take('flow:f'), b.take('flow:f')]);
      assert.deepEqual(taken.filter((v) => v !== undefined), ['once']);
    } finally {
      await a.close();
      await b.close();
    }
  });

  test('two replicas: holders of one lock never overlap across them', async () => {
    const prefix = newPrefix();
    const [a, b] = [await open({ keyPrefix: prefix }), await open({ keyPrefix: prefix })];
    try {
      let active = 0;
      let most = 0;
      const runs = Array.from({ length: 10 }, (_, i) =>
        (i % 2 ? a : b).withLock('refresh:u:s', 5_000, async () => {
          active += 1;
          most = Math.max(most, active);
          await sleep(15);
          active -= 1;
          return i;
        }),
      );
      assert.deepEqual((await Promise.all(runs)).sort((x, y) => x - y), [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
      assert.equal(most, 1);
    } finally {
      await a.close();
      await b.close();
    }
  });

  test('a lock whose holder overruns its TTL is taken after the TTL; one held longer than a waiter waits is refused', async () => {
    const prefix = newPrefix();
    const [a, b] = [await open({ keyPrefix: prefix, commandTimeoutMs: 200 }), await open({ keyPrefix: prefix, commandTimeoutMs: 200 })];
    try {
      let release!: () => void;
      const stalled = a.withLock('l', 200, () => new Promise<void>((resolve) => (release = resolve)));
      await sleep(20);
      const started = Date.now();
      await b.withLock('l', 200, async () => undefined);
      const waited = Date.now() - started;
      assert.ok(waited >= 100 && waited < 600, `waited ${waited} ms for a lock of 200 ms`);
      release();
      await stalled;
      const long = a.withLock('m', 5_000, () => sleep(500));
      await sleep(20);
      const refusedAt = Date.now();
      await assert.rejects(b.withLock('m', 100, async () => 'never'), TokenStoreUnavailableError);
      assert.ok(Date.now() - refusedAt < 800, 'refused after about the TTL and the command timeout');
      await long;
    } finally {
      await a.close();
      await b.close();
    }
  });

  test('stores with other prefixes do not see each other', async () => {
    const [a, b] = [await open(), await open()];
    try {
      await a.set('conn:x', 'a');
      assert.equal(await b.get('conn:x'), undefined);
      assert.deepEqual(await b.keys('', 10), []);
      assert.deepEqual(await a.keys('', 10), ['conn:x']);
    } finally {
      await a.close();
      await b.close();
    }
  });

  test('a URL that is not Redis is refused at start-up, naming the setting and not repeating the URL', async () => {
    await assert.rejects(createRedisTokenStore({ url: 'http://:hunter2@cache:6379' }), (error: unknown) => {
      assert.ok(error instanceof ConfigurationError);
      assert.match(error.message, /^MCP_AUTH_REDIS_URL: /);
      assert.ok(!error.message.includes('hunter2'));
      return true;
    });
  });

  // Last: it stops and restarts the shared server.
  test('Redis stopped or frozen: TokenStoreUnavailableError within the command timeout, one warning, then service again', async () => {
    const warnings: string[] = [];
    const reasons: (string | undefined)[] = [];
    const store = await open({
      commandTimeoutMs: 300,
      onWarning: (m, reason) => {
        warnings.push(m);
        reasons.push(reason);
      },
    });
    try {
      await store.set('conn:k', 'v');
      redis!.pause();
      let started = Date.now();
      await assert.rejects(store.get('conn:k'), TokenStoreUnavailableError);
      assert.ok(Date.now() - started < 1_500, `a frozen Redis answered in ${Date.now() - started} ms`);
      redis!.resume();
      await redis!.stop();
      for (const attempt of [() => store.get('conn:k'), () => store.set('conn:k', 'w'), () => store.compareAndSet('conn:k', 'v', 'w'), () => store.take('conn:k'), () => store.keys('', 5), () => store.withLock('l', 1_000, async () => 1)]) {
        started = Date.now();
        await assert.rejects(attempt(), TokenStoreUnavailableError);
        assert.ok(Date.now() - started < 1_000, `failed in ${Date.now() - started} ms`);
      }
      assert.equal(warnings.length, 1, warnings.join('\n'));
      assert.match(warnings[0]!, /^the token store \(Redis\) is unavailable/);
      // A short reason of the gateway's words, never the client library's sentence.
      assert.match(reasons[0]!, /^(timed out|connection refused|not connected|connection reset)$/);
      await assert.rejects(store.get('conn:k'), (error: Error) => /^the token store is unavailable \(Redis: [a-z ]+\)$/.test(error.message));
      await redis!.start();
      const deadline = Date.now() + 5_000;
      let value: string | undefined | Error;
      do {
        await sleep(100);
        value = await store.get('conn:k').catch((error: Error) => error);
      } while (value instanceof Error && Date.now() < deadline);
      assert.equal(value, undefined, 'the restarted Redis is empty, and answers');
      assert.match(warnings.at(-1)!, /is back/);
    } finally {
      await store.close();
    }
  });
});
