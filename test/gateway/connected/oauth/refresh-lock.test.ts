// The lock a connection's refresh runs under lasts as long as all that can run under it: its time follows the
// upstream's request timeout, so that a slow authorization server never lets a second replica send the same
// rotated refresh token. Real oidc-provider, answering its token endpoint late on purpose.
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import type { Adapter } from 'oidc-provider';
import { REFRESH_LOCK_MARGIN_MS, REQUESTS_UNDER_REFRESH_LOCK, refreshLockTtlMs } from '../../../../src/gateway/connected/oauth/connection-refresh.js';
import { writeConnection } from '../../../../src/gateway/connected/oauth/sealed-connections.js';
import type { TokenStore } from '../../../../src/gateway/connected/store/token-store.js';
import { ALICE, connect, startOAuthSetup, type OAuthSetup } from './oauth-fixtures.js';

const CLIENT = { clientId: 'gateway-lock', clientSecret: 'gateway-lock-secret-value' };

describe('refreshLockTtlMs', () => {
  it('is every request under the lock timing out, plus the margin', () => {
    assert.equal(REQUESTS_UNDER_REFRESH_LOCK, 8);
    assert.equal(refreshLockTtlMs(5_000), 45_000);
    assert.equal(refreshLockTtlMs(120_000), 8 * 120_000 + REFRESH_LOCK_MARGIN_MS);
    assert.ok(refreshLockTtlMs(1_000) > 4 * 1_000, 'more than discovery, registration and the grant together');
  });
});

describe('the refresh lock follows the upstream timeout', { timeout: 30_000 }, () => {
  let setup: OAuthSetup;
  let tokenRequests = 0;
  let tokenDelayMs = 0;
  /** Lock times the store was asked for. */
  const lockTtls: number[] = [];
  let store: TokenStore;
  before(async () => {
    setup = await startOAuthSetup(({ redirectUri }) => ({ rotateRefreshTokens: true, clients: [{ ...CLIENT, redirectUris: [redirectUri] }] }));
    // A slow authorization server: a refresh grant's look-up of its refresh token answers `tokenDelayMs` late.
    const refreshTokens = (setup.as.provider as unknown as { RefreshToken: { adapter: Adapter } }).RefreshToken.adapter;
    const find = refreshTokens.find.bind(refreshTokens);
    refreshTokens.find = async (id) => (await sleep(tokenDelayMs), find(id));
    // Every request to the token endpoint ends in one of these two events.
    for (const event of ['grant.success', 'grant.error'] as const) setup.as.provider.on(event, () => void tokenRequests++);
    store = { ...setup.store, withLock: (name, ttlMs, work) => (lockTtls.push(ttlMs), setup.store.withLock(name, ttlMs, work)) };
  });
  after(() => setup.close());

  it('asks the store for a lock as long as a refresh and a revocation with a 40 s timeout can take', async () => {
    const authorization = setup.authorization({ ...CLIENT, store, timeoutMs: 40_000 });
    const { record } = await connect(authorization, setup);
    await writeConnection(store, setup.sealer, ALICE, '', record);
    assert.ok(await authorization.refresh(ALICE, '', record.accessToken));
    await authorization.revoke(ALICE, '');
    assert.deepEqual(lockTtls, [refreshLockTtlMs(40_000), refreshLockTtlMs(40_000)]);
    assert.ok(lockTtls[0]! > 40_000 * 7, 'longer than discovery, registration and the grant all timing out');
  });

  it('a token endpoint answering late, within a small timeout: two replicas send one refresh grant', async () => {
    const timeoutMs = 1_500;
    const replicaA = setup.authorization({ ...CLIENT, store, timeoutMs });
    const replicaB = setup.authorization({ ...CLIENT, store, timeoutMs });
    const { record } = await connect(replicaA, setup);
    await writeConnection(store, setup.sealer, ALICE, '', record);
    await replicaB.refresh(ALICE, '', 'warm-up: discovery and client, no grant');
    lockTtls.length = 0;
    tokenRequests = 0;
    tokenDelayMs = 1_000;
    const [a, b] = await Promise.all([replicaA.refresh(ALICE, '', record.accessToken), replicaB.refresh(ALICE, '', record.accessToken)]);
    assert.deepEqual(lockTtls, [refreshLockTtlMs(timeoutMs), refreshLockTtlMs(timeoutMs)]);
    assert.equal(tokenRequests, 1, 'one refresh grant');
    assert.ok(a && b);
    assert.deepEqual(a, b);
    // The kept refresh token is the live one.
    tokenDelayMs = 0;
    assert.ok(await replicaB.refresh(ALICE, '', a.accessToken), 'the rotated refresh token still works');

    // A lock shorter than the slow answer (as a fixed 30 s one is for a timeout past it) lets both replicas send it.
    const short = { ...CLIENT, store, timeoutMs, lockTtlMs: 200 };
    const current = (await replicaA.refresh(ALICE, ''))!;
    tokenRequests = 0;
    tokenDelayMs = 1_000;
    await Promise.allSettled([setup.authorization(short).refresh(ALICE, '', current.accessToken), setup.authorization(short).refresh(ALICE, '', current.accessToken)]);
    assert.equal(tokenRequests, 2, 'the same refresh token sent twice');
  });
});
