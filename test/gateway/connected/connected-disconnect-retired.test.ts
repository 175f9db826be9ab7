// The connections page of a running gateway (real authorization servers, the notes example as the upstream) lists a
// connection kept for a server that is no longer in connected mode, and disconnecting it deletes it without
// revocation, saying so on the page (there is no authorization server known to revoke it at), as the revoke
// command does.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { parseSessionSecret } from '../../../src/core/session/session-seal.js';
import { connectionKey } from '../../../src/gateway/connected/oauth/connection-record.js';
import { writeConnection } from '../../../src/gateway/connected/oauth/sealed-connections.js';
import { createDirectoryTokenStore } from '../../../src/gateway/connected/store/directory-token-store.js';
import { createRecordSealer } from '../../../src/gateway/connected/store/record-sealer.js';
import type { RunningGateway } from '../../../src/gateway/server/start-gateway.js';
import { CONNECTED_USERS, singleUpstreamSettings, startConnectedAccountsParts, startConnectedGateway, STORE_KEY, type ConnectedAccountsParts } from '../../helpers/connected-accounts.js';
import { PageBrowser } from './pages/page-browser.js';

const ALICE = CONNECTED_USERS[0];

describe('connections page: a connection to a server no longer in connected mode', { timeout: 60_000 }, () => {
  let parts: ConnectedAccountsParts;
  let gateway: RunningGateway | undefined;
  const retired = 'retired-wiki';

  before(async () => {
    parts = await startConnectedAccountsParts();
    // Kept from a configuration that had a server "retired-wiki" in connected mode.
    const store = await createDirectoryTokenStore({ directory: parts.storeDir });
    const sealer = createRecordSealer(parseSessionSecret(STORE_KEY, 'MCP_AUTH_TOKEN_STORE_SECRET'));
    const now = Date.now();
    await writeConnection(store, sealer, { issuer: parts.gatewayAs.issuer, subject: 'alice' }, retired, {
      accessToken: 'old-access-token',
      tokenType: 'Bearer',
      asIssuer: 'https://retired-as.example',
      clientId: 'gateway',
      createdAt: now,
      updatedAt: now,
    });
    await store.close();
    gateway = await startConnectedGateway(parts, singleUpstreamSettings(parts));
  });

  after(async () => {
    await gateway?.shutdown();
    await parts?.close();
  });

  it('is listed, and disconnecting it deletes it without revocation and says so', async () => {
    const browser = new PageBrowser(parts.origin);
    const toSignIn = await browser.request(`${parts.origin}/connections`);
    assert.equal(toSignIn.status, 302, toSignIn.body);
    const back = await browser.request(await browser.signIn(toSignIn.headers.get('location')!, ALICE, parts.callback));
    assert.equal(back.status, 303, back.body);
    const list = await browser.request(`${parts.origin}/connections`);
    assert.equal(list.status, 200, list.body);
    assert.match(list.body, new RegExp(`value="${retired}"`));
    const csrf = /name="csrf" value="([^"]+)"/.exec(list.body)![1]!;

    const done = await browser.request(`${parts.origin}/connections/disconnect`, { method: 'POST', form: { server: retired, csrf }, headers: { 'sec-fetch-site': 'same-origin' } });
    assert.equal(done.status, 200, done.body);
    assert.match(done.body, /no longer keeps your connection to retired-wiki/);
    assert.match(done.body, /could not ask its authorization server to revoke/);
    assert.doesNotMatch(done.body, /old-access-token/);

    const after = await browser.request(`${parts.origin}/connections`);
    assert.doesNotMatch(after.body, new RegExp(retired), 'the connection is gone from the list');
    const store = await createDirectoryTokenStore({ directory: parts.storeDir });
    try {
      assert.equal(await store.get(connectionKey({ issuer: parts.gatewayAs.issuer, subject: 'alice' }, retired)), undefined, 'and from the store');
    } finally {
      await store.close();
    }
  });
});
