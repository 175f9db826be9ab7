// A kept list longer than one store value is kept in chunks: a list of 300 tools with schemas of about 1 KB each is
// kept whole and read whole by another process after a restart on the same directory store; a change replaces it and
// leaves no chunk of an older list (the store's keys counted, strays of a crashed write swept); a reader racing a
// writer (writes paused, or its own reads paused) sees one list whole, never a mix; a list past the bound is cut, said
// once in the log.
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { parseSessionSecret } from '../../../src/core/session/session-seal.js';
import { keptChunkedRecords, MAX_KEPT_CHUNK_BYTES, mostKeptChunks } from '../../../src/gateway/connected/kept-chunked-records.js';
import { KEPT_RECORDS_UNCHANGED } from '../../../src/gateway/connected/kept-store-value.js';
import { keptListKey, keptUpstreamLists, MAX_KEPT_LIST_BYTES } from '../../../src/gateway/connected/kept-upstream-lists.js';
import { createDirectoryTokenStore } from '../../../src/gateway/connected/store/directory-token-store.js';
import { createMemoryTokenStore } from '../../../src/gateway/connected/store/memory-token-store.js';
import { createRecordSealer } from '../../../src/gateway/connected/store/record-sealer.js';
import { DEFAULT_TOKEN_STORE_MAX_VALUE_BYTES } from '../../../src/gateway/connected/store/token-store-limits.js';
import type { TokenStore } from '../../../src/gateway/connected/store/token-store.js';
import { STORE_KEY } from '../../helpers/connected-accounts.js';

const sealer = createRecordSealer(parseSessionSecret(STORE_KEY, 'MCP_AUTH_TOKEN_STORE_SECRET'));
const KEY = keptListKey('notes', 'tools/list');

/** `count` tools named `<tag>_<i>`, each with an input schema of about 1 KB (quotes and a non-ASCII letter too). */
function bigTools(count: number, tag: string): { name: string; description: string; inputSchema: object }[] {
  return Array.from({ length: count }, (_, i) => {
    const properties = Object.fromEntries(Array.from({ length: 8 }, (_, p) => [`field_${p}`, { type: 'string', description: `The "${tag}" field ${p} of tool ${i}: é ${'x'.repeat(80)}` }]));
    return { name: `${tag}_${i}`, description: `Tool ${i} of ${tag}.`, inputSchema: { type: 'object', properties, required: ['field_0'] } };
  });
}

/** The chunk keys under `key`, and the one generation they belong to (asserted). */
async function chunkKeys(store: TokenStore, key = KEY): Promise<string[]> {
  const keys = (await store.keys(`${key}:`, 10_000)).sort((a, b) => Number(a.split(':').pop()) - Number(b.split(':').pop()));
  assert.equal(new Set(keys.map((name) => name.split(':').at(-2))).size, keys.length > 0 ? 1 : 0, `one generation: ${keys.join(' ')}`);
  assert.deepEqual(keys.map((name) => Number(name.split(':').pop())), keys.map((_, i) => i), 'chunks 0 to n-1');
  return keys;
}

/** A store whose gets or sets can be held at a gate, and let through one at a time. */
function gatedStore(inner: TokenStore) {
  let gate: ((op: 'get' | 'set', key: string) => boolean) | undefined;
  const waiting: (() => void)[] = [];
  const pass = async (op: 'get' | 'set', key: string): Promise<void> => {
    if (gate?.(op, key)) await new Promise<void>((resolve) => waiting.push(resolve));
  };
  const store: TokenStore = {
    get: async (key) => (await pass('get', key), inner.get(key)),
    set: async (key, value, ttl) => (await pass('set', key), inner.set(key, value, ttl)),
    compareAndSet: (key, expected, next, ttl) => inner.compareAndSet(key, expected, next, ttl),
    delete: (key) => inner.delete(key),
    take: (key) => inner.take(key),
    keys: (prefix, limit) => inner.keys(prefix, limit),
    withLock: (name, ttl, work) => inner.withLock(name, ttl, work),
    close: () => inner.close(),
  };
  return {
    store,
    hold: (which: typeof gate) => void (gate = which),
    held: () => waiting.length,
    letOne: () => waiting.shift()?.(),
    letAll: () => {
      gate = undefined;
      for (const resolve of waiting.splice(0)) resolve();
    },
  };
}

/** Resolves once `done()` is true, within 5 s. */
async function until(done: () => boolean): Promise<void> {
  for (const start = Date.now(); !done(); ) {
    assert.ok(Date.now() - start < 5_000, 'waited 5 s');
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
}

describe('a kept list in chunks', { timeout: 60_000 }, () => {
  const directories: string[] = [];
  after(() => {
    for (const directory of directories) rmSync(directory, { recursive: true, force: true });
  });

  it('300 tools of about 1 KB each are kept whole, sealed, and read whole after a restart on the same directory', async () => {
    const directory = mkdtempSync(join(tmpdir(), 'guard-kept-chunks-'));
    directories.push(directory);
    const tools = bigTools(300, 'vendor');
    assert.ok(JSON.stringify(tools).length > 300_000, 'about 1 KB a tool');
    const first = await createDirectoryTokenStore({ directory });
    const lines: string[] = [];
    await keptUpstreamLists({ store: first, sealer, server: 'notes', log: (line) => lines.push(line) }).learnt('tools/list', { tools });
    const chunks = await chunkKeys(first);
    assert.ok(chunks.length >= 30 && chunks.length <= mostKeptChunks(MAX_KEPT_LIST_BYTES), String(chunks.length));
    assert.deepEqual(lines, [], 'nothing cut');
    await first.close();
    for (const file of readdirSync(directory)) assert.doesNotMatch(readFileSync(join(directory, file), 'utf8'), /vendor|field_/, 'sealed at rest');

    const restarted = await createDirectoryTokenStore({ directory });
    assert.deepEqual(await keptUpstreamLists({ store: restarted, sealer, server: 'notes' }).read('tools/list'), tools);
    await restarted.close();
  });

  it('a change replaces the list and leaves no chunk of the older one; a later process sweeps the strays of a crashed write', async () => {
    const store = createMemoryTokenStore();
    const kept = keptUpstreamLists({ store, sealer, server: 'notes', now: () => 0 });
    await kept.learnt('tools/list', { tools: bigTools(300, 'a') });
    const first = await chunkKeys(store);
    assert.equal((await store.keys('', 10_000)).length, first.length + 1, 'the head and its chunks');

    await kept.learnt('tools/list', { tools: bigTools(120, 'b') });
    const second = await chunkKeys(store);
    assert.ok(second.length < first.length && second.every((name) => !first.includes(name)), 'a new generation, the older one gone');
    assert.equal((await store.keys('', 10_000)).length, second.length + 1);
    assert.deepEqual(await keptUpstreamLists({ store, sealer, server: 'notes' }).read('tools/list'), bigTools(120, 'b'));
    await kept.learnt('tools/list', { tools: bigTools(120, 'b') });
    assert.deepEqual(await chunkKeys(store), second, 'the same list is not written again');

    // A write that stopped before its head (a crash): chunks no head names.
    for (let i = 0; i < 3; i++) await store.set(`${KEY}:crashedGen:${i}`, await sealer.seal(`${KEY}:crashedGen:${i}`, { part: 'x' }));
    const restarted = keptUpstreamLists({ store, sealer, server: 'notes' });
    await restarted.learnt('tools/list', { tools: bigTools(10, 'c') });
    const third = await chunkKeys(store);
    assert.equal((await store.keys('', 10_000)).length, third.length + 1, 'strays and the older list swept');
    assert.deepEqual(await keptUpstreamLists({ store, sealer, server: 'notes' }).read('tools/list'), bigTools(10, 'c'));
  });

  it('a reader racing a paused writer reads the older list whole until the head moves, then the new one whole', async () => {
    const gated = gatedStore(createMemoryTokenStore());
    const [older, newer] = [{ items: bigTools(200, 'old') }, { items: bigTools(150, 'new') }];
    const writer = keptChunkedRecords({ store: gated.store, sealer, key: KEY, maxBytes: MAX_KEPT_LIST_BYTES });
    await writer.write(older, JSON.stringify(older));
    gated.hold((op) => op === 'set');
    let written = false;
    const writing = writer.write(newer, JSON.stringify(newer)).then(() => void (written = true));
    const seen: string[] = [];
    while (!written) {
      await until(() => written || gated.held() > 0);
      const read = await keptChunkedRecords({ store: gated.store, sealer, key: KEY, maxBytes: MAX_KEPT_LIST_BYTES }).read();
      if (JSON.stringify(read) === JSON.stringify(older)) seen.push('older');
      else assert.deepEqual(read, newer, 'one list whole, never a mix');
      if (JSON.stringify(read) === JSON.stringify(newer)) seen.push('newer');
      gated.letOne();
    }
    await writing;
    assert.ok(seen.filter((list) => list === 'older').length >= 10, 'the older list while the chunks were written');
    assert.deepEqual(await keptChunkedRecords({ store: gated.store, sealer, key: KEY, maxBytes: MAX_KEPT_LIST_BYTES }).read(), newer);
    assert.equal(await writer.read(), KEPT_RECORDS_UNCHANGED, 'the writer knows its own head');
  });

  it('a reader paused between the head and its chunks, while a writer replaces them, reads the new list whole', async () => {
    const gated = gatedStore(createMemoryTokenStore());
    const [older, newer] = [{ items: bigTools(200, 'old') }, { items: bigTools(150, 'new') }];
    const writer = keptChunkedRecords({ store: gated.store, sealer, key: KEY, maxBytes: MAX_KEPT_LIST_BYTES });
    await writer.write(older, JSON.stringify(older));
    const reader = keptChunkedRecords({ store: gated.store, sealer, key: KEY, maxBytes: MAX_KEPT_LIST_BYTES });
    // The reader read the head of the older list, and waits for the chunks after its first batch.
    let gets = 0;
    gated.hold((op, key) => op === 'get' && key.startsWith(`${KEY}:`) && ++gets > 8);
    const reading = reader.read();
    await until(() => gated.held() > 0);
    const chunksBefore = await chunkKeys(gated.store);
    gated.hold(undefined);
    await writer.write(newer, JSON.stringify(newer));
    assert.ok((await chunkKeys(gated.store)).every((name) => !chunksBefore.includes(name)), 'the older chunks are gone');
    gated.letAll();
    assert.deepEqual(await reading, newer);
  });

  it('a list past the bound keeps what fits, says so once in the log, and every record fits a store value', async () => {
    const store = createMemoryTokenStore();
    const lines: string[] = [];
    const kept = keptUpstreamLists({ store, sealer, server: 'notes', log: (line) => lines.push(line), now: () => 0 });
    const tools = bigTools(1400, 'long');
    await kept.learnt('tools/list', { tools });
    await kept.learnt('tools/list', { tools: [...tools, { name: 'more', inputSchema: {} }] });
    const items = (await keptUpstreamLists({ store, sealer, server: 'notes' }).read('tools/list'))!;
    assert.ok(items.length > 600 && items.length < 1400, String(items.length));
    assert.deepEqual(items, tools.slice(0, items.length), 'a prefix, in the upstream order');
    assert.ok(JSON.stringify({ items }).length <= MAX_KEPT_LIST_BYTES);
    assert.equal(lines.length, 1, lines.join('\n'));
    assert.match(lines[0]!, /"connected_list_cut".*"list":"tools\/list","listed":1400,"kept":\d+,"paged":false,"maxBytes":1048576/);
    for (const key of await store.keys('', 10_000)) assert.ok((await store.get(key))!.length <= DEFAULT_TOKEN_STORE_MAX_VALUE_BYTES, key);
    const largest = `${KEY}:g:0`;
    assert.ok((await sealer.seal(largest, { part: 'y'.repeat(MAX_KEPT_CHUNK_BYTES - 11) })).length <= DEFAULT_TOKEN_STORE_MAX_VALUE_BYTES);
  });

  it('a head naming a chunk that does not open, or other chunks than written, reads as none', async () => {
    const store = createMemoryTokenStore();
    const value = { items: bigTools(30, 't') };
    await keptChunkedRecords({ store, sealer, key: KEY, maxBytes: MAX_KEPT_LIST_BYTES }).write(value, JSON.stringify(value));
    const [firstChunk, secondChunk] = await chunkKeys(store);
    const fresh = () => keptChunkedRecords({ store, sealer, key: KEY, maxBytes: MAX_KEPT_LIST_BYTES }).read();
    assert.deepEqual(await fresh(), value);
    const second = (await store.get(secondChunk!))!;
    await store.set(secondChunk!, (await store.get(firstChunk!))!);
    assert.equal(await fresh(), undefined, 'a chunk sealed for another key');
    await store.set(secondChunk!, await sealer.seal(secondChunk!, { part: 'x' }));
    assert.equal(await fresh(), undefined, 'the digest of the whole differs');
    await store.set(secondChunk!, second);
    assert.deepEqual(await fresh(), value);
  });
});
