// DPoP end to end: oidc-provider issues DPoP-bound JWT and opaque access tokens (RFC 9449 §5), openid-client makes
// the proofs (its DPoP handle, as an MCP client would), the notes example behind the guard checks them.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import * as client from 'openid-client';
import { startNotesServer, type RunningNotesServer } from '../../examples/notes-server.js';
import { startAuthorizationServer, type AuthorizationServer } from '../../examples/dev/authorization-server.js';

const NOTES_SCOPES = ['notes:read', 'notes:write', 'notes:admin'];
const toolsList = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' });
const jsonHeaders = () => new Headers({ 'content-type': 'application/json', accept: 'application/json, text/event-stream' });

describe('DPoP with oidc-provider tokens and openid-client proofs', () => {
  let as: AuthorizationServer;
  let notes: RunningNotesServer;
  let required: RunningNotesServer;
  let config: client.Configuration;

  before(async () => {
    as = await startAuthorizationServer();
    notes = await startNotesServer({ issuer: as.issuer });
    required = await startNotesServer({ issuer: as.issuer, dpop: 'require' });
    as.addResource(notes.url, { scopes: NOTES_SCOPES });
    as.addResource(required.url, { scopes: NOTES_SCOPES });
    const { clientId, clientSecret } = as.serviceClient;
    config = await client.discovery(new URL(as.issuer), clientId, clientSecret, client.ClientSecretBasic(clientSecret), { execute: [client.allowInsecureRequests] });
  });
  after(async () => {
    await notes?.close();
    await required?.close();
    await as?.close();
  });

  /** A DPoP-bound token for `resource`, and the handle that signs proofs with its key. */
  async function boundToken(resource: string, scope = 'notes:read'): Promise<{ token: string; dpop: client.DPoPHandle }> {
    const dpop = client.getDPoPHandle(config, await client.randomDPoPKeyPair('ES256'));
    const tokens = await client.clientCredentialsGrant(config, { scope, resource }, { DPoP: dpop });
    assert.equal(tokens.token_type, 'dpop', 'oidc-provider bound the token to the proof key');
    return { token: tokens.access_token, dpop };
  }

  /** One tools/list through openid-client; a refusal (which it throws as a challenge error) is returned as is. */
  const call = (url: string, token: string, dpop?: client.DPoPHandle): Promise<Response> =>
    client
      .fetchProtectedResource(config, token, new URL(url), 'POST', toolsList, jsonHeaders(), dpop ? { DPoP: dpop } : undefined)
      .catch((error: unknown) => {
        if (error instanceof client.WWWAuthenticateChallengeError) return error.response;
        throw error;
      });

  test('the metadata announces DPoP, and the bare 401 challenges with both schemes', async () => {
    const metadata = await (await fetch(`${new URL(notes.url).origin}/.well-known/oauth-protected-resource/mcp`)).json();
    assert.ok(metadata.dpop_signing_alg_values_supported.includes('ES256'));
    const bare = await fetch(notes.url, { method: 'POST', headers: jsonHeaders(), body: toolsList });
    assert.equal(bare.status, 401);
    assert.match(bare.headers.get('www-authenticate') ?? '', /^Bearer .*, DPoP algs="[^"]*ES256[^"]*", .*resource_metadata="/);
  });

  test('a DPoP-bound JWT with openid-client proofs works, request after request (a fresh proof each time)', async () => {
    const { token, dpop } = await boundToken(notes.url);
    for (let i = 0; i < 3; i++) {
      const res = await call(notes.url, token, dpop);
      assert.equal(res.status, 200, await res.clone().text());
      const body = await res.json();
      assert.ok(Array.isArray(body.result.tools));
    }
  });

  test('the same token sent as Bearer is refused with invalid_token, naming DPoP', async () => {
    const { token } = await boundToken(notes.url);
    const headers = jsonHeaders();
    headers.set('authorization', `Bearer ${token}`);
    const res = await fetch(notes.url, { method: 'POST', headers, body: toolsList });
    assert.equal(res.status, 401);
    const challenge = res.headers.get('www-authenticate') ?? '';
    assert.match(challenge, /^Bearer error="invalid_token", error_description="token is DPoP-bound/);
    assert.match(challenge, /, DPoP algs="/);
  });

  test('a proof from another key than the token is bound to is refused', async () => {
    const { token } = await boundToken(notes.url);
    const stranger = client.getDPoPHandle(config, await client.randomDPoPKeyPair('ES256'));
    const res = await call(notes.url, token, stranger);
    assert.equal(res.status, 401);
    assert.match(res.headers.get('www-authenticate') ?? '', /DPoP error="invalid_token", error_description="token is bound to another key/);
  });

  test('require mode: a plain Bearer token from the same server is turned away; a DPoP-bound one is served', async () => {
    const plain = await client.clientCredentialsGrant(config, { scope: 'notes:read', resource: required.url });
    assert.equal(plain.token_type, 'bearer');
    const refused = await call(required.url, plain.access_token);
    assert.equal(refused.status, 401);
    assert.match(refused.headers.get('www-authenticate') ?? '', /^DPoP error="invalid_token", error_description="this resource accepts only DPoP-bound/);
    const { token, dpop } = await boundToken(required.url);
    assert.equal((await call(required.url, token, dpop)).status, 200);
  });

  test('an opaque DPoP-bound token, checked by introspection, follows the same rules', async () => {
    const opaque = await startNotesServer({
      issuer: as.issuer,
      introspection: { clientId: as.serviceClient.clientId, clientSecret: as.serviceClient.clientSecret },
    });
    try {
      as.addResource(opaque.url, { scopes: NOTES_SCOPES, accessTokenFormat: 'opaque' });
      const { token, dpop } = await boundToken(opaque.url);
      assert.equal(token.split('.').length, 1, 'an opaque token');
      assert.equal((await call(opaque.url, token, dpop)).status, 200);
      const asBearer = await call(opaque.url, token);
      assert.equal(asBearer.status, 401);
      assert.match(asBearer.headers.get('www-authenticate') ?? '', /error="invalid_token", error_description="token is DPoP-bound/);
    } finally {
      await opaque.close();
    }
  });
});
