// One user's share of a Redis token store's short-lived entries: the used request states, connect tickets and
// pending flows one user writes are refused past its share (429 with Retry-After), while another user is served;
// and a store that is full is named as such, never as an authorization server that could not be reached.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import type { AuthInfo } from '../../../../src/core/kernel/auth-info.js';
import { parseSessionSecret } from '../../../../src/core/session/session-seal.js';
import { JsonRpcErrorCode, type JsonRpcRequest } from '../../../../src/core/wire/jsonrpc.js';
import { connectedCredentials } from '../../../../src/gateway/connected/flow/connected-credentials.js';
import { createRequestStates } from '../../../../src/gateway/connected/flow/request-state.js';
import { createStoreReplayCache } from '../../../../src/gateway/connected/flow/store-replay-cache.js';
import { createConnectTicket } from '../../../../src/gateway/connected/pages/connect-ticket.js';
import { createRecordSealer } from '../../../../src/gateway/connected/store/record-sealer.js';
import { createRedisTokenStore } from '../../../../src/gateway/connected/store/redis-token-store.js';
import { TokenStoreFullError, TokenStoreShareExceededError, type TokenStore } from '../../../../src/gateway/connected/store/token-store.js';
import { credentialFailure } from '../../../../src/gateway/upstream/http/exchange-failure.js';
import { REDIS_SERVER, removeTestRedis, startTestRedis, type TestRedis } from '../../../helpers/redis-server.js';

const skip = REDIS_SERVER === undefined ? 'redis-server is not installed (Debian package redis-server; CI installs it)' : false;
const user = (sub: string): AuthInfo => ({ token: 't', clientId: 'c', scopes: [], extra: { iss: 'https://id.example', sub, claims: {}, tokenType: 'jwt' } });
const alice = user('alice');
const bob = user('bob');
const call = (id: number): JsonRpcRequest => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'notes_add', arguments: { text: String(id) } } });
const sealer = createRecordSealer(parseSessionSecret(randomBytes(32).toString('base64url'), 'MCP_AUTH_TOKEN_STORE_SECRET'));

describe('one user cannot fill a Redis token store for every other', { skip, timeout: 20_000 }, () => {
  let redis: TestRedis | undefined;
  let stores = 0;
  const opened: TokenStore[] = [];
  // 10 short-lived entries in all, a share of 2 each once 5 are held.
  const open = async (keyPrefix = `shares:${(stores += 1)}:`): Promise<TokenStore> => {
    const store = await createRedisTokenStore({ url: redis!.url, keyPrefix, maxEphemeralEntries: 10, maxEphemeralEntriesPerOwner: 2, onWarning: () => {} });
    opened.push(store);
    return store;
  };
  before(async () => {
    redis = await startTestRedis();
  });
  after(async () => {
    for (const store of opened) await store.close();
    await removeTestRedis(redis);
  });

  it('used request states: past its share a user is told 429 with Retry-After (the state kept for then), another user is served', async () => {
    const secrets = [randomBytes(32)];
    // Two replicas on one Redis: the share is counted for the fleet.
    const stores = [await open('shares:states:'), await open('shares:states:')];
    const replicas = stores.map((store) => createRequestStates({ secrets, replayCache: createStoreReplayCache(store, sealer) }));
    for (let i = 0; i < 5; i += 1) {
      const state = replicas[i % 2]!.mint({ auth: alice, message: call(i), server: '' });
      assert.deepEqual(await replicas[(i + 1) % 2]!.verify(state, call(i), alice, ''), {}, `alice's retry ${i}`);
    }
    const sixth = replicas[0]!.mint({ auth: alice, message: call(6), server: '' });
    const busy = await replicas[1]!.verify(sixth, call(6), alice, '');
    assert.ok('busy' in busy && busy.retryAfterMs > 0 && busy.retryAfterMs <= 600_000, JSON.stringify(busy));
    const bobs = replicas[0]!.mint({ auth: bob, message: call(7), server: '' });
    assert.deepEqual(await replicas[1]!.verify(bobs, call(7), bob, ''), {}, 'bob is served while alice waits');

    // Through the connect flow, alice's retry is a 429 with Retry-After and the rate-limit code, not a refused state.
    const credentials = connectedCredentials({
      server: '',
      records: { get: async () => undefined, refresh: async () => undefined, end: async () => {}, clearStepUp: async () => {} },
      requestStates: replicas[0]!,
      createTicket: async () => new URL('https://gw.example/connect/t'),
    });
    const retry = { ...call(6), params: { ...call(6).params, requestState: sixth } };
    const answer = await credentials.flow!.prepare({ message: retry, auth: alice, sessionId: undefined });
    assert.equal(answer?.status, 429);
    assert.match(answer!.headers?.['Retry-After'] ?? '', /^[1-9][0-9]*$/);
    assert.equal((answer!.response as { error: { code: number } }).error.code, JsonRpcErrorCode.RateLimited);
  });

  it('connect tickets: past its share a user gets a 429 with Retry-After, another user still gets a link; a full store says so', async () => {
    const store = await open();
    const aliceRef = { issuer: 'https://id.example', subject: 'alice' };
    // A ticket is two entries (the ticket and its index); each scope asked for is a ticket of its own.
    let refused: unknown;
    for (let i = 0; i < 10 && refused === undefined; i += 1) {
      await createConnectTicket(store, sealer, { user: aliceRef, server: 'notes', scope: `s${i}` }).catch((error: unknown) => (refused = error));
    }
    assert.ok(refused instanceof TokenStoreShareExceededError, String(refused));
    const link = await createConnectTicket(store, sealer, { user: { issuer: 'https://id.example', subject: 'bob' }, server: 'notes' });
    assert.match(link, /^[A-Za-z0-9_-]{43}$/, 'bob gets his link');

    const tooMany = credentialFailure(refused);
    assert.equal(tooMany.status, 429);
    assert.match(tooMany.retryAfter ?? '', /^[1-9][0-9]*$/);
    assert.equal(tooMany.jsonRpcCode, JsonRpcErrorCode.RateLimited);
    assert.doesNotMatch(tooMany.message ?? '', /authorization server/);
    const full = credentialFailure(new TokenStoreFullError('10 ephemeral entries'));
    assert.equal(full.status, 503);
    assert.match(full.message ?? '', /token store is full/);
    assert.doesNotMatch(full.message ?? '', /authorization server/);
  });
});
