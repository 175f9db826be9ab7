// Interop: the official TypeScript SDK client (Client + StreamableHTTPClientTransport + an OAuthClientProvider)
// completes the whole MCP authorization flow against the notes example behind the guard and oidc-provider:
// 401, RFC 9728 metadata, RFC 8414 discovery, RFC 7591 registration, PKCE with `resource`, token, filtered
// tools/list, 403 insufficient_scope step-up, then the call succeeding.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { auth, UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { decodeJwt } from 'jose';
import { DEMO_PASSWORD, DEMO_USERNAME, startAuthorizationServer, type AuthorizationServer } from '../../examples/dev/authorization-server.js';
import { ownerKey, startNotesServer, type RunningNotesServer } from '../../examples/notes-server.js';
import { HeadlessOAuthClientProvider } from '../fixtures/sdk-oauth-provider.js';

const NOTES_SCOPES = ['notes:read', 'notes:write', 'notes:admin'];

interface Recorded {
  method: string;
  url: URL;
  status: number;
  body?: string;
  wwwAuthenticate?: string;
}

describe('official SDK client against the notes server and oidc-provider', () => {
  let as: AuthorizationServer;
  let notes: RunningNotesServer;
  let callback: Server;
  let redirectUrl: string;

  before(async () => {
    as = await startAuthorizationServer();
    notes = await startNotesServer({ issuer: as.issuer });
    as.addResource(notes.url, { scopes: NOTES_SCOPES });
    // The client's loopback redirect listener (RFC 8252 §7.3); the headless user lands here like a browser.
    callback = createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/plain' }).end('You may close this window.'));
    callback.listen(0, '127.0.0.1');
    await once(callback, 'listening');
    redirectUrl = `http://127.0.0.1:${(callback.address() as AddressInfo).port}/callback`;
  });
  after(async () => {
    callback?.close();
    await notes?.close();
    await as?.close();
  });

  /** A fetch that records what the SDK sends and gets, for asserting the order of the flow. */
  function recordingFetch(log: Recorded[]): typeof fetch {
    return async (input, init) => {
      const url = new URL(input instanceof Request ? input.url : String(input));
      const response = await fetch(input, init);
      log.push({
        method: init?.method ?? 'GET',
        url,
        status: response.status,
        body: typeof init?.body === 'string' ? init.body : init?.body?.toString(),
        wwwAuthenticate: response.headers.get('www-authenticate') ?? undefined,
      });
      return response;
    };
  }

  function connectNew(provider: HeadlessOAuthClientProvider, log: Recorded[]): { client: Client; transport: StreamableHTTPClientTransport; connected: Promise<void> } {
    const transport = new StreamableHTTPClientTransport(new URL(notes.url), { authProvider: provider, fetch: recordingFetch(log) });
    const client = new Client({ name: 'sdk-interop-test', version: '1.0.0' });
    return { client, transport, connected: client.connect(transport) };
  }

  const textOf = (result: unknown): string => (result as { content: Array<{ text: string }> }).content[0]!.text;

  const tokenScopes = (provider: HeadlessOAuthClientProvider): string[] =>
    String(decodeJwt(provider.tokens()!.access_token).scope ?? '')
      .split(' ')
      .filter(Boolean)
      .sort();

  test('401 → metadata → discovery → registration → PKCE with resource → token → filtered list → 403 step-up → call succeeds', async () => {
    const log: Recorded[] = [];
    const provider = new HeadlessOAuthClientProvider({ redirectUrl, username: DEMO_USERNAME, password: DEMO_PASSWORD });

    // 1. No token yet: the SDK meets the 401, runs discovery and registration, and "redirects" the user.
    const first = connectNew(provider, log);
    await assert.rejects(first.connected, UnauthorizedError);
    const origin = new URL(notes.url).origin;
    const steps = log.map((r) => `${r.method} ${r.url.origin === origin ? 'MCP' : 'AS'} ${r.url.pathname} ${r.status}`);
    assert.equal(steps[0], 'POST MCP /mcp 401');
    assert.ok(steps.includes('GET MCP /.well-known/oauth-protected-resource/mcp 200'), steps.join('\n'));
    assert.ok(steps.some((s) => /^GET AS \/\.well-known\/(oauth-authorization-server|openid-configuration) 200$/.test(s)), steps.join('\n'));
    const registration = log.find((r) => r.method === 'POST' && r.url.origin === as.issuer && r.status === 201);
    assert.ok(registration, 'dynamic client registration (RFC 7591)');
    assert.ok(steps.indexOf('GET MCP /.well-known/oauth-protected-resource/mcp 200') < log.indexOf(registration));

    // The authorization request: PKCE S256, resource = the MCP server (RFC 8707), the challenged scope.
    assert.equal(provider.visits.length, 1);
    const authorize = provider.visits[0]!.url.searchParams;
    assert.equal(authorize.get('code_challenge_method'), 'S256');
    assert.ok((authorize.get('code_challenge') ?? '').length >= 43);
    assert.equal(authorize.get('resource'), notes.url);
    assert.equal(authorize.get('scope'), 'notes:read');

    // 2. Back from the "browser": exchange the code, then connect again with the token.
    await first.transport.finishAuth(provider.takeAuthorizationCode());
    const tokenRequest = log.find((r) => r.method === 'POST' && r.url.origin === as.issuer && r.body?.includes('grant_type=authorization_code'));
    assert.ok(tokenRequest && tokenRequest.status === 200, 'token request');
    const tokenForm = new URLSearchParams(tokenRequest.body);
    assert.equal(tokenForm.get('resource'), notes.url);
    assert.ok(tokenForm.get('code_verifier'));
    assert.deepEqual(tokenScopes(provider), ['notes:read']);
    assert.equal(decodeJwt(provider.tokens()!.access_token).aud, notes.url);
    await first.client.close();

    const { client, transport, connected } = connectNew(provider, log);
    await connected;
    try {
      // 3. tools/list filtered by the token's scopes.
      const { tools } = await client.listTools();
      assert.deepEqual(tools.map((t) => t.name), ['whoami', 'notes_list']);
      const who = JSON.parse(textOf(await client.callTool({ name: 'whoami', arguments: {} })));
      assert.equal(who.subject, as.users.get(DEMO_USERNAME)!.accountId);

      // 4. notes_add needs notes:write: 403 insufficient_scope; the SDK authorizes again for the challenged scope.
      const before403 = log.length;
      await assert.rejects(client.callTool({ name: 'notes_add', arguments: { text: 'from the SDK client' } }), UnauthorizedError);
      const denied = log.slice(before403).find((r) => r.status === 403);
      assert.ok(denied, 'the call was answered 403 first');
      assert.equal(provider.visits.length, 2);
      const stepUpScope = (provider.visits[1]!.url.searchParams.get('scope') ?? '').split(' ').sort();
      // Our challenge names granted ∪ needed, so the SDK 1.x client (which replaces its scope) keeps notes:read.
      assert.deepEqual(stepUpScope, ['notes:read', 'notes:write']);
      await transport.finishAuth(provider.takeAuthorizationCode());
      assert.deepEqual(tokenScopes(provider), ['notes:read', 'notes:write']);

      // 5. The same call now succeeds, and the list grows.
      const added = await client.callTool({ name: 'notes_add', arguments: { text: 'from the SDK client' } });
      assert.equal(added.isError, undefined);
      assert.equal(textOf(added), 'added note #1');
      assert.deepEqual(notes.store.list(ownerKey(as.issuer, who.subject)), ['from the SDK client']);
      assert.deepEqual((await client.listTools()).tools.map((t) => t.name), ['whoami', 'notes_list', 'notes_add']);
    } finally {
      await client.close();
    }
  });

  test('with refresh tokens, the SDK 1.x client refreshes on 403 instead of asking for the scope; the application recovers by authorizing for the challenged scope', async () => {
    const log: Recorded[] = [];
    const provider = new HeadlessOAuthClientProvider({
      redirectUrl,
      username: DEMO_USERNAME,
      password: DEMO_PASSWORD,
      grantTypes: ['authorization_code', 'refresh_token'],
    });
    const first = connectNew(provider, log);
    await assert.rejects(first.connected, UnauthorizedError);
    await first.transport.finishAuth(provider.takeAuthorizationCode());
    assert.ok(provider.tokens()?.refresh_token, 'the authorization server issued a refresh token');
    await first.client.close();

    const { client, transport, connected } = connectNew(provider, log);
    await connected;
    try {
      // The SDK answers the 403 by refreshing (same scopes), is refused again and gives up.
      const before403 = log.length;
      await assert.rejects(client.callTool({ name: 'notes_add', arguments: { text: 'x' } }), (e: unknown) => e instanceof StreamableHTTPError && e.code === 403);
      assert.equal(provider.visits.length, 1, 'no new authorization was started');
      const refreshed = log.slice(before403).some((r) => r.url.origin === as.issuer && r.body?.includes('grant_type=refresh_token'));
      assert.ok(refreshed, 'the SDK refreshed instead of authorizing');
      // Application-level recovery: drop the tokens and authorize for the scope the last 403 named
      // (granted ∪ needed), read from the challenge by the application's fetch wrapper.
      const challenge = log.filter((r) => r.status === 403).at(-1)!.wwwAuthenticate!;
      const scope = /\bscope="([^"]*)"/.exec(challenge)![1]!;
      provider.invalidateCredentials('tokens');
      assert.equal(await auth(provider, { serverUrl: notes.url, scope }), 'REDIRECT');
      assert.deepEqual((provider.visits[1]!.url.searchParams.get('scope') ?? '').split(' ').sort(), ['notes:read', 'notes:write']);
      await transport.finishAuth(provider.takeAuthorizationCode());
      const added = await client.callTool({ name: 'notes_add', arguments: { text: 'x' } });
      assert.equal(added.isError, undefined);
    } finally {
      await client.close();
    }
  });
});
