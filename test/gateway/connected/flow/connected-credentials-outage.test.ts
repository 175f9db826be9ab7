// A token close to its expiry while the upstream's authorization server is down: the refresh tried early fails as
// unavailable, and the token, which has not expired yet, is still sent; the next tries wait a pause rather than
// holding up each request. Once the token has expired, the failure is reported. Real oidc-provider, stopped.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, describe, it } from 'node:test';
import type { AuthInfo } from '../../../../src/core/kernel/auth-info.js';
import { connectedCredentials, REFRESH_RETRY_PAUSE_MS, type ConnectionRecords } from '../../../../src/gateway/connected/flow/connected-credentials.js';
import { createRequestStates } from '../../../../src/gateway/connected/flow/request-state.js';
import { readConnection, writeConnection } from '../../../../src/gateway/connected/oauth/sealed-connections.js';
import { UpstreamAuthorizationError } from '../../../../src/gateway/connected/oauth/upstream-authorization-error.js';
import { ALICE, connect, startOAuthSetup, type OAuthSetup } from '../oauth/oauth-fixtures.js';

const caller: AuthInfo = { token: 't', clientId: 'c', scopes: [], extra: Object.freeze({ iss: ALICE.issuer, sub: ALICE.subject, claims: {}, tokenType: 'jwt' }) };

describe('connected credentials while the authorization server is down', { timeout: 30_000 }, () => {
  let setup: OAuthSetup | undefined;
  after(() => setup?.close());

  it('send a token not expired yet, try refreshing again only after a pause, and report the outage once it has expired', async () => {
    const started = (setup = await startOAuthSetup());
    const authorization = started.authorization();
    const { record } = await connect(authorization, started);
    await writeConnection(started.store, started.sealer, ALICE, '', record);
    assert.ok(record.expiresAt !== undefined);
    const refreshes: PromiseSettledResult<unknown>[] = [];
    const records: ConnectionRecords = {
      get: async (user, server) => (await readConnection(started.store, started.sealer, user, server))?.record,
      async refresh(user, server, replacing) {
        const attempt = authorization.refresh(user, server, replacing);
        const [settled] = await Promise.allSettled([attempt]);
        refreshes.push(settled!);
        return attempt;
      },
      end: async () => assert.fail('not ended'),
      clearStepUp: async () => undefined,
    };
    // The gateway's clock: 10 s before the token expires, within the 30 s it is refreshed early.
    let clock = record.expiresAt - 10_000;
    const credentials = connectedCredentials({
      server: '',
      records,
      requestStates: createRequestStates({ secrets: [randomBytes(32)] }),
      createTicket: async () => assert.fail('no connect link'),
      now: () => clock,
    });
    await started.as.close();

    assert.equal(await credentials.authorization(caller), `Bearer ${record.accessToken}`);
    assert.equal(refreshes.length, 1);
    assert.ok(refreshes[0]!.status === 'rejected' && refreshes[0].reason instanceof UpstreamAuthorizationError && refreshes[0].reason.code === 'unavailable');
    // Within the pause: the token, no refresh.
    clock += REFRESH_RETRY_PAUSE_MS - 1;
    assert.equal(await credentials.authorization(caller), `Bearer ${record.accessToken}`);
    assert.equal(refreshes.length, 1, 'no refresh during the pause');
    // After it: tried again, still the token.
    clock += 1;
    assert.equal(await credentials.authorization(caller), `Bearer ${record.accessToken}`);
    assert.equal(refreshes.length, 2);
    // Expired: the outage is reported (a 503), and the connection is kept for when the server is back.
    clock = record.expiresAt;
    await assert.rejects(credentials.authorization(caller), (error: unknown) => error instanceof UpstreamAuthorizationError && error.code === 'unavailable');
    assert.equal(refreshes.length, 3);
    assert.equal((await records.get(ALICE, ''))?.accessToken, record.accessToken);
  });
});
