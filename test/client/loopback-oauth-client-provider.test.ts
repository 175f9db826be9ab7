// The official SDK client (1.x) signing in with LoopbackOAuthClientProvider against the development authorization
// server (oidc-provider) and a guarded server, all on 127.0.0.1: the code comes back through the loopback
// listener, and a refusal arrives with the authorization server's own description.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { decodeJwt } from 'jose';
import { AuthorizationRedirectError, LoopbackOAuthClientProvider, LoopbackRedirectListener, signInToDevelopmentServer } from '../../src/client/index.js';
import { dispatchTable } from '../../src/index.js';
import { DEMO_PASSWORD, DEMO_USERNAME, startAuthorizationServer, type AuthorizationServer } from '../../examples/dev/authorization-server.js';
import { startGuardedApp, type GuardedApp } from '../helpers/guarded-app.js';

describe('LoopbackOAuthClientProvider with the SDK client', () => {
  let as: AuthorizationServer;
  let app: GuardedApp;

  before(async () => {
    as = await startAuthorizationServer();
    app = await startGuardedApp((origin) => ({
      issuer: as.issuer,
      resource: `${origin}/mcp`,
      policy: { scopesSupported: ['hello:use'], tools: { hello: ['hello:use'] } },
      handler: dispatchTable({
        initialize: () => ({ protocolVersion: '2025-11-25', capabilities: { tools: {} }, serverInfo: { name: 'hello', version: '1.0.0' } }),
        'tools/list': () => ({ tools: [{ name: 'hello', inputSchema: { type: 'object' } }] }),
      }),
    }));
    as.addResource(app.url, { scopes: ['hello:use'] });
  });
  after(async () => {
    await app?.close();
    await as?.close();
  });

  /** Connects once, meets the 401, and finishes with the code the listener received. */
  async function signIn(provider: LoopbackOAuthClientProvider): Promise<Client> {
    const client = new Client({ name: 'provider-test', version: '1.0.0' });
    const first = new StreamableHTTPClientTransport(new URL(app.url), { authProvider: provider });
    await assert.rejects(client.connect(first), UnauthorizedError);
    await first.finishAuth(await provider.authorizationCode());
    await client.connect(new StreamableHTTPClientTransport(new URL(app.url), { authProvider: provider }));
    return client;
  }

  it('receives the code on the listener and gets a token for the resource and its scope', { timeout: 60_000 }, async () => {
    const listener = await LoopbackRedirectListener.listen({ timeoutMs: 30_000 });
    const provider = new LoopbackOAuthClientProvider({
      listener,
      metadata: { client_name: 'provider test' },
      sendUser: async (url) => void (await signInToDevelopmentServer(url, { username: DEMO_USERNAME, password: DEMO_PASSWORD, redirectUri: listener.redirectUri })),
    });
    try {
      assert.equal(provider.redirectUrl, listener.redirectUri);
      assert.deepEqual(provider.clientMetadata.redirect_uris, [listener.redirectUri]);
      const client = await signIn(provider);
      assert.deepEqual((await client.listTools()).tools.map((t) => t.name), ['hello']);
      await client.close();
      assert.equal(provider.lastAuthorizationUrl?.searchParams.get('resource'), app.url);
      assert.equal(provider.lastAuthorizationUrl?.searchParams.get('scope'), 'hello:use');
      const claims = decodeJwt(provider.tokens()!.access_token);
      assert.equal(claims.aud, app.url);
      assert.equal(claims.scope, 'hello:use');
      // The code was handed over once.
      assert.throws(() => provider.authorizationCode(), /no sign-in in progress/);
    } finally {
      await listener.close();
    }
  });

  it("rejects the code with the authorization server's error and description when the user denies", { timeout: 60_000 }, async () => {
    const listener = await LoopbackRedirectListener.listen({ timeoutMs: 30_000 });
    const provider = new LoopbackOAuthClientProvider({
      listener,
      sendUser: async (url) => void (await signInToDevelopmentServer(url, { username: DEMO_USERNAME, password: DEMO_PASSWORD, redirectUri: listener.redirectUri, deny: true })),
    });
    try {
      const client = new Client({ name: 'provider-test', version: '1.0.0' });
      await assert.rejects(client.connect(new StreamableHTTPClientTransport(new URL(app.url), { authProvider: provider })), UnauthorizedError);
      const refusal = await provider.authorizationCode().then(
        () => assert.fail('a code came back'),
        (e: unknown) => e,
      );
      assert.ok(refusal instanceof AuthorizationRedirectError, String(refusal));
      assert.equal(refusal.error, 'access_denied');
      // oidc-provider's words, carried through as they came.
      assert.ok(refusal.errorDescription && refusal.errorDescription.length > 0);
      assert.ok(refusal.message.endsWith(`: ${refusal.errorDescription}`), refusal.message);
    } finally {
      await listener.close();
    }
  });
});
