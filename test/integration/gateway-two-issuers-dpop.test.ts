// The gateway with two real authorization servers (oidc-provider) trusted at once and DPoP allowed: tokens of
// either are served, a third server's are refused naming its issuer, and DPoP-bound tokens work with
// openid-client's proofs, through the gateway to an upstream that never sees a token or a proof.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import * as client from 'openid-client';
import { loadGatewayConfig } from '../../src/gateway/config/gateway-config.js';
import { startGateway, type RunningGateway } from '../../src/gateway/server/start-gateway.js';
import { startAuthorizationServer, type AuthorizationServer } from '../../examples/dev/authorization-server.js';

const SCOPES = ['mcp:basic'];
const toolsList = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' });
const jsonHeaders = (): Headers => new Headers({ 'content-type': 'application/json', accept: 'application/json, text/event-stream' });

describe('the gateway with two trusted issuers and DPoP', () => {
  let first: AuthorizationServer;
  let second: AuthorizationServer;
  let untrusted: AuthorizationServer;
  let upstream: Server;
  let gateway: RunningGateway;
  const seenUpstream: IncomingHttpHeaders[] = [];

  before(async () => {
    [first, second, untrusted] = await Promise.all([0, 1, 2].map(() => startAuthorizationServer({ extraScopes: SCOPES })));
    upstream = createServer((req, res) => {
      seenUpstream.push(req.headers);
      req.resume();
      req.once('end', () => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ jsonrpc: '2.0', id: 1, result: { tools: [{ name: 'hello', inputSchema: { type: 'object' } }] } }));
      });
    }).listen(0, '127.0.0.1');
    await once(upstream, 'listening');
    const config = loadGatewayConfig({
      MCP_AUTH_UPSTREAM: `http://127.0.0.1:${(upstream.address() as AddressInfo).port}/mcp`,
      // Space-separated, as an operator may write it.
      MCP_AUTH_ISSUER: `${first.issuer} ${second.issuer}`,
      MCP_AUTH_DPOP: 'allow',
      HOST: '127.0.0.1',
      PORT: '0',
    });
    gateway = await startGateway(config, { log: () => {}, warn: () => {} });
    for (const as of [first, second, untrusted]) as.addResource(gateway.resource, { scopes: SCOPES });
  });
  after(async () => {
    await gateway?.shutdown();
    upstream?.closeAllConnections();
    upstream?.close();
    await Promise.all([first, second, untrusted].map((as) => as?.close()));
  });

  const bearer = (token: string): Promise<Response> => {
    const headers = jsonHeaders();
    headers.set('authorization', `Bearer ${token}`);
    return fetch(gateway.resource, { method: 'POST', headers, body: toolsList, signal: AbortSignal.timeout(10_000) });
  };

  test('the metadata names both issuers and offers DPoP', async () => {
    const metadata = (await (await fetch(`${gateway.url}/.well-known/oauth-protected-resource/mcp`)).json()) as { authorization_servers: string[]; dpop_signing_alg_values_supported: string[] };
    assert.deepEqual(metadata.authorization_servers, [first.issuer, second.issuer]);
    assert.ok(metadata.dpop_signing_alg_values_supported.includes('ES256'));
  });

  test("a token of either trusted issuer is served; a third issuer's is refused, naming it", async () => {
    for (const as of [first, second]) {
      const res = await bearer(await as.issueAccessToken({ resource: gateway.resource, scope: 'mcp:basic', sub: 'alice' }));
      assert.equal(res.status, 200, `${as.issuer}: ${await res.clone().text()}`);
      assert.equal(((await res.json()) as { result: { tools: unknown[] } }).result.tools.length, 1);
    }
    const refused = await bearer(await untrusted.issueAccessToken({ resource: gateway.resource, scope: 'mcp:basic', sub: 'mallory' }));
    assert.equal(refused.status, 401);
    const challenge = refused.headers.get('www-authenticate') ?? '';
    assert.match(challenge, new RegExp(`error_description="access token was issued by ${untrusted.issuer.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} \\(iss\\), which is not a trusted issuer`));
    assert.equal(((await refused.json()) as { error: { code: number } }).error.code, -31401);

    // Refused at once, with the keys already held: the same answer a verification that waited would give.
    const expired = await bearer(await first.issueAccessToken({ resource: gateway.resource, scope: 'mcp:basic', sub: 'alice', expiresIn: -60 }));
    assert.equal(expired.status, 401);
    assert.match(expired.headers.get('www-authenticate') ?? '', /^Bearer error="invalid_token", error_description="access token expired", resource_metadata="[^"]+", DPoP algs="[^"]+", resource_metadata="[^"]+"$/);
    assert.equal(((await expired.json()) as { error: { code: number } }).error.code, -31401);
  });

  /** A client of the second issuer with a DPoP-bound token, calling the gateway with openid-client's proofs. */
  async function dpopClient(): Promise<{ accessToken: string; tokenType: string; call: () => Promise<Response>; lastProof: () => string | undefined }> {
    const { clientId, clientSecret } = second.serviceClient;
    const config = await client.discovery(new URL(second.issuer), clientId, clientSecret, client.ClientSecretBasic(clientSecret), { execute: [client.allowInsecureRequests] });
    let lastProof: string | undefined;
    config[client.customFetch] = (url, init) => {
      if (url === gateway.resource) lastProof = new Headers(init.headers).get('dpop') ?? undefined;
      return fetch(url, init as RequestInit);
    };
    const dpop = client.getDPoPHandle(config, await client.randomDPoPKeyPair('ES256'));
    const tokens = await client.clientCredentialsGrant(config, { scope: 'mcp:basic', resource: gateway.resource }, { DPoP: dpop });
    const call = (): Promise<Response> =>
      client.fetchProtectedResource(config, tokens.access_token, new URL(gateway.resource), 'POST', toolsList, jsonHeaders(), { DPoP: dpop }).catch((error: unknown) => {
        if (error instanceof client.WWWAuthenticateChallengeError) return error.response;
        throw error;
      });
    return { accessToken: tokens.access_token, tokenType: tokens.token_type, call, lastProof: () => lastProof };
  }

  test('a DPoP-bound token of the second issuer works with proofs, not as Bearer, and a replayed proof is refused', async () => {
    const { accessToken, tokenType, call, lastProof: proofSent } = await dpopClient();
    assert.equal(tokenType, 'dpop');
    for (let i = 0; i < 2; i++) {
      const res = await call();
      assert.equal(res.status, 200, await res.clone().text());
    }

    const asBearer = await bearer(accessToken);
    assert.equal(asBearer.status, 401);
    assert.match(asBearer.headers.get('www-authenticate') ?? '', /^Bearer error="invalid_token", error_description="token is DPoP-bound/);
    assert.equal(((await asBearer.json()) as { error: { code: number } }).error.code, -31401);

    // The last proof, sent again as it was: RFC 9449 §11.1.
    const lastProof = proofSent();
    assert.ok(lastProof);
    const headers = jsonHeaders();
    headers.set('authorization', `DPoP ${accessToken}`);
    headers.set('dpop', lastProof);
    const replayed = await fetch(gateway.resource, { method: 'POST', headers, body: toolsList });
    assert.equal(replayed.status, 401);
    assert.match(replayed.headers.get('www-authenticate') ?? '', /DPoP error="invalid_dpop_proof", error_description="DPoP proof was already used/);
    assert.equal(((await replayed.json()) as { error: { code: number } }).error.code, -31401);
  });

  test('the upstream never saw a token, a proof or a cookie', async () => {
    // Its own calls, so that it holds run alone too: a Bearer token with a cookie, and a DPoP-bound token with its proof.
    const before = seenUpstream.length;
    const headers = jsonHeaders();
    headers.set('authorization', `Bearer ${await first.issueAccessToken({ resource: gateway.resource, scope: 'mcp:basic', sub: 'alice' })}`);
    headers.set('cookie', 'session=s3cret');
    assert.equal((await fetch(gateway.resource, { method: 'POST', headers, body: toolsList, signal: AbortSignal.timeout(10_000) })).status, 200);
    assert.equal((await (await dpopClient()).call()).status, 200);
    assert.equal(seenUpstream.length, before + 2, 'both calls reached the upstream');
    for (const headers of seenUpstream) {
      assert.equal(headers.authorization, undefined);
      assert.equal(headers.dpop, undefined);
      assert.equal(headers.cookie, undefined);
    }
  });
});
