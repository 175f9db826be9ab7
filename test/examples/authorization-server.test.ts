import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { createRemoteJWKSet, decodeJwt, decodeProtectedHeader, errors as joseErrors, jwtVerify } from 'jose';
import {
  DEMO_PASSWORD,
  DEMO_SCOPES,
  DEMO_USERNAME,
  SERVICE_CLIENT_ID,
  startAuthorizationServer,
  type AuthorizationServer,
} from '../../examples/authorization-server.js';
import { authorizeAsHeadlessUser, createCookieJar } from '../../examples/headless-user.js';

// Nothing listens on port 1; these are only audience values.
const MCP = 'http://127.0.0.1:1/mcp';
const OTHER = 'http://127.0.0.1:1/other';
const OPAQUE = 'http://127.0.0.1:1/opaque';

interface TokenResponse {
  access_token: string;
  refresh_token?: string;
  scope?: string;
  token_type: string;
  expires_in: number;
}

async function registerPublicClient(as: AuthorizationServer, body: Record<string, unknown>): Promise<Response> {
  return fetch(`${as.issuer}/reg`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      application_type: 'native',
      token_endpoint_auth_method: 'none',
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      ...body,
    }),
  });
}

function pkcePair(): { verifier: string; challenge: string } {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
}

/** Authorization code + PKCE with the scripted user; the redirect URI need not be listening. */
async function authorizeWithCode(
  as: AuthorizationServer,
  clientId: string,
  redirectUri: string,
  params: Record<string, string>,
  options: { password?: string; cookies?: ReturnType<typeof createCookieJar> } = {},
): Promise<{ callback: URL; verifier: string }> {
  const { verifier, challenge } = pkcePair();
  const url = new URL(`${as.issuer}/auth`);
  url.search = new URLSearchParams({
    client_id: clientId,
    response_type: 'code',
    redirect_uri: redirectUri,
    code_challenge: challenge,
    code_challenge_method: 'S256',
    state: 'st',
    ...params,
  }).toString();
  const callback = await authorizeAsHeadlessUser(url, {
    username: DEMO_USERNAME,
    password: options.password ?? DEMO_PASSWORD,
    redirectUri,
    cookies: options.cookies,
  });
  return { callback, verifier };
}

async function tokenRequest(as: AuthorizationServer, body: Record<string, string>, basic?: string): Promise<Response> {
  return fetch(`${as.issuer}/token`, {
    method: 'POST',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      ...(basic ? { authorization: `Basic ${basic}` } : {}),
    },
    body: new URLSearchParams(body),
  });
}

describe('demo authorization server', () => {
  let as: AuthorizationServer;
  let jwks: ReturnType<typeof createRemoteJWKSet>;
  const serviceBasic = () =>
    Buffer.from(`${encodeURIComponent(as.serviceClient.clientId)}:${encodeURIComponent(as.serviceClient.clientSecret)}`).toString('base64');

  before(async () => {
    as = await startAuthorizationServer({
      resources: {
        [MCP]: { scopes: DEMO_SCOPES },
        [OTHER]: { scopes: ['notes:read'] },
        [OPAQUE]: { scopes: DEMO_SCOPES, accessTokenFormat: 'opaque' },
      },
      defaultResource: MCP,
    });
    jwks = createRemoteJWKSet(new URL(as.jwksUri));
  });
  after(() => as.close());

  it('serves RFC 8414 metadata with registration, PKCE S256, public clients and the notes scopes', async () => {
    const response = await fetch(`${as.issuer}/.well-known/oauth-authorization-server`);
    assert.equal(response.status, 200);
    const metadata = (await response.json()) as Record<string, unknown>;
    assert.equal(metadata.issuer, as.issuer);
    assert.match(as.issuer, /^http:\/\/127\.0\.0\.1:\d+$/);
    assert.equal(metadata.registration_endpoint, `${as.issuer}/reg`);
    assert.deepEqual(metadata.code_challenge_methods_supported, ['S256']);
    assert.ok((metadata.token_endpoint_auth_methods_supported as string[]).includes('none'));
    assert.deepEqual(metadata.response_types_supported, ['code']);
    for (const scope of [...DEMO_SCOPES, 'openid', 'offline_access']) {
      assert.ok((metadata.scopes_supported as string[]).includes(scope), scope);
    }
    assert.equal(metadata.jwks_uri, as.jwksUri);
    assert.equal(metadata.introspection_endpoint, `${as.issuer}/token/introspection`);
    // Off unless asked for.
    assert.equal(metadata.client_id_metadata_document_supported, undefined);
    const oidc = await fetch(`${as.issuer}/.well-known/openid-configuration`);
    assert.equal(oidc.status, 200);
  });

  it('mints a JWT access token whose aud is the resource and iss the issuer, verifiable with the JWKS', async () => {
    const token = await as.issueAccessToken({ resource: MCP, scope: 'notes:read notes:write', sub: 'alice' });
    const header = decodeProtectedHeader(token);
    assert.equal(header.alg, 'ES256');
    assert.equal(header.typ, 'at+jwt');
    const { payload } = await jwtVerify(token, jwks, { issuer: as.issuer, audience: MCP, typ: 'at+jwt' });
    assert.equal(payload.aud, MCP);
    assert.equal(payload.iss, as.issuer);
    assert.equal(payload.sub, 'alice');
    assert.equal(payload.scope, 'notes:read notes:write');
    assert.equal(payload.client_id, SERVICE_CLIENT_ID);
    // The default access token lifetime, from the token's own claims (no clock involved).
    assert.ok(typeof payload.exp === 'number' && typeof payload.iat === 'number');
    assert.equal(payload.exp - payload.iat, 3600);
  });

  it('mints a token for another resource with that audience, which the MCP audience check refuses', async () => {
    const token = await as.issueAccessToken({ resource: OTHER, scope: 'notes:read', sub: 'alice' });
    const { payload } = await jwtVerify(token, jwks, { issuer: as.issuer, audience: OTHER });
    assert.equal(payload.aud, OTHER);
    await assert.rejects(jwtVerify(token, jwks, { issuer: as.issuer, audience: MCP }), (error: unknown) => {
      assert.ok(error instanceof joseErrors.JWTClaimValidationFailed);
      assert.equal(error.claim, 'aud');
      return true;
    });
  });

  it('mints expired tokens, tokens without a user and extra claims on request', async () => {
    const expired = await as.issueAccessToken({ resource: MCP, scope: 'notes:read', expiresIn: -30 });
    await assert.rejects(jwtVerify(expired, jwks, { issuer: as.issuer, audience: MCP }), joseErrors.JWTExpired);
    const service = await as.issueAccessToken({ resource: MCP, scope: 'notes:read', expiresIn: 5, extra: { tenant: 't1' } });
    const claims = decodeJwt(service);
    assert.equal(claims.sub, SERVICE_CLIENT_ID);
    assert.equal(claims.tenant, 't1');
    assert.equal((claims.exp as number) - (claims.iat as number), 5);
    await assert.rejects(as.issueAccessToken({ resource: 'http://127.0.0.1:1/unknown', scope: 'notes:read' }), /unknown resource/);
  });

  it('issues client_credentials tokens for a known resource and refuses unknown ones with invalid_target', async () => {
    const ok = await tokenRequest(as, { grant_type: 'client_credentials', scope: 'notes:read notes:bogus', resource: MCP }, serviceBasic());
    assert.equal(ok.status, 200);
    const tokens = (await ok.json()) as TokenResponse;
    const { payload } = await jwtVerify(tokens.access_token, jwks, { issuer: as.issuer, audience: MCP });
    assert.equal(payload.scope, 'notes:read');
    const bad = await tokenRequest(as, { grant_type: 'client_credentials', scope: 'notes:read', resource: 'http://127.0.0.1:1/unknown' }, serviceBasic());
    assert.equal(bad.status, 400);
    assert.equal(((await bad.json()) as { error: string }).error, 'invalid_target');
  });

  it('registers public native clients without binding them to the registered scope', async () => {
    const response = await registerPublicClient(as, { redirect_uris: ['http://127.0.0.1:5555/callback'], scope: 'notes:read', client_name: 'test' });
    assert.equal(response.status, 201);
    const client = (await response.json()) as Record<string, unknown>;
    assert.equal(client.token_endpoint_auth_method, 'none');
    assert.equal(client.client_secret, undefined);
    assert.equal(client.scope, undefined, 'a registered scope would cap every later authorization');
    const web = await registerPublicClient(as, { application_type: 'native', redirect_uris: ['http://example.com/callback'] });
    assert.equal(web.status, 400, 'native http redirects must be loopback');
  });

  it('runs authorization code + PKCE for a registered client, then step-up, then refresh', async () => {
    const registered = (await (
      await registerPublicClient(as, { redirect_uris: ['http://127.0.0.1:5555/callback'], scope: 'notes:read' })
    ).json()) as { client_id: string };
    const clientId = registered.client_id;
    // RFC 8252 section 7.3: any port on the loopback interface.
    const redirectUri = 'http://127.0.0.1:6123/callback';

    const first = await authorizeWithCode(as, clientId, redirectUri, { scope: 'notes:read', resource: MCP });
    assert.equal(first.callback.searchParams.get('state'), 'st');
    assert.equal(first.callback.searchParams.get('iss'), as.issuer);
    const code = first.callback.searchParams.get('code');
    assert.ok(code, `no code in ${first.callback.href}`);
    const exchanged = await tokenRequest(as, {
      grant_type: 'authorization_code',
      code,
      redirect_uri: redirectUri,
      code_verifier: first.verifier,
      client_id: clientId,
      resource: MCP,
    });
    assert.equal(exchanged.status, 200);
    const tokens = (await exchanged.json()) as TokenResponse;
    assert.equal(tokens.token_type, 'Bearer');
    assert.equal(tokens.scope, 'notes:read');
    assert.ok(tokens.refresh_token, 'refresh token issued without offline_access');
    const { payload } = await jwtVerify(tokens.access_token, jwks, { issuer: as.issuer, audience: MCP });
    assert.equal(payload.sub, 'demo');
    assert.equal(payload.client_id, clientId);
    assert.equal(payload.scope, 'notes:read');

    // Step-up: same client, more scope than it registered with, a fresh browser (login again).
    const second = await authorizeWithCode(as, clientId, 'http://127.0.0.1:6124/callback', {
      scope: 'notes:read notes:write',
      resource: MCP,
    });
    const code2 = second.callback.searchParams.get('code');
    assert.ok(code2, `step-up failed: ${second.callback.href}`);
    const stepped = (await (
      await tokenRequest(as, {
        grant_type: 'authorization_code',
        code: code2,
        redirect_uri: 'http://127.0.0.1:6124/callback',
        code_verifier: second.verifier,
        client_id: clientId,
        resource: MCP,
      })
    ).json()) as TokenResponse;
    assert.equal(stepped.scope, 'notes:read notes:write');
    assert.equal(decodeJwt(stepped.access_token).aud, MCP);

    // Refresh without naming the resource again keeps the granted audience.
    const refreshed = await tokenRequest(as, { grant_type: 'refresh_token', refresh_token: stepped.refresh_token!, client_id: clientId });
    assert.equal(refreshed.status, 200);
    const again = (await refreshed.json()) as TokenResponse;
    const claims = (await jwtVerify(again.access_token, jwks, { issuer: as.issuer, audience: MCP })).payload;
    assert.equal(claims.scope, 'notes:read notes:write');
    assert.notEqual(again.refresh_token, stepped.refresh_token, 'public clients get rotated refresh tokens');
  });

  it('keeps the sign-in session: a second authorization with the same cookies skips the login page', async () => {
    const { client_id: clientId } = (await (
      await registerPublicClient(as, { redirect_uris: ['http://127.0.0.1:5555/callback'] })
    ).json()) as { client_id: string };
    const cookies = createCookieJar();
    const pages: string[] = [];
    const { verifier, challenge } = pkcePair();
    const start = (scope: string) =>
      `${as.issuer}/auth?${new URLSearchParams({ client_id: clientId, response_type: 'code', redirect_uri: 'http://127.0.0.1:5555/callback', code_challenge: challenge, code_challenge_method: 'S256', scope, resource: MCP })}`;
    const onStep = (step: { page?: string }) => step.page && pages.push(step.page);
    await authorizeAsHeadlessUser(start('notes:read'), { username: DEMO_USERNAME, password: DEMO_PASSWORD, redirectUri: 'http://127.0.0.1:5555/callback', cookies, onStep });
    assert.deepEqual(pages, ['login', 'consent']);
    pages.length = 0;
    const callback = await authorizeAsHeadlessUser(start('notes:read notes:admin'), { username: DEMO_USERNAME, password: DEMO_PASSWORD, redirectUri: 'http://127.0.0.1:5555/callback', cookies, onStep });
    assert.deepEqual(pages, ['consent']);
    const tokens = (await (
      await tokenRequest(as, { grant_type: 'authorization_code', code: callback.searchParams.get('code')!, redirect_uri: 'http://127.0.0.1:5555/callback', code_verifier: verifier, client_id: clientId })
    ).json()) as TokenResponse;
    // No resource at the token endpoint: the one granted at authorization is used.
    assert.equal(decodeJwt(tokens.access_token).aud, MCP);
    assert.equal(tokens.scope, 'notes:read notes:admin');
  });

  it('refuses a wrong password, a missing PKCE challenge and an unknown resource', async () => {
    const { client_id: clientId } = (await (
      await registerPublicClient(as, { redirect_uris: ['http://127.0.0.1:5555/callback'] })
    ).json()) as { client_id: string };
    await assert.rejects(
      authorizeWithCode(as, clientId, 'http://127.0.0.1:5555/callback', { scope: 'notes:read', resource: MCP }, { password: 'nope' }),
      /HTTP 401.*Wrong username or password/,
    );

    const noPkce = await fetch(
      `${as.issuer}/auth?${new URLSearchParams({ client_id: clientId, response_type: 'code', redirect_uri: 'http://127.0.0.1:5555/callback', scope: 'notes:read', resource: MCP, state: 'x' })}`,
      { redirect: 'manual' },
    );
    assert.equal(noPkce.status, 303);
    const noPkceRedirect = new URL(noPkce.headers.get('location')!);
    assert.equal(noPkceRedirect.searchParams.get('error'), 'invalid_request');
    assert.match(noPkceRedirect.searchParams.get('error_description') ?? '', /PKCE/);

    const { challenge } = pkcePair();
    const unknown = await fetch(
      `${as.issuer}/auth?${new URLSearchParams({ client_id: clientId, response_type: 'code', redirect_uri: 'http://127.0.0.1:5555/callback', scope: 'notes:read', resource: 'http://127.0.0.1:1/unknown', code_challenge: challenge, code_challenge_method: 'S256' })}`,
      { redirect: 'manual' },
    );
    assert.equal(new URL(unknown.headers.get('location')!).searchParams.get('error'), 'invalid_target');
  });

  it('issues opaque tokens for an opaque resource, answered by introspection with the audience', async () => {
    const { client_id: clientId } = (await (
      await registerPublicClient(as, { redirect_uris: ['http://127.0.0.1:5555/callback'] })
    ).json()) as { client_id: string };
    const { callback, verifier } = await authorizeWithCode(as, clientId, 'http://127.0.0.1:5555/callback', { scope: 'notes:write', resource: OPAQUE });
    const tokens = (await (
      await tokenRequest(as, { grant_type: 'authorization_code', code: callback.searchParams.get('code')!, redirect_uri: 'http://127.0.0.1:5555/callback', code_verifier: verifier, client_id: clientId, resource: OPAQUE })
    ).json()) as TokenResponse;
    assert.equal(tokens.access_token.split('.').length, 1);
    const response = await fetch(`${as.issuer}/token/introspection`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: `Basic ${serviceBasic()}` },
      body: new URLSearchParams({ token: tokens.access_token }),
    });
    const introspection = (await response.json()) as Record<string, unknown>;
    assert.equal(introspection.active, true);
    assert.equal(introspection.aud, OPAQUE);
    assert.equal(introspection.scope, 'notes:write');
    assert.equal(introspection.sub, 'demo');
  });

  it('adds resources after start', async () => {
    const late = 'http://127.0.0.1:2/mcp';
    await assert.rejects(as.issueAccessToken({ resource: late, scope: 'notes:read' }));
    as.addResource(late, { scopes: ['notes:read'] });
    const token = await as.issueAccessToken({ resource: late, scope: 'notes:read' });
    assert.equal(decodeJwt(token).aud, late);
    assert.throws(() => as.addResource('not a url', { scopes: ['x'] }), /invalid resource URI/);
  });
});

describe('demo authorization server options', () => {
  it('signs with RS256 when asked', async () => {
    const as = await startAuthorizationServer({ signingAlg: 'RS256', resources: { [MCP]: { scopes: DEMO_SCOPES } } });
    try {
      const token = await as.issueAccessToken({ resource: MCP, scope: 'notes:read', sub: 'demo' });
      assert.equal(decodeProtectedHeader(token).alg, 'RS256');
      await jwtVerify(token, createRemoteJWKSet(new URL(as.jwksUri)), { issuer: as.issuer, audience: MCP });
    } finally {
      await as.close();
    }
  });

  it('accepts Client ID Metadata Documents when enabled', async () => {
    const clientId = 'https://client.example.test/mcp-client.json';
    const fetched: string[] = [];
    const as = await startAuthorizationServer({
      resources: { [MCP]: { scopes: DEMO_SCOPES } },
      clientIdMetadataDocuments: {
        // Serves the document from memory: tests have no network, and the AS refuses loopback fetches.
        fetch: async (url) => {
          fetched.push(String(url));
          return Response.json(
            {
              client_id: clientId,
              client_name: 'CIMD test client',
              application_type: 'native',
              redirect_uris: ['http://127.0.0.1/callback'],
              grant_types: ['authorization_code', 'refresh_token'],
              response_types: ['code'],
              token_endpoint_auth_method: 'none',
            },
            { headers: { 'cache-control': 'max-age=60' } },
          );
        },
      },
    });
    try {
      const metadata = (await (await fetch(`${as.issuer}/.well-known/oauth-authorization-server`)).json()) as Record<string, unknown>;
      assert.equal(metadata.client_id_metadata_document_supported, true);
      const redirectUri = 'http://127.0.0.1:7001/callback';
      const { callback, verifier } = await authorizeWithCode(as, clientId, redirectUri, { scope: 'notes:read', resource: MCP });
      assert.deepEqual(fetched, [clientId]);
      const response = await tokenRequest(as, {
        grant_type: 'authorization_code',
        code: callback.searchParams.get('code')!,
        redirect_uri: redirectUri,
        code_verifier: verifier,
        client_id: clientId,
        resource: MCP,
      });
      assert.equal(response.status, 200);
      const tokens = (await response.json()) as TokenResponse;
      const claims = decodeJwt(tokens.access_token);
      assert.equal(claims.client_id, clientId);
      assert.equal(claims.aud, MCP);
    } finally {
      await as.close();
    }
  });
});
