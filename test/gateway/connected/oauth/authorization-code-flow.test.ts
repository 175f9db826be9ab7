// The authorization code flow with an upstream's real authorization server (oidc-provider): each way the
// gateway's client comes to be, PKCE S256 and resource in the URL, the one-time state, RFC 9207 iss, and a token
// whose audience is the upstream.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { decodeJwt } from 'jose';
import type { Adapter } from 'oidc-provider';
import { UpstreamAuthorizationError } from '../../../../src/gateway/connected/oauth/upstream-authorization-error.js';
import { pendingUpstreamFlow, requestedScope } from '../../../../src/gateway/connected/oauth/authorization-code-flow.js';
import { clientMetadataDocument, clientMetadataDocumentUrl } from '../../../../src/gateway/connected/oauth/gateway-client-urls.js';
import { registeredClientKey } from '../../../../src/gateway/connected/oauth/client-registration.js';
import { createMemoryTokenStore } from '../../../../src/gateway/connected/store/memory-token-store.js';
import { createUpstreamTargetResolver } from '../../../../src/gateway/upstream-auth/upstream-resource-metadata.js';
import { connect, signIn, startOAuthSetup, TIMEOUT_MS, type OAuthSetup } from './oauth-fixtures.js';

const SECRET = 'confidential-client-secret-value';

async function refusedWith(promise: Promise<unknown>, code: string, forbidden: readonly string[] = []): Promise<void> {
  await assert.rejects(promise, (error: unknown) => {
    assert.ok(error instanceof UpstreamAuthorizationError, String(error));
    assert.equal(error.code, code);
    for (const secret of forbidden) assert.ok(!error.message.includes(secret), 'the message holds a value of the exchange');
    return true;
  });
}

describe('authorization code flow with pre-registered clients', { timeout: 20_000 }, () => {
  let setup: OAuthSetup;
  before(async () => {
    setup = await startOAuthSetup(({ redirectUri }) => ({
      clients: [
        { clientId: 'gateway-confidential', clientSecret: SECRET, redirectUris: [redirectUri] },
        // The single upstream's redirect URI, and the one of a server named `notes`.
        { clientId: 'gateway-public', redirectUris: [redirectUri, new URL('notes', redirectUri).href] },
      ],
    }));
  });
  after(() => setup.close());

  it('sends PKCE S256, resource, exact redirect URI and the upstream scopes; the token is for the upstream', async () => {
    const authorization = setup.authorization({ clientId: 'gateway-confidential', clientSecret: SECRET });
    const url = await authorization.begin({ ticketId: 'ticket-a' });
    assert.equal(url.origin, setup.as.issuer);
    assert.equal(url.searchParams.get('code_challenge_method'), 'S256');
    assert.match(url.searchParams.get('code_challenge') ?? '', /^[A-Za-z0-9_-]{43}$/);
    assert.equal(url.searchParams.get('resource'), setup.resource);
    assert.equal(url.searchParams.get('redirect_uri'), `${setup.gatewayOrigin}/connect/callback/upstream`);
    assert.equal(url.searchParams.get('client_id'), 'gateway-confidential');
    assert.equal(url.searchParams.get('scope'), 'notes:read notes:write');
    const state = url.searchParams.get('state')!;
    assert.deepEqual(await pendingUpstreamFlow(setup.store, setup.sealer, state), { server: '', ticketId: 'ticket-a' });

    const callback = await signIn(url, setup.redirectUri);
    assert.equal(callback.searchParams.get('iss'), setup.as.issuer);
    const { ticketId, record } = await authorization.complete(callback);
    assert.equal(ticketId, 'ticket-a');
    const claims = decodeJwt(record.accessToken);
    assert.equal(claims.aud, setup.resource);
    assert.equal(claims.client_id, 'gateway-confidential');
    assert.equal(claims.scope, 'notes:read notes:write');
    assert.equal(record.tokenType, 'Bearer');
    assert.equal(record.scope, 'notes:read notes:write');
    assert.equal(record.asIssuer, setup.as.issuer);
    assert.equal(record.clientId, 'gateway-confidential');
    assert.equal(record.stepUpScope, undefined, 'not made for a step-up');
    assert.equal(typeof record.refreshToken, 'string');
    assert.ok(record.expiresAt! > Date.now() + 3_000_000 && record.expiresAt! <= Date.now() + 3_600_000);

    // The state was one-time: the same redirect again is refused, and names no secret.
    await refusedWith(authorization.complete(callback), 'unknown_state', [callback.searchParams.get('code')!, SECRET]);
    assert.equal(await pendingUpstreamFlow(setup.store, setup.sealer, state), undefined);
  });

  it('works as a public client (no secret), the configured scope first and the asked scope added', async () => {
    const authorization = setup.authorization({ clientId: 'gateway-public', scope: 'notes:read' });
    const url = await authorization.begin({ ticketId: 'ticket-b', scope: 'notes:admin' });
    assert.equal(url.searchParams.get('scope'), 'notes:read notes:admin');
    const { record } = await authorization.complete(await signIn(url, setup.redirectUri));
    const claims = decodeJwt(record.accessToken);
    assert.equal(claims.client_id, 'gateway-public');
    assert.equal(claims.aud, setup.resource);
    assert.equal(claims.scope, 'notes:read notes:admin');
    assert.equal(record.stepUpScope, 'notes:admin', 'the record remembers the step-up it was made for');
  });

  it('refuses an unknown state, an expired one, a wrong or missing iss, and a denial', async () => {
    const authorization = setup.authorization({ clientId: 'gateway-confidential', clientSecret: SECRET });
    await refusedWith(authorization.complete(new URL(`${setup.redirectUri}?code=abc&state=never-issued`)), 'unknown_state');
    await refusedWith(authorization.complete(new URL(`${setup.redirectUri}?code=abc`)), 'unknown_state');

    const quick = setup.authorization({ clientId: 'gateway-confidential', clientSecret: SECRET, flowTtlMs: 30 });
    const expiring = await quick.begin({ ticketId: 'ticket-c' });
    const late = await signIn(expiring, setup.redirectUri);
    await new Promise((resolve) => setTimeout(resolve, 50));
    await refusedWith(quick.complete(late), 'expired', [late.searchParams.get('code')!]);

    // RFC 9207: a response naming another issuer (a mix-up) is refused, and so is one naming none.
    for (const iss of ['http://127.0.0.1:1/other-issuer', undefined]) {
      const callback = await signIn(await authorization.begin({ ticketId: 'ticket-d' }), setup.redirectUri);
      if (iss === undefined) callback.searchParams.delete('iss');
      else callback.searchParams.set('iss', iss);
      await refusedWith(authorization.complete(callback), 'invalid_response', [callback.searchParams.get('code')!]);
    }

    const denied = await signIn(await authorization.begin({ ticketId: 'ticket-e' }), setup.redirectUri, true);
    await refusedWith(authorization.complete(denied), 'refused:access_denied');
  });

  it('refuses a flow of another server', async () => {
    const notes = setup.authorization({ clientId: 'gateway-public', server: 'notes' });
    const other = setup.authorization({ clientId: 'gateway-public', server: 'other' });
    const callback = await signIn(await notes.begin({ ticketId: 'ticket-f' }), `${setup.gatewayOrigin}/connect/callback/notes`);
    await refusedWith(other.complete(callback), 'unknown_state');
  });
});

describe('dynamic client registration', { timeout: 20_000 }, () => {
  let setup: OAuthSetup;
  before(async () => {
    setup = await startOAuthSetup();
  });
  after(() => setup.close());

  it('registers once, keeps the client sealed in the store, and a new instance reuses it', async () => {
    const registrations: string[] = [];
    setup.as.provider.on('registration_create.success', (_ctx: unknown, client: unknown) => registrations.push((client as { clientId: string }).clientId));
    const first = setup.authorization();
    const url = await first.begin({ ticketId: 'ticket-1' });
    assert.equal(registrations.length, 1);
    assert.equal(url.searchParams.get('client_id'), registrations[0]);
    const sealed = await setup.store.get(registeredClientKey(setup.as.issuer, ''));
    assert.ok(sealed !== undefined);
    const kept = await setup.sealer.open<{ clientId: string; clientSecret?: string; authMethod: string }>(registeredClientKey(setup.as.issuer, ''), sealed);
    assert.equal(kept?.clientId, registrations[0]);
    assert.equal(kept?.authMethod, 'client_secret_basic');
    assert.equal(typeof kept?.clientSecret, 'string');

    // A "restart": a new instance over the same store completes the flow the first one began, and registers nothing.
    const restarted = setup.authorization();
    const { record } = await restarted.complete(await signIn(url, setup.redirectUri));
    assert.equal(record.clientId, registrations[0]);
    assert.equal(decodeJwt(record.accessToken).aud, setup.resource);
    await connect(restarted, setup);
    assert.equal(registrations.length, 1);
  });

  it('settles replicas registering at once on one client', async () => {
    const store = createMemoryTokenStore();
    const [a, b] = await Promise.all([setup.authorization({ store }).begin({ ticketId: 't-a' }), setup.authorization({ store }).begin({ ticketId: 't-b' })]);
    assert.equal(a.searchParams.get('client_id'), b.searchParams.get('client_id'));
    const kept = await setup.sealer.open<{ clientId: string }>(registeredClientKey(setup.as.issuer, ''), (await store.get(registeredClientKey(setup.as.issuer, '')))!);
    assert.equal(kept?.clientId, a.searchParams.get('client_id'));
    await store.close();
  });

  it('a code exchange refused as invalid_client (the server forgot the registration) drops it; the next attempt registers afresh', async () => {
    const store = createMemoryTokenStore();
    try {
      const authorization = setup.authorization({ store });
      const url = await authorization.begin({ ticketId: 't-forgotten' });
      const forgotten = url.searchParams.get('client_id')!;
      const callback = await signIn(url, setup.redirectUri);
      await (setup.as.provider.Client as unknown as { adapter: Adapter }).adapter.destroy(forgotten);
      await assert.rejects(authorization.complete(callback), (error: unknown) => error instanceof UpstreamAuthorizationError && error.code === 'refused:invalid_client' && error.setting === undefined);
      assert.equal(await store.get(registeredClientKey(setup.as.issuer, '')), undefined);
      const again = await authorization.begin({ ticketId: 't-again' });
      assert.notEqual(again.searchParams.get('client_id'), forgotten);
    } finally {
      await store.close();
    }
  });
});

describe('client ID metadata document', { timeout: 20_000 }, () => {
  const gatewayOrigin = 'https://gateway.example.test';
  let setup: OAuthSetup;
  const fetched: string[] = [];
  before(async () => {
    setup = await startOAuthSetup(
      () => ({
        clientIdMetadataDocuments: {
          // What the gateway's page serves, from memory: the tests have no https origin, and the server refuses loopback fetches.
          fetch: async (url) => {
            fetched.push(String(url));
            return String(url) === clientMetadataDocumentUrl(gatewayOrigin, '') ? Response.json(clientMetadataDocument(gatewayOrigin, '')) : new Response('not found', { status: 404 });
          },
        },
      }),
      gatewayOrigin,
    );
  });
  after(() => setup.close());

  it('uses the document URL as client id, with no registration', async () => {
    const documentUrl = `${gatewayOrigin}/connect/client-metadata/upstream.json`;
    assert.deepEqual(clientMetadataDocument(gatewayOrigin, ''), {
      client_id: documentUrl,
      client_name: 'mcp-oauth-guard',
      redirect_uris: [`${gatewayOrigin}/connect/callback/upstream`],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    });
    const authorization = setup.authorization();
    const { record } = await connect(authorization, setup);
    assert.deepEqual(fetched, [documentUrl]);
    assert.equal(record.clientId, documentUrl);
    assert.equal(decodeJwt(record.accessToken).client_id, documentUrl);
    assert.equal(decodeJwt(record.accessToken).aud, setup.resource);
    assert.equal(await setup.store.get(registeredClientKey(setup.as.issuer, '')), undefined);
  });
});

describe('requested scope', () => {
  it("takes the configured scope, else the upstream's challenge scope, else its scopes_supported, and adds the asked scope", () => {
    assert.equal(requestedScope('a b', { challengeScope: 'x', scopesSupported: ['c'] }, undefined), 'a b');
    assert.equal(requestedScope(undefined, { challengeScope: 'x', scopesSupported: ['c', 'd'] }, undefined), 'x');
    assert.equal(requestedScope(undefined, { scopesSupported: ['c', 'd'] }, undefined), 'c d');
    assert.equal(requestedScope(undefined, {}, 'e'), 'e');
    assert.equal(requestedScope(undefined, { scopesSupported: ['c'] }, 'c e'), 'c e');
    assert.equal(requestedScope(undefined, { scopesSupported: [] }, undefined), undefined);
    assert.equal(requestedScope(undefined, {}, 'ok bad"one'), 'ok', 'scope tokens only');
  });

  it("asks the upstream's authorization server for the scope of the upstream's 401 challenge, before scopes_supported", { timeout: 10_000 }, async () => {
    const setup = await startOAuthSetup();
    try {
      setup.challenge = `Bearer resource_metadata="${new URL('/.well-known/oauth-protected-resource/mcp', setup.resource).href}", scope="notes:read"`;
      const target = createUpstreamTargetResolver({ upstream: new URL(setup.resource), gatewayIssuers: [], timeoutMs: TIMEOUT_MS, challengeScope: true });
      assert.equal((await target()).challengeScope, 'notes:read');
      const fromChallenge = await setup.authorization({ target }).begin({ ticketId: 'ticket-c' });
      assert.equal(fromChallenge.searchParams.get('scope'), 'notes:read');
      const configured = await setup.authorization({ target, scope: 'notes:write' }).begin({ ticketId: 'ticket-d' });
      assert.equal(configured.searchParams.get('scope'), 'notes:write');
      // Not asked for (the other upstream credential modes): the challenge is not read, scopes_supported serves.
      const plain = createUpstreamTargetResolver({ upstream: new URL(setup.resource), gatewayIssuers: [], timeoutMs: TIMEOUT_MS });
      assert.equal((await plain()).challengeScope, undefined);
      assert.equal((await setup.authorization({ target: plain }).begin({ ticketId: 'ticket-e' })).searchParams.get('scope'), 'notes:read notes:write');
    } finally {
      await setup.close();
    }
  });
});
