// What every TokenStore does alike, run against each kind (memory, directory, Redis) by its own test file: values
// and TTLs, compare-and-set and take under many concurrent callers (exactly one wins), keys by prefix and limit,
// locks that exclude, and bounds refused with TokenStoreFullError.
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, describe, test } from 'node:test';
import { TokenStoreFullError, TokenStoreShareExceededError, type TokenStore } from '../../../../src/gateway/connected/store/token-store.js';

/** The bounds a store of the suite is opened with. */
export interface StoreBounds {
  readonly maxEntries: number;
  readonly maxEphemeralEntries?: number;
  readonly maxEphemeralEntriesPerOwner?: number;
}

/** How a test file gives the suite its stores. */
export interface ConformanceSubject {
  /**
   * A new, empty store holding at most `maxEntries` entries where the kind bounds entries, and refusing a value
   * of 20 KiB (directory and Redis: the default 16 KiB per value; memory: 32 KiB in all).
   */
  open(bounds: StoreBounds): Promise<TokenStore>;
  /** Whether the kind bounds its number of entries (Redis leaves that to its `maxmemory`). */
  boundsEntries: boolean;
  /** Why the suite cannot run here, or false. */
  skip: string | false;
}

const WRITERS = 24;

/** Runs the shared suite as `describe(name)`. */
export function describeTokenStoreConformance(name: string, subject: ConformanceSubject): void {
  describe(`${name}: the TokenStore contract`, { skip: subject.skip, timeout: 20_000 }, () => {
    const opened: TokenStore[] = [];
    const open = async (maxEntries = 1000, more: Omit<StoreBounds, 'maxEntries'> = {}): Promise<TokenStore> => {
      const store = await subject.open({ maxEntries, ...more });
      opened.push(store);
      return store;
    };
    after(async () => {
      for (const store of opened) await store.close();
    });

    test('set, get, overwrite, delete', async () => {
      const store = await open();
      assert.equal(await store.get('conn:a:notes'), undefined);
      await store.set('conn:a:notes', 'sealed-1');
      assert.equal(await store.get('conn:a:notes'), 'sealed-1');
      await store.set('conn:a:notes', 'sealed-2');
      assert.equal(await store.get('conn:a:notes'), 'sealed-2');
      assert.equal(await store.delete('conn:a:notes'), true);
      assert.equal(await store.delete('conn:a:notes'), false);
      assert.equal(await store.get('conn:a:notes'), undefined);
    });

    test('an entry with a TTL is gone once it passes, one without stays', async () => {
      const store = await open();
      await store.set('ticket:short', 'v', 150);
      await store.set('ticket:long', 'w');
      await store.compareAndSet('flow:short', undefined, 'x', 150);
      assert.equal(await store.get('ticket:short'), 'v');
      assert.deepEqual((await store.keys('ticket:', 10)).sort(), ['ticket:long', 'ticket:short']);
      await sleep(300);
      assert.equal(await store.get('ticket:short'), undefined);
      assert.equal(await store.get('flow:short'), undefined);
      assert.equal(await store.take('flow:short'), undefined);
      assert.equal(await store.get('ticket:long'), 'w');
      assert.deepEqual(await store.keys('ticket:', 10), ['ticket:long']);
      assert.equal(await store.compareAndSet('ticket:short', undefined, 'again'), true, 'an expired entry is absent to compare-and-set');
    });

    test('compareAndSet writes only over the expected value (undefined: absent)', async () => {
      const store = await open();
      assert.equal(await store.compareAndSet('conn:b:x', undefined, 'one'), true);
      assert.equal(await store.compareAndSet('conn:b:x', undefined, 'two'), false);
      assert.equal(await store.compareAndSet('conn:b:x', 'not-it', 'two'), false);
      assert.equal(await store.get('conn:b:x'), 'one');
      assert.equal(await store.compareAndSet('conn:b:x', 'one', 'two'), true);
      assert.equal(await store.get('conn:b:x'), 'two');
    });

    test(`${WRITERS} concurrent compare-and-sets from one value: exactly one wins, and its value is kept`, async () => {
      const store = await open();
      await store.set('conn:race', 'rotated-0');
      const results = await Promise.all(Array.from({ length: WRITERS }, (_, i) => store.compareAndSet('conn:race', 'rotated-0', `rotated-${i + 1}`)));
      const winners = results.flatMap((won, i) => (won ? [i] : []));
      assert.equal(winners.length, 1, `winners: ${winners.join(', ')}`);
      assert.equal(await store.get('conn:race'), `rotated-${winners[0]! + 1}`);
      const fromAbsent = await Promise.all(Array.from({ length: WRITERS }, (_, i) => store.compareAndSet('client:new', undefined, `c${i}`)));
      assert.equal(fromAbsent.filter(Boolean).length, 1);
    });

    test(`take is one-time: of ${WRITERS} concurrent takes one gets the value`, async () => {
      const store = await open();
      assert.equal(await store.take('flow:none'), undefined);
      await store.set('flow:state', 'pending', 60_000);
      const taken = await Promise.all(Array.from({ length: WRITERS }, () => store.take('flow:state')));
      assert.deepEqual(taken.filter((v) => v !== undefined), ['pending']);
      assert.equal(await store.get('flow:state'), undefined);
    });

    test('keys: by prefix (glob characters literal), at most limit', async () => {
      const store = await open();
      for (const key of ['conn:alice:a', 'conn:alice:b', 'conn:alice:c', 'conn:bob:a', 'client:x', 'k*[x]:1', 'kA]:1', 'k\\:1']) await store.set(key, 'v');
      assert.deepEqual((await store.keys('conn:alice:', 10)).sort(), ['conn:alice:a', 'conn:alice:b', 'conn:alice:c']);
      const two = await store.keys('conn:', 2);
      assert.equal(two.length, 2);
      for (const key of two) assert.ok(key.startsWith('conn:'), key);
      assert.deepEqual(await store.keys('nothing:', 10), []);
      assert.deepEqual(await store.keys('conn:', 0), []);
      assert.deepEqual(await store.keys('k*[x]:', 10), ['k*[x]:1']);
      assert.deepEqual(await store.keys('k\\', 10), ['k\\:1']);
    });

    test('withLock: holders of one name never overlap, other names do not wait, and a failing holder releases', async () => {
      const store = await open();
      let active = 0;
      let most = 0;
      const order: number[] = [];
      const holders = Array.from({ length: 8 }, (_, i) =>
        store.withLock('lock:alice:notes', 5_000, async () => {
          active += 1;
          most = Math.max(most, active);
          await sleep(10);
          order.push(i);
          active -= 1;
          return i;
        }),
      );
      const other = store.withLock('lock:bob:notes', 5_000, async () => active);
      assert.deepEqual(await Promise.all(holders), [0, 1, 2, 3, 4, 5, 6, 7]);
      assert.equal(most, 1);
      assert.equal(order.length, 8);
      assert.ok((await other) <= 1);
      await assert.rejects(store.withLock('lock:x', 5_000, () => Promise.reject(new Error('work failed'))), /work failed/);
      const started = Date.now();
      assert.equal(await store.withLock('lock:x', 5_000, async () => 'next'), 'next');
      assert.ok(Date.now() - started < 1_000, 'the lock was released when the work failed');
    });

    test('bounds: a value over the bound is refused with TokenStoreFullError', async () => {
      const store = await open();
      const big = 'x'.repeat(20 * 1024);
      await assert.rejects(store.set('conn:big', big), TokenStoreFullError);
      await assert.rejects(store.compareAndSet('conn:big', undefined, big), TokenStoreFullError);
      assert.equal(await store.get('conn:big'), undefined);
    });

    test('shares: once half the ephemeral entries are held, one owner past its share is refused (429-style), others are served', async () => {
      // 10 ephemeral entries, a share of 2: shares hold from 5 entries on.
      const store = await open(1000, { maxEphemeralEntries: 10, maxEphemeralEntriesPerOwner: 2 });
      for (let i = 0; i < 5; i += 1) await store.set(`ticket:a${i}`, 'v', 60_000, 'owner-a');
      const refused = await store.set('ticket:a5', 'v', 60_000, 'owner-a').then(
        () => assert.fail('the sixth entry of one owner was written'),
        (error: unknown) => error,
      );
      assert.ok(refused instanceof TokenStoreShareExceededError, String(refused));
      assert.equal(refused.maxPerOwner, 2);
      assert.ok(refused.retryAfterMs! > 0 && refused.retryAfterMs! <= 60_000, `Retry-After ${refused.retryAfterMs} ms is until the oldest entry expires`);
      await assert.rejects(store.compareAndSet('flow:a6', undefined, 'v', 60_000, 'owner-a'), TokenStoreShareExceededError);
      // Every other owner is served within its share; an entry of no owner counts only against the bound.
      await store.set('ticket:b0', 'v', 60_000, 'owner-b');
      await store.compareAndSet('ticket:b1', undefined, 'v', 60_000, 'owner-b');
      await assert.rejects(store.set('ticket:b2', 'v', 60_000, 'owner-b'), TokenStoreShareExceededError);
      await store.set('login:x', 'v', 60_000);
      // An owner's existing entry is still rewritten; its deleted and taken ones give it room again.
      await store.set('ticket:a0', 'again', 60_000, 'owner-a');
      assert.equal(await store.get('ticket:a0'), 'again');
      for (const key of ['ticket:a0', 'ticket:a1', 'ticket:a2']) assert.equal(await store.delete(key), true);
      assert.equal(await store.take('ticket:a3'), 'v');
      await store.set('ticket:a7', 'v', 60_000, 'owner-a');
      assert.equal(await store.get('ticket:a7'), 'v');
      // A durable entry is never counted against a share.
      await store.set('conn:owner-a:notes', 'v', undefined, 'owner-a');
    });

    // Only for the kinds that count their entries: Redis leaves that to its maxmemory (a test always skipped there
    // would only hide in the report).
    if (subject.boundsEntries) test('bounds: past its most entries a new key is refused, an existing one still written', async () => {
      const store = await open(5);
      for (let i = 0; i < 5; i += 1) await store.set(`conn:${i}`, 'v');
      await assert.rejects(store.set('conn:5', 'v'), TokenStoreFullError);
      await assert.rejects(store.compareAndSet('conn:5', undefined, 'v'), TokenStoreFullError);
      await store.set('conn:0', 'changed');
      assert.equal(await store.get('conn:0'), 'changed');
      assert.equal(await store.delete('conn:1'), true);
      await store.set('conn:5', 'v');
      assert.equal(await store.get('conn:5'), 'v');
    });
  });
}
