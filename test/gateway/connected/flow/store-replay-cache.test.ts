// Request-state nonces claimed in the token store: two replicas sharing one store refuse a state the other used.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import type { AuthInfo } from '../../../../src/core/kernel/auth-info.js';
import { parseSessionSecret } from '../../../../src/core/session/session-seal.js';
import type { JsonRpcRequest } from '../../../../src/core/wire/jsonrpc.js';
import { createRequestStates } from '../../../../src/gateway/connected/flow/request-state.js';
import { createStoreReplayCache, REQUEST_STATE_NONCE_PREFIX } from '../../../../src/gateway/connected/flow/store-replay-cache.js';
import { createMemoryTokenStore } from '../../../../src/gateway/connected/store/memory-token-store.js';
import { createRecordSealer } from '../../../../src/gateway/connected/store/record-sealer.js';

const alice: AuthInfo = { token: 't', clientId: 'c', scopes: [], extra: { iss: 'https://id.example', sub: 'alice', claims: {}, tokenType: 'jwt' } };
const call: JsonRpcRequest = { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'notes_add', arguments: { text: 'a' } } };

describe('request-state nonces in the token store', () => {
  const store = createMemoryTokenStore();
  const sealer = createRecordSealer(parseSessionSecret(randomBytes(32).toString('base64url'), 'MCP_AUTH_TOKEN_STORE_SECRET'));
  const secrets = [randomBytes(32)];

  it('a state used on one replica is refused as replayed on another sharing the store', async () => {
    const replica1 = createRequestStates({ secrets, replayCache: createStoreReplayCache(store, sealer) });
    const replica2 = createRequestStates({ secrets, replayCache: createStoreReplayCache(store, sealer) });
    const state = replica2.mint({ auth: alice, message: call, server: '' });
    assert.deepEqual(await replica1.verify(state, call, alice, ''), {});
    assert.deepEqual(await replica2.verify(state, call, alice, ''), { refused: 'replayed' });
    const kept = await store.keys(REQUEST_STATE_NONCE_PREFIX, 10);
    assert.equal(kept.length, 1);
    assert.doesNotMatch((await store.get(kept[0]!))!, /alice/, 'the claim is sealed and names nobody');
  });

  it('claims atomically, and refuses a claim past its expiry or an oversized nonce unwritten', async () => {
    const cache = createStoreReplayCache(store, sealer);
    const results = await Promise.all(Array.from({ length: 5 }, () => cache.claim('same-nonce', Date.now() + 60_000)));
    assert.deepEqual(results.filter(Boolean).length, 1, 'one of five concurrent claims wins');
    const before = (await store.keys(REQUEST_STATE_NONCE_PREFIX, 100)).length;
    assert.equal(await cache.claim('late-nonce', Date.now() - 1), false);
    assert.equal(await cache.claim('x'.repeat(65), Date.now() + 60_000), false);
    assert.equal((await store.keys(REQUEST_STATE_NONCE_PREFIX, 100)).length, before);
  });

  it('a store that cannot answer refuses the state, never accepts it', async () => {
    const broken = { ...store, compareAndSet: () => Promise.reject(new Error('unreachable')) };
    const states = createRequestStates({ secrets, replayCache: createStoreReplayCache(broken, sealer) });
    const state = states.mint({ auth: alice, message: call, server: '' });
    assert.deepEqual(await states.verify(state, call, alice, ''), { refused: 'replayed' });
  });
});
