// Two servers of one gateway behind one authorization server, each registered dynamically (no client configured):
// each has its own redirect URI, so each keeps its own registration. A restart (new instances on the same token
// store) reuses both, so that both users' connections still refresh. A registration kept by an earlier version
// under the issuer alone is taken over by the server whose redirect URI it names, and by no other.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { decodeJwt } from 'jose';
import { issuerOnlyClientKey, registeredClientKey } from '../../../../src/gateway/connected/oauth/client-registration.js';
import type { UserRef } from '../../../../src/gateway/connected/oauth/connection-record.js';
import { upstreamCallbackUrl } from '../../../../src/gateway/connected/oauth/gateway-client-urls.js';
import { writeConnection } from '../../../../src/gateway/connected/oauth/sealed-connections.js';
import type { UpstreamAuthorization } from '../../../../src/gateway/connected/oauth/upstream-authorization.js';
import type { RegisteredClient } from '../../../../src/gateway/connected/oauth/upstream-client-configuration.js';
import { ALICE, signIn, startOAuthSetup, type OAuthSetup } from './oauth-fixtures.js';

const BOB: UserRef = { issuer: ALICE.issuer, subject: 'bob' };

describe('dynamic registrations of two servers at one authorization server', { timeout: 30_000 }, () => {
  let setup: OAuthSetup;
  const registered: string[] = [];
  before(async () => {
    setup = await startOAuthSetup();
    setup.as.provider.on('registration_create.success', (_ctx: unknown, client: unknown) => registered.push((client as { clientId: string }).clientId));
  });
  after(() => setup.close());

  /** Connects `user` to `server` through `authorization` and stores the connection; returns the record. */
  async function connectAs(authorization: UpstreamAuthorization, server: string, user: UserRef) {
    const url = await authorization.begin({ ticketId: `ticket-${server}` });
    const { record } = await authorization.complete(await signIn(url, upstreamCallbackUrl(setup.gatewayOrigin, server)));
    await writeConnection(setup.store, setup.sealer, user, server, record);
    return record;
  }

  it('keep one registration each, reused after a restart: both connections still refresh', async () => {
    const a = await connectAs(setup.authorization({ server: 'a' }), 'a', ALICE);
    const b = await connectAs(setup.authorization({ server: 'b' }), 'b', BOB);
    assert.equal(registered.length, 2);
    assert.notEqual(a.clientId, b.clientId, 'one client per redirect URI');

    // A restart: new instances over the same store.
    const refreshedA = await setup.authorization({ server: 'a' }).refresh(ALICE, 'a', a.accessToken);
    const refreshedB = await setup.authorization({ server: 'b' }).refresh(BOB, 'b', b.accessToken);
    assert.equal(registered.length, 2, 'nothing registered again');
    assert.ok(refreshedA && refreshedB, 'both connections kept');
    assert.equal(refreshedA.clientId, a.clientId);
    assert.equal(refreshedB.clientId, b.clientId);
    assert.notEqual(refreshedA.accessToken, a.accessToken);
    assert.equal(decodeJwt(refreshedB.accessToken).aud, setup.resource);
    // Both connect again with their own clients too.
    assert.equal((await connectAs(setup.authorization({ server: 'a' }), 'a', ALICE)).clientId, a.clientId);
    assert.equal((await connectAs(setup.authorization({ server: 'b' }), 'b', BOB)).clientId, b.clientId);
    assert.equal(registered.length, 2);
  });

  it('a registration kept under the issuer alone is taken over by its own server only', async () => {
    const c = await connectAs(setup.authorization({ server: 'c' }), 'c', ALICE);
    // As an earlier version kept it: under the issuer alone.
    const key = registeredClientKey(setup.as.issuer, 'c');
    const stored = (await setup.sealer.open<RegisteredClient>(key, (await setup.store.get(key))!))!;
    const oldKey = issuerOnlyClientKey(setup.as.issuer);
    await setup.store.set(oldKey, await setup.sealer.seal(oldKey, stored));
    await setup.store.delete(key);
    const count = registered.length;

    const refreshed = await setup.authorization({ server: 'c' }).refresh(ALICE, 'c', c.accessToken);
    assert.equal(refreshed?.clientId, c.clientId, 'the connection is kept across the upgrade');
    assert.equal(registered.length, count, 'not registered again');
    assert.equal((await setup.sealer.open<RegisteredClient>(key, (await setup.store.get(key))!))?.clientId, c.clientId, 'now kept under its own key');

    // Another server does not take a client registered with c's redirect URI.
    const d = await connectAs(setup.authorization({ server: 'd' }), 'd', ALICE);
    assert.notEqual(d.clientId, c.clientId);
    assert.equal(registered.length, count + 1);
  });
});
