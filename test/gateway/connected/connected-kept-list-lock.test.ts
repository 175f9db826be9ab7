// The write lock of a kept list in chunks: as long as the writes under it can take on the store (a slow store gets a
// longer lock, a list of many chunks too), and a writer whose lock ran out while it wrote (a second writer went
// ahead) leaves the second's list whole and removes its own chunks, so that no generation is left that no head names.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseSessionSecret } from '../../../src/core/session/session-seal.js';
import { keptChunkedRecords, keptWriteLockTtlMs, mostKeptChunks } from '../../../src/gateway/connected/kept-chunked-records.js';
import { keptListKey, MAX_KEPT_LIST_BYTES } from '../../../src/gateway/connected/kept-upstream-lists.js';
import { createMemoryTokenStore } from '../../../src/gateway/connected/store/memory-token-store.js';
import { createRecordSealer } from '../../../src/gateway/connected/store/record-sealer.js';
import type { TokenStore } from '../../../src/gateway/connected/store/token-store.js';
import { STORE_KEY } from '../../helpers/connected-accounts.js';

const sealer = createRecordSealer(parseSessionSecret(STORE_KEY, 'MCP_AUTH_TOKEN_STORE_SECRET'));
const KEY = keptListKey('notes', 'tools/list');

/** A list of `count` items of about 1 KB each. */
function bigList(count: number, tag: string): { items: { name: string; text: string }[] } {
  return { items: Array.from({ length: count }, (_, i) => ({ name: `${tag}_${i}`, text: `"${tag}" ${'y'.repeat(1000)}` })) };
}

/**
 * `inner` with every set taking `setDelayMs`, saying its commands wait at most `commandTimeoutMs`, and its locks
 * held at most `lockMs` whatever the caller asks (the lock a slow store's writer outran); records the TTLs asked.
 */
function slowStore(inner: TokenStore, options: { setDelayMs: number; commandTimeoutMs?: number; lockMs?: number }) {
  const asked: number[] = [];
  const store: TokenStore = {
    get: (key) => inner.get(key),
    set: async (key, value, ttl) => {
      await new Promise((resolve) => setTimeout(resolve, options.setDelayMs));
      await inner.set(key, value, ttl);
    },
    compareAndSet: async (key, expected, next, ttl) => {
      await new Promise((resolve) => setTimeout(resolve, options.setDelayMs));
      return inner.compareAndSet(key, expected, next, ttl);
    },
    delete: (key) => inner.delete(key),
    take: (key) => inner.take(key),
    keys: (prefix, limit) => inner.keys(prefix, limit),
    withLock: (name, ttl, work) => {
      asked.push(ttl);
      return inner.withLock(name, options.lockMs ?? ttl, work);
    },
    close: () => inner.close(),
    ...(options.commandTimeoutMs !== undefined ? { commandTimeoutMs: options.commandTimeoutMs } : {}),
  };
  return { store, asked };
}

/** Every generation of chunks under the key. */
async function generations(store: TokenStore): Promise<Set<string>> {
  return new Set((await store.keys(`${KEY}:`, 10_000)).map((name) => name.split(':').at(-2)!));
}

describe('the write lock of a kept list in chunks', { timeout: 30_000 }, () => {
  it('lasts as long as every command under it timing out on this store, for as many chunks as the list takes', async () => {
    const slow = slowStore(createMemoryTokenStore(), { setDelayMs: 5, commandTimeoutMs: 2_000 });
    const list = bigList(300, 'slow');
    const started = Date.now();
    await keptChunkedRecords({ store: slow.store, sealer, key: KEY, maxBytes: MAX_KEPT_LIST_BYTES }).write(list, JSON.stringify(list));
    const took = Date.now() - started;
    const chunks = (await slow.store.keys(`${KEY}:`, 10_000)).length;
    assert.ok(chunks >= 25, `${chunks} chunks`);
    assert.equal(slow.asked.length, 1);
    const ttl = slow.asked[0]!;
    assert.ok(ttl >= (chunks + 2) * 2_000, `a lock of ${ttl} ms covers ${chunks} chunk writes and the head of 2 s each`);
    assert.ok(ttl > took, 'longer than the write took');
    assert.equal(ttl, keptWriteLockTtlMs(chunks, mostKeptChunks(MAX_KEPT_LIST_BYTES), 2_000));
    // A store on this machine (no command timeout) still gets a lock that grows with the chunks.
    assert.ok(keptWriteLockTtlMs(187, 187) > keptWriteLockTtlMs(1, 187));
  });

  it('a writer that outran its lock while a second wrote leaves the second list whole, and no chunk of its own', async () => {
    const inner = createMemoryTokenStore();
    const initial = bigList(20, 'initial');
    await keptChunkedRecords({ store: inner, sealer, key: KEY, maxBytes: MAX_KEPT_LIST_BYTES }).write(initial, JSON.stringify(initial));
    // The first writer's store is slow, and its lock (as if too short for it) runs out after 50 ms.
    const slow = slowStore(inner, { setDelayMs: 100, lockMs: 50 });
    const fast = slowStore(inner, { setDelayMs: 0, lockMs: 50 });
    const [first, second] = [bigList(100, 'first'), bigList(60, 'second')];
    const firstWrite = keptChunkedRecords({ store: slow.store, sealer, key: KEY, maxBytes: MAX_KEPT_LIST_BYTES }).write(first, JSON.stringify(first));
    const firstEnded = firstWrite.then(() => 'written', () => 'refused');
    await new Promise((resolve) => setTimeout(resolve, 10));
    await keptChunkedRecords({ store: fast.store, sealer, key: KEY, maxBytes: MAX_KEPT_LIST_BYTES }).write(second, JSON.stringify(second));
    assert.equal(await firstEnded, 'refused', 'the first write is not kept over the second');
    assert.deepEqual(await keptChunkedRecords({ store: inner, sealer, key: KEY, maxBytes: MAX_KEPT_LIST_BYTES }).read(), second);
    assert.equal((await generations(inner)).size, 1, 'only the chunks the head names are left');
  });
});
