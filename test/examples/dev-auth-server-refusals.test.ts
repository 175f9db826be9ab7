// `npm run auth-server` says why it refuses, over real HTTP: a request asking for no scope and a resource it does
// not know get an error_description on the redirect and the same words in its log. With --resource '*' it accepts
// any loopback resource, started after it, and refuses other hosts, saying so. And the official SDK 1.x client,
// registered for refresh tokens, steps up through it: its refresh on a 403 is refused, so it signs in again.
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { decodeJwt } from 'jose';
import { DEMO_PASSWORD, DEMO_USERNAME, startAuthorizationServer } from '../../examples/dev/authorization-server.js';
import { signInToDevelopmentServer } from 'mcp-oauth-guard/client';
import { startNotesServer, type RunningNotesServer } from '../../examples/notes-server.js';
import { HeadlessOAuthClientProvider } from '../fixtures/sdk-oauth-provider.js';
import { freePort } from '../helpers/free-port.js';
import { runScript, startScript, type StartedProcess } from '../helpers/run-cli.js';

const AUTH_SERVER = fileURLToPath(new URL('../../examples/dev/auth-server.ts', import.meta.url));
const TOKEN = fileURLToPath(new URL('../../examples/dev/token.ts', import.meta.url));
const SCOPES = 'notes:read,notes:write,notes:admin';
/** A redirect URI nothing listens on: the tests read the redirect's Location instead of following it. */
const REDIRECT_URI = 'http://127.0.0.1:9/callback';

async function registerPublicClient(issuer: string, grantTypes: string[] = ['authorization_code']): Promise<string> {
  const response = await fetch(`${issuer}/reg`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ token_endpoint_auth_method: 'none', grant_types: grantTypes, response_types: ['code'], redirect_uris: [REDIRECT_URI] }),
  });
  assert.equal(response.status, 201);
  return ((await response.json()) as { client_id: string }).client_id;
}

function pkce(): { verifier: string; challenge: string } {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
}

/** The authorization request's URL: PKCE S256, the client's redirect URI, and `params`. */
function authorizationUrl(issuer: string, clientId: string, challenge: string, params: Record<string, string>): URL {
  const url = new URL(`${issuer}/auth`);
  url.search = new URLSearchParams({ client_id: clientId, response_type: 'code', redirect_uri: REDIRECT_URI, code_challenge: challenge, code_challenge_method: 'S256', state: 'st', ...params }).toString();
  return url;
}

/** The error redirect an authorization request gets at once, before any sign-in page. */
async function refusalOf(url: URL): Promise<{ error: string | null; description: string }> {
  const response = await fetch(url, { redirect: 'manual' });
  assert.equal(response.status, 303, `a redirect to the client, not a sign-in page: ${response.status}`);
  const location = new URL(response.headers.get('location')!);
  assert.equal(location.origin + location.pathname, REDIRECT_URI, location.href);
  return { error: location.searchParams.get('error'), description: location.searchParams.get('error_description') ?? '' };
}

/** Resolves once the server's output has a line including `text`. */
async function logged(server: StartedProcess, text: string): Promise<string> {
  for (let i = 0; i < 50; i++) {
    const line = server.output().split('\n').find((l) => l.includes(text));
    if (line) return line;
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.fail(`no log line with ${text}:\n${server.output()}`);
}

describe("npm run auth-server -- --resource '*': refusals that say why, and loopback resources added without a restart", () => {
  let server: StartedProcess;
  let issuer: string;
  let notes: RunningNotesServer | undefined;
  let callback: Server | undefined;

  before(async () => {
    server = await startScript(AUTH_SERVER, ['--port', '0', '--resource', '*', '--scopes', SCOPES], 'Ctrl-C stops it.');
    issuer = /authorization server \(development only\): (http:\/\/127\.0\.0\.1:\d+)/.exec(server.output())?.[1] ?? '';
    assert.ok(issuer, server.output());
  });
  after(async () => {
    callback?.close();
    await notes?.close();
    await server?.stop();
  });

  it('says in its banner and its --help that any loopback URL is a resource', async () => {
    assert.match(server.output(), /resource: {3}any loopback URL, e\.g\. http:\/\/127\.0\.0\.1:8080\/mcp or http:\/\/localhost:3000\/mcp {2}\(scopes notes:read notes:write notes:admin\)/);
    const help = await runScript(AUTH_SERVER, ['--help']);
    assert.match(help.stdout, /'\*' accepts any loopback URL/);
  });

  it('refuses a request asking for no scope with invalid_scope, naming the resource and its scopes, before any sign-in, and logs it', async () => {
    const clientId = await registerPublicClient(issuer);
    const resource = `http://127.0.0.1:${await freePort()}/mcp`;
    const { error, description } = await refusalOf(authorizationUrl(issuer, clientId, pkce().challenge, { resource }));
    assert.equal(error, 'invalid_scope');
    assert.ok(description.startsWith(`no scope was requested for ${resource}: ask for one or more of notes:read notes:write notes:admin.`), description);
    assert.match(description, /scopes_supported/);
    const line = await logged(server, `refused authorization for client ${clientId}: invalid_scope`);
    assert.ok(line.includes(description), line);

    const unknown = await refusalOf(authorizationUrl(issuer, clientId, pkce().challenge, { resource, scope: 'notes:raed' }));
    assert.equal(unknown.error, 'invalid_scope');
    assert.equal(unknown.description, `none of the scopes requested (notes:raed) is one ${resource} offers here (notes:read notes:write notes:admin)`);
  });

  it('refuses a resource on another host with invalid_target, saying it is not a loopback URL and how to add it, and logs it', async () => {
    const clientId = await registerPublicClient(issuer);
    const resource = 'http://192.0.2.1:8080/mcp';
    const { error, description } = await refusalOf(authorizationUrl(issuer, clientId, pkce().challenge, { resource, scope: 'notes:read' }));
    assert.equal(error, 'invalid_target');
    assert.ok(description.startsWith(`the resource ${resource} is not a loopback URL, and is not one this authorization server issues tokens for`), description);
    assert.match(description, /needs its own --resource/);
    const line = await logged(server, `refused authorization for client ${clientId}: invalid_target`);
    assert.ok(line.includes(description), line);
    // The token endpoint says the same to `npm run token`.
    const token = await runScript(TOKEN, ['--issuer', issuer, '--resource', resource, '--scope', 'notes:read']);
    assert.equal(token.code, 1);
    assert.ok(token.stderr.includes(`invalid_target: the resource ${resource} is not a loopback URL`), token.stderr);
  });

  it('issues tokens for loopback resources it was never told of, each with that resource as its audience', { timeout: 30_000 }, async () => {
    for (const resource of [`http://127.0.0.1:${await freePort()}/mcp`, `http://localhost:${await freePort()}/other`]) {
      const { code, stdout, stderr } = await runScript(TOKEN, ['--issuer', issuer, '--resource', resource, '--scope', 'notes:read']);
      assert.equal(code, 0, stderr);
      const claims = decodeJwt(stdout.trim());
      assert.equal(claims.aud, resource);
      assert.equal(claims.scope, 'notes:read');
    }
  });

  it('lets the SDK 1.x client registered for refresh tokens step up: its refresh on the 403 is refused, and it signs in again for the scope', { timeout: 60_000 }, async () => {
    // A guarded server started after the authorization server, on a port it was never told of.
    notes = await startNotesServer({ issuer });
    callback = createServer((_req, res) => res.writeHead(200).end('ok'));
    callback.listen(0, '127.0.0.1');
    await once(callback, 'listening');
    const redirectUrl = `http://127.0.0.1:${(callback.address() as AddressInfo).port}/callback`;
    const provider = new HeadlessOAuthClientProvider({ redirectUrl, username: DEMO_USERNAME, password: DEMO_PASSWORD, grantTypes: ['authorization_code', 'refresh_token'] });
    const tokenAnswers: Array<{ grant: string | null; status: number; error?: string }> = [];
    const fetchRecording: typeof fetch = async (input, init) => {
      const response = await fetch(input, init);
      const url = input instanceof Request ? input.url : String(input);
      if (url === `${issuer}/token`) {
        const grant = new URLSearchParams(String(init?.body ?? '')).get('grant_type');
        const body = (await response.clone().json()) as { error?: string };
        tokenAnswers.push({ grant, status: response.status, ...(body.error ? { error: body.error } : {}) });
      }
      return response;
    };
    const transport = new StreamableHTTPClientTransport(new URL(notes.url), { authProvider: provider, fetch: fetchRecording });
    const client = new Client({ name: 'step-up-test', version: '1.0.0' });
    await assert.rejects(client.connect(transport), UnauthorizedError);
    await transport.finishAuth(provider.takeAuthorizationCode());
    assert.ok(provider.tokens()?.refresh_token, 'the client holds a refresh token');
    const session = new Client({ name: 'step-up-test', version: '1.0.0' });
    const sessionTransport = new StreamableHTTPClientTransport(new URL(notes.url), { authProvider: provider, fetch: fetchRecording });
    await session.connect(sessionTransport);
    try {
      // notes_add needs notes:write: 403; the SDK refreshes, is refused (invalid_grant), drops its tokens and signs in again.
      await assert.rejects(session.callTool({ name: 'notes_add', arguments: { text: 'x' } }), UnauthorizedError);
      assert.deepEqual(tokenAnswers.find((answer) => answer.grant === 'refresh_token'), { grant: 'refresh_token', status: 400, error: 'invalid_grant' });
      assert.equal(provider.visits.length, 2, 'a second sign-in');
      assert.deepEqual((provider.visits[1]!.url.searchParams.get('scope') ?? '').split(' ').sort(), ['notes:read', 'notes:write']);
      await sessionTransport.finishAuth(provider.takeAuthorizationCode());
      const added = await session.callTool({ name: 'notes_add', arguments: { text: 'x' } });
      assert.equal(added.isError, undefined);
      assert.deepEqual(String(decodeJwt(provider.tokens()!.access_token).scope).split(' ').sort(), ['notes:read', 'notes:write']);
      const line = await logged(server, ': invalid_grant: refused: the access token issued');
      assert.match(line, /a refresh cannot add scope \(RFC 6749 section 6\)/);
    } finally {
      await session.close();
      await client.close();
    }
  });
});

describe('the early refresh refusal, in the authorization server', () => {
  it('refuses a refresh in the first half of the newest access token\'s life and grants it after; off by default', { timeout: 30_000 }, async () => {
    const resource = 'http://127.0.0.1:1/mcp';
    for (const refuseEarlyRefresh of [true, false]) {
      const as = await startAuthorizationServer({ resources: { [resource]: { scopes: ['notes:read'], accessTokenTtl: 2 } }, refuseEarlyRefresh });
      try {
        const clientId = await registerPublicClient(as.issuer, ['authorization_code', 'refresh_token']);
        const { verifier, challenge } = pkce();
        const redirect = await signInToDevelopmentServer(authorizationUrl(as.issuer, clientId, challenge, { resource, scope: 'notes:read' }), { username: DEMO_USERNAME, password: DEMO_PASSWORD, redirectUri: REDIRECT_URI });
        const token = async (body: Record<string, string>) => {
          const response = await fetch(`${as.issuer}/token`, { method: 'POST', body: new URLSearchParams({ client_id: clientId, ...body }) });
          return { status: response.status, body: (await response.json()) as { refresh_token?: string; error?: string; error_description?: string } };
        };
        const issued = await token({ grant_type: 'authorization_code', code: redirect.searchParams.get('code')!, code_verifier: verifier, redirect_uri: REDIRECT_URI });
        assert.equal(issued.status, 200);
        const early = await token({ grant_type: 'refresh_token', refresh_token: issued.body.refresh_token! });
        if (!refuseEarlyRefresh) {
          assert.equal(early.status, 200, 'granted when the option is off');
          continue;
        }
        assert.equal(early.status, 400);
        assert.equal(early.body.error, 'invalid_grant');
        assert.match(early.body.error_description ?? '', /still valid for \d+ s, and a refresh cannot add scope/);
        // The refused refresh consumed nothing: the same refresh token works once half the token's life (1 s) has passed.
        await new Promise((r) => setTimeout(r, 1_100));
        const later = await token({ grant_type: 'refresh_token', refresh_token: issued.body.refresh_token! });
        assert.equal(later.status, 200, JSON.stringify(later.body));
      } finally {
        await as.close();
      }
    }
  });
});
