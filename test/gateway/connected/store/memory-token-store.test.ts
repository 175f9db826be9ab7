// The memory store meets the shared TokenStore contract (see token-store-conformance.ts).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { TokenStoreFullError } from '../../../../src/gateway/connected/store/token-store.js';
import { createMemoryTokenStore } from '../../../../src/gateway/connected/store/memory-token-store.js';
import { describeTokenStoreConformance } from './token-store-conformance.js';

describeTokenStoreConformance('memory store', {
  open: (bounds) => Promise.resolve(createMemoryTokenStore({ ...bounds, maxBytes: 32 * 1024 })),
  boundsEntries: true,
  skip: false,
});

describe('memory store: ephemeral entries', () => {
  test('are bounded apart: a flood of tickets leaves the room of connections, and expired ones make room', async () => {
    const store = createMemoryTokenStore({ maxEntries: 2, maxEphemeralEntries: 2 });
    await store.set('ticket:a', 'v', 60_000);
    await store.set('login:a', 'v', 50);
    await assert.rejects(store.set('bind:a', 'v', 60_000), TokenStoreFullError);
    await store.set('conn:alice:notes', 'v');
    await store.set('client:as', 'v');
    await assert.rejects(store.set('conn:bob:notes', 'v'), TokenStoreFullError, 'connections have their own bound');
    await new Promise((resolve) => setTimeout(resolve, 80));
    await store.set('bind:a', 'v', 60_000);
    assert.deepEqual((await store.keys('', 10)).sort(), ['bind:a', 'client:as', 'conn:alice:notes', 'ticket:a']);
    await store.close();
  });
});
