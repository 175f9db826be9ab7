// A dynamic registration whose secret expires (RFC 7591 client_secret_expires_at) is replaced before it is used
// again: the next connection registers afresh, without first being refused with invalid_client. The authorization
// server (oidc-provider) gives the first registration a secret that expires two minutes on, then, once the first
// connection is made, expires it for real in its own records: from then on it refuses that client at its token
// endpoint. The gateway's clock is moved 150 seconds on, past the expiry the registration it keeps was given.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Adapter } from 'oidc-provider';
import { registeredClientKey } from '../../../../src/gateway/connected/oauth/client-registration.js';
import { createMemoryTokenStore } from '../../../../src/gateway/connected/store/memory-token-store.js';
import { connect, startOAuthSetup, type OAuthSetup } from './oauth-fixtures.js';

describe('a dynamic registration whose secret expires', { timeout: 30_000 }, () => {
  let setup: OAuthSetup;
  const registrations: { clientId: string; secret: string }[] = [];
  const refusals: string[] = [];
  let adapter: Adapter;

  before(async () => {
    setup = await startOAuthSetup();
    adapter = (setup.as.provider.Client as unknown as { adapter: Adapter }).adapter;
    setup.as.provider.on('registration_create.success', (ctx: unknown, client: unknown) => {
      const { clientId, clientSecret } = client as { clientId: string; clientSecret: string };
      registrations.push({ clientId, secret: clientSecret });
      // Only the first one expires: its answer says so (the response body is serialized after this listener).
      if (registrations.length === 1) (ctx as { body: Record<string, unknown> }).body.client_secret_expires_at = Math.floor(Date.now() / 1000) + 120;
    });
    for (const event of ['grant.error', 'authorization.error']) {
      setup.as.provider.on(event, (_ctx: unknown, error: unknown) => refusals.push(String((error as { error?: string }).error)));
    }
  });
  after(() => setup.close());

  it('is registered again before it is used, stored in place of the old one, with one log line and no invalid_client', async () => {
    const store = createMemoryTokenStore();
    const lines: string[] = [];
    let skewMs = 0;
    try {
      const authorization = setup.authorization({ store, now: () => Date.now() + skewMs, log: (line) => lines.push(line) });
      const first = await connect(authorization, setup);
      assert.equal(registrations.length, 1);
      assert.equal(first.record.clientId, registrations[0]!.clientId);
      // Used again within its life: kept.
      await connect(authorization, setup);
      assert.equal(registrations.length, 1);
      assert.deepEqual(lines, []);

      // The server now holds the secret as expired (past its 15 s clock tolerance), and to the gateway it has expired.
      const stored = (await adapter.find(registrations[0]!.clientId))!;
      await adapter.upsert(registrations[0]!.clientId, { ...stored, client_secret_expires_at: Math.floor(Date.now() / 1000) - 60 }, 0);
      skewMs = 150_000;

      const second = await connect(authorization, setup);
      assert.equal(registrations.length, 2, 'registered again');
      assert.equal(second.record.clientId, registrations[1]!.clientId);
      assert.deepEqual(refusals, [], 'no invalid_client (nor any other refusal) on the way');
      const key = registeredClientKey(setup.as.issuer, '');
      const kept = await setup.sealer.open<{ clientId: string }>(key, (await store.get(key))!);
      assert.equal(kept?.clientId, registrations[1]!.clientId, 'the new registration replaced the old one in the store');

      assert.equal(lines.length, 1);
      // One JSON line, shaped as every log line: time, then event, then its fields.
      const { time, ...line } = JSON.parse(lines[0]!) as Record<string, unknown>;
      assert.ok(!Number.isNaN(Date.parse(String(time))), 'a time');
      assert.deepEqual(Object.keys(JSON.parse(lines[0]!)), ['time', 'event', 'server', 'issuer']);
      assert.deepEqual(line, { event: 'client_registration_expired', server: 'upstream', issuer: setup.as.issuer });
      for (const { secret } of registrations) assert.ok(!lines.join('\n').includes(secret), 'no secret in the log');

      // The new one does not expire: used again, nothing more is registered or logged.
      await connect(authorization, setup);
      assert.equal(registrations.length, 2);
      assert.equal(lines.length, 1);
    } finally {
      await store.close();
    }
  });
});
