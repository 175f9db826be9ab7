// Opened records in memory in front of a store and its sealer: opened once (concurrent first reads included), then
// served from memory; writes through the cache are seen at once, another writer's within the revalidation time;
// bounded in bytes whatever the keys; never past a record's own expiry; values frozen. Stores and sealers are
// real ones wrapped to count their calls.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, test } from 'node:test';
import { parseSessionSecret } from '../../../../src/core/session/session-seal.js';
import { createCachedRecords, type CachedRecordsOptions } from '../../../../src/gateway/connected/store/cached-token-store.js';
import { createMemoryTokenStore } from '../../../../src/gateway/connected/store/memory-token-store.js';
import { createRecordSealer, type RecordSealer } from '../../../../src/gateway/connected/store/record-sealer.js';
import type { TokenStore } from '../../../../src/gateway/connected/store/token-store.js';

interface Counted {
  store: TokenStore;
  sealer: RecordSealer;
  calls: { get: number; open: number };
  clock: { now: number };
}

function counted(): Counted {
  const clock = { now: Date.now() };
  const calls = { get: 0, open: 0 };
  const inner = createMemoryTokenStore();
  const sealer = createRecordSealer(parseSessionSecret(randomBytes(32).toString('base64url'), 'MCP_AUTH_TOKEN_STORE_SECRET'), { now: () => clock.now });
  return {
    store: { ...inner, get: (key) => ((calls.get += 1), inner.get(key)) },
    sealer: { seal: sealer.seal, open: (key, sealed) => ((calls.open += 1), sealer.open(key, sealed)) },
    calls,
    clock,
  };
}

const cachedOver = (parts: Counted, options: Partial<CachedRecordsOptions> = {}) =>
  createCachedRecords({ store: parts.store, sealer: parts.sealer, now: () => parts.clock.now, ...options });

describe('cached records', () => {
  test('a record is read and opened once, concurrent first reads included, then served from memory', async () => {
    const parts = counted();
    await parts.store.set('conn:a:s', await parts.sealer.seal('conn:a:s', { accessToken: 'at-1' }));
    const records = cachedOver(parts);
    const first = await Promise.all(Array.from({ length: 20 }, () => records.get<{ accessToken: string }>('conn:a:s')));
    for (const found of first) assert.equal(found?.value.accessToken, 'at-1');
    for (let i = 0; i < 100; i += 1) assert.equal((await records.get<{ accessToken: string }>('conn:a:s'))?.value.accessToken, 'at-1');
    assert.deepEqual(parts.calls, { get: 1, open: 1 });
    assert.equal(await records.get('conn:absent'), undefined);
  });

  test('writes through the cache are read back at once; compare-and-set needs the sealed text it read', async () => {
    const parts = counted();
    const records = cachedOver(parts);
    const written = await records.set('conn:a:s', { accessToken: 'at-1' });
    const read = await records.get<{ accessToken: string }>('conn:a:s');
    assert.equal(read?.value.accessToken, 'at-1');
    assert.equal(read?.sealed, written.sealed);
    const rotated = await records.compareAndSet('conn:a:s', read!.sealed, { accessToken: 'at-2' });
    assert.ok(rotated);
    assert.equal(await records.compareAndSet('conn:a:s', read!.sealed, { accessToken: 'at-3' }), undefined, 'a stale expected value loses');
    assert.equal((await records.get<{ accessToken: string }>('conn:a:s'))?.value.accessToken, 'at-2');
    assert.equal(await records.delete('conn:a:s'), true);
    assert.equal(await records.get('conn:a:s'), undefined);
    await records.set('flow:f', { verifier: 'v' }, 60_000);
    assert.deepEqual(await records.take('flow:f'), { verifier: 'v' });
    assert.equal(await records.take('flow:f'), undefined);
  });

  test("another writer's change is seen after the revalidation time, or at once through fresh(); an unchanged record is not opened again", async () => {
    const parts = counted();
    const records = cachedOver(parts, { revalidateAfterMs: 1_000 });
    await records.set('conn:a:s', { accessToken: 'at-1' });
    await records.get('conn:a:s');
    parts.clock.now += 1_500;
    assert.equal((await records.get<{ accessToken: string }>('conn:a:s'))?.value.accessToken, 'at-1');
    assert.equal(parts.calls.open, 1, 'revalidated by comparing the sealed text, not by opening it');
    await parts.store.set('conn:a:s', await parts.sealer.seal('conn:a:s', { accessToken: 'from-another-replica' }));
    assert.equal((await records.get<{ accessToken: string }>('conn:a:s'))?.value.accessToken, 'at-1', 'within the revalidation time');
    assert.equal((await records.fresh<{ accessToken: string }>('conn:a:s'))?.value.accessToken, 'from-another-replica');
    await parts.store.delete('conn:a:s');
    parts.clock.now += 1_500;
    assert.equal(await records.get('conn:a:s'), undefined, 'removed by another replica');
  });

  test('bounded in bytes, counting the keys: long keys hold fewer records', async () => {
    const parts = counted();
    const records = cachedOver(parts, { maxBytes: 8 * 1024 });
    const shortKeys = Array.from({ length: 4 }, (_, i) => `conn:${i}`);
    const longKeys = Array.from({ length: 4 }, (_, i) => `conn:${'k'.repeat(2000)}${i}`);
    for (const key of [...shortKeys, ...longKeys]) await parts.store.set(key, await parts.sealer.seal(key, { accessToken: 'at' }));
    const opensFor = async (keys: string[]): Promise<number> => {
      const before = parts.calls.open;
      for (let round = 0; round < 2; round += 1) for (const key of keys) assert.ok(await records.get(key));
      return parts.calls.open - before;
    };
    assert.equal(await opensFor(shortKeys), 4, 'four records with short keys fit');
    assert.ok((await opensFor(longKeys)) > 4, 'four records with 2 000-character keys do not');
  });

  test('never served past the sealed expiry; values are frozen', async () => {
    const parts = counted();
    const records = cachedOver(parts);
    await records.set('ticket:t', { server: 'notes', nested: { scope: 'a' } }, 5_000);
    const found = await records.get<{ server: string; nested: { scope: string } }>('ticket:t');
    assert.equal(found?.value.server, 'notes');
    assert.throws(() => ((found!.value as { server: string }).server = 'other'), TypeError);
    assert.throws(() => ((found!.value.nested as { scope: string }).scope = 'b'), TypeError);
    parts.clock.now += 6_000;
    assert.equal(await records.get('ticket:t'), undefined);
  });

  test('a record that does not open (another secret) is absent and not kept', async () => {
    const parts = counted();
    const other = createRecordSealer(parseSessionSecret(randomBytes(32).toString('base64url'), 'MCP_AUTH_TOKEN_STORE_SECRET'));
    await parts.store.set('conn:x', await other.seal('conn:x', { accessToken: 'at' }));
    const records = cachedOver(parts);
    assert.equal(await records.get('conn:x'), undefined);
    assert.equal(await records.get('conn:x'), undefined);
    assert.equal(parts.calls.open, 2);
  });
});
