// Refresh and revocation of a user's connection against a real authorization server (oidc-provider) that rotates
// every refresh token: two gateway instances on one store refreshing at once send one refresh grant and keep a
// refresh token that still works; invalid_grant deletes the connection; revocation makes the tokens unusable.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { decodeJwt } from 'jose';
import type { Adapter } from 'oidc-provider';
import { registeredClientKey } from '../../../../src/gateway/connected/oauth/client-registration.js';
import { connectionKey } from '../../../../src/gateway/connected/oauth/connection-record.js';
import { clearStepUpScope, readConnection, writeConnection } from '../../../../src/gateway/connected/oauth/sealed-connections.js';
import { UpstreamAuthorizationError } from '../../../../src/gateway/connected/oauth/upstream-authorization-error.js';
import { ALICE, connect, countGrants, startOAuthSetup, type OAuthSetup } from './oauth-fixtures.js';

const SECRET = 'confidential-client-secret-value';
const CLIENT = { clientId: 'gateway-confidential', clientSecret: SECRET };

/** A refresh grant sent straight to the token endpoint, as the gateway's client: the status and error code. */
async function refreshAtServer(setup: OAuthSetup, refreshToken: string): Promise<{ status: number; error?: string }> {
  const response = await fetch(`${setup.as.issuer}/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: `Basic ${Buffer.from(`${CLIENT.clientId}:${SECRET}`).toString('base64')}` },
    body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: refreshToken, resource: setup.resource }),
  });
  const body = (await response.json()) as { error?: string };
  return { status: response.status, ...(body.error !== undefined ? { error: body.error } : {}) };
}

/** RFC 7662 introspection by the server's own service client: whether the token is active. */
async function introspectActive(setup: OAuthSetup, token: string): Promise<boolean> {
  const { clientId, clientSecret } = setup.as.serviceClient;
  const response = await fetch(`${setup.as.issuer}/token/introspection`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: `Basic ${Buffer.from(`${clientId}:${clientSecret}`).toString('base64')}` },
    body: new URLSearchParams({ token }),
  });
  return ((await response.json()) as { active: boolean }).active;
}

/** Where the server keeps its registered clients (oidc-provider's model adapter), to forget or change one. */
function clientStore(setup: OAuthSetup): Adapter {
  return (setup.as.provider.Client as unknown as { adapter: Adapter }).adapter;
}

describe('connection refresh and revocation', { timeout: 25_000 }, () => {
  let setup: OAuthSetup;
  let grants: Map<string, number>;
  before(async () => {
    setup = await startOAuthSetup(({ redirectUri }) => ({
      rotateRefreshTokens: true,
      clients: [{ clientId: CLIENT.clientId, clientSecret: SECRET, redirectUris: [redirectUri] }],
    }));
    grants = countGrants(setup.as);
  });
  after(() => setup.close());

  it('two instances refreshing at once send one refresh grant and share the new record; its refresh token works', async () => {
    const replicaA = setup.authorization(CLIENT);
    const replicaB = setup.authorization(CLIENT);
    const { record: first } = await connect(replicaA, setup);
    await writeConnection(setup.store, setup.sealer, ALICE, '', first);
    const before = grants.get('refresh_token') ?? 0;

    const [a, b] = await Promise.all([replicaA.refresh(ALICE, '', first.accessToken), replicaB.refresh(ALICE, '', first.accessToken)]);
    assert.equal((grants.get('refresh_token') ?? 0) - before, 1, 'exactly one refresh grant');
    assert.ok(a !== undefined && b !== undefined);
    assert.deepEqual(a, b);
    assert.notEqual(a.accessToken, first.accessToken);
    assert.notEqual(a.refreshToken, first.refreshToken, 'the server rotated the refresh token');
    assert.equal(a.createdAt, first.createdAt);
    assert.equal(decodeJwt(a.accessToken).aud, setup.resource);
    assert.deepEqual((await readConnection(setup.store, setup.sealer, ALICE, ''))?.record, a);

    // Without the token to replace, a call that began before the record was rewritten takes it as it is too. These
    // begin after it (a record written in the millisecond a call begins counts as its own), so they refresh, once.
    while (Date.now() <= a.updatedAt) await new Promise((resolve) => setImmediate(resolve));
    const [c, d] = await Promise.all([replicaA.refresh(ALICE, ''), replicaA.refresh(ALICE, '')]);
    assert.equal((grants.get('refresh_token') ?? 0) - before, 2, 'one flight in one process');
    assert.deepEqual(c, d);

    // The kept refresh token is the live one: the server takes it (and rotates it again).
    const again = await replicaB.refresh(ALICE, '', c!.accessToken);
    assert.equal((grants.get('refresh_token') ?? 0) - before, 3);
    assert.notEqual(again?.accessToken, c!.accessToken);
    assert.deepEqual((await readConnection(setup.store, setup.sealer, ALICE, ''))?.record, again);

    // A record already replaced is returned without a grant.
    assert.deepEqual(await replicaA.refresh(ALICE, '', first.accessToken), again);
    assert.equal((grants.get('refresh_token') ?? 0) - before, 3);
  });

  it('a refresh keeps the step-up the connection was made for', async () => {
    const authorization = setup.authorization(CLIENT);
    const { record } = await connect(authorization, setup, 'notes:write');
    assert.equal(record.stepUpScope, 'notes:write');
    await writeConnection(setup.store, setup.sealer, ALICE, '', record);
    const refreshed = await authorization.refresh(ALICE, '', record.accessToken);
    assert.notEqual(refreshed?.accessToken, record.accessToken);
    assert.equal(refreshed?.stepUpScope, 'notes:write');
    // After its final refusal the step-up is forgotten, the tokens kept.
    await clearStepUpScope(setup.store, setup.sealer, ALICE, '');
    const cleared = (await readConnection(setup.store, setup.sealer, ALICE, ''))?.record;
    assert.equal(cleared?.stepUpScope, undefined);
    assert.equal(cleared?.refreshToken, refreshed?.refreshToken);
  });

  it('deletes the connection on invalid_grant and answers undefined; no connection answers undefined', async () => {
    const authorization = setup.authorization(CLIENT);
    const { record } = await connect(authorization, setup);
    await writeConnection(setup.store, setup.sealer, ALICE, '', { ...record, refreshToken: 'not-a-refresh-token' });
    assert.equal(await authorization.refresh(ALICE, '', record.accessToken), undefined);
    assert.equal(await setup.store.get(connectionKey(ALICE, '')), undefined);
    assert.equal(await authorization.refresh(ALICE, ''), undefined);
    await assert.rejects(authorization.refresh(ALICE, 'another-server'), TypeError);
  });

  it('a refresh refused as invalid_client (the server forgot the dynamic registration): the connection and the registration go, the next connection registers afresh', async () => {
    const authorization = setup.authorization();
    const { record } = await connect(authorization, setup);
    await writeConnection(setup.store, setup.sealer, ALICE, '', record);
    const registered = await setup.sealer.open<{ clientId: string }>(registeredClientKey(setup.as.issuer, ''), (await setup.store.get(registeredClientKey(setup.as.issuer, '')))!);
    assert.equal(registered?.clientId, record.clientId);
    await clientStore(setup).destroy(record.clientId);

    assert.equal(await authorization.refresh(ALICE, '', record.accessToken), undefined, 'the connect flow, not a 503');
    assert.equal(await setup.store.get(connectionKey(ALICE, '')), undefined);
    assert.equal(await setup.store.get(registeredClientKey(setup.as.issuer, '')), undefined);

    const { record: again } = await connect(authorization, setup);
    assert.notEqual(again.clientId, record.clientId, 'registered afresh');
    const kept = await setup.sealer.open<{ clientId: string }>(registeredClientKey(setup.as.issuer, ''), (await setup.store.get(registeredClientKey(setup.as.issuer, '')))!);
    assert.equal(kept?.clientId, again.clientId);
  });

  it('a refresh refused as unauthorized_client, or invalid_client for a wrong configured secret: the connection goes, a registration stays', async () => {
    const authorization = setup.authorization();
    const { record } = await connect(authorization, setup);
    await writeConnection(setup.store, setup.sealer, ALICE, '', record);
    // The server no longer lets this client use refresh tokens.
    const adapter = clientStore(setup);
    const metadata = (await adapter.find(record.clientId))!;
    await adapter.upsert(record.clientId, { ...metadata, grant_types: ['authorization_code'] }, 0);
    assert.equal(await authorization.refresh(ALICE, '', record.accessToken), undefined);
    assert.equal(await setup.store.get(connectionKey(ALICE, '')), undefined);
    assert.ok(await setup.store.get(registeredClientKey(setup.as.issuer, '')), 'not a refusal of the client: kept');

    const { record: confidential } = await connect(setup.authorization(CLIENT), setup);
    await writeConnection(setup.store, setup.sealer, ALICE, '', confidential);
    const wrongSecret = setup.authorization({ ...CLIENT, clientSecret: 'not-the-secret' });
    assert.equal(await wrongSecret.refresh(ALICE, '', confidential.accessToken), undefined);
    assert.equal(await setup.store.get(connectionKey(ALICE, '')), undefined);
  });

  it('revokes the refresh token, then tries the access token, and deletes the connection', async () => {
    const authorization = setup.authorization(CLIENT);
    const { record } = await connect(authorization, setup);
    await writeConnection(setup.store, setup.sealer, ALICE, '', record);
    const live = (await authorization.refresh(ALICE, '')) ?? assert.fail('the connection is gone');
    assert.equal(await introspectActive(setup, live.refreshToken!), true);

    const report = await authorization.revoke(ALICE, '');
    // The server cannot revoke its self-contained JWT access tokens (RFC 7009 §2.2.1): that is reported, not thrown.
    assert.deepEqual(report, { found: true, revoked: ['refresh_token'], notRevoked: [{ token: 'access_token', reason: 'refused:unsupported_token_type' }] });
    assert.equal(await setup.store.get(connectionKey(ALICE, '')), undefined);
    assert.equal(await introspectActive(setup, live.refreshToken!), false);
    assert.deepEqual(await refreshAtServer(setup, live.refreshToken!), { status: 400, error: 'invalid_grant' });
    assert.deepEqual(await authorization.revoke(ALICE, ''), { found: false, revoked: [], notRevoked: [] });
  });

  it('reports a refresh the server cannot answer, and still deletes on revoke when the server is gone', async () => {
    const authorization = setup.authorization(CLIENT);
    const { record } = await connect(authorization, setup);
    await writeConnection(setup.store, setup.sealer, ALICE, '', record);
    await setup.as.close();
    await assert.rejects(authorization.refresh(ALICE, '', record.accessToken), (error: unknown) => error instanceof UpstreamAuthorizationError && error.code === 'unavailable' && !error.message.includes(record.refreshToken!));
    assert.ok(await setup.store.get(connectionKey(ALICE, '')), 'kept when the server could not be asked');
    const report = await authorization.revoke(ALICE, '');
    assert.equal(report.found, true);
    assert.deepEqual(report.revoked, []);
    assert.deepEqual(report.notRevoked, [
      { token: 'refresh_token', reason: 'unavailable' },
      { token: 'access_token', reason: 'unavailable' },
    ]);
    assert.equal(await setup.store.get(connectionKey(ALICE, '')), undefined);
  });
});
