// /readyz with upstream credentials (MCP_AUTH_UPSTREAM_AUTH): the probe uses the gateway's credential, so a wrong
// one makes /readyz 503 instead of 200 while every call fails. The upstream is the notes example, which requires a
// token for its own audience; tokens come from a real authorization server (oidc-provider).
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { startNotesServer, type RunningNotesServer } from '../../../examples/notes-server.js';
import { loadGatewayConfig } from '../../../src/gateway/config/gateway-config.js';
import { startGateway, type RunningGateway } from '../../../src/gateway/server/start-gateway.js';
import { startAuthorizationServer, type AuthorizationServer } from '../../../examples/dev/authorization-server.js';
import { postMcp } from '../../helpers/http-client.js';

const WRONG_SECRET = 'wrong-secret-that-must-not-be-shown';

let as: AuthorizationServer;
let notes: RunningNotesServer;
/** What reached the notes server: the Authorization of each request, in order. */
const seen: (string | undefined)[] = [];
let front: Server;
const grants: string[] = [];
const gateways: RunningGateway[] = [];

async function gatewayWith(settings: Record<string, string>, readinessCacheMs = 0): Promise<RunningGateway> {
  const gateway = await startGateway(loadGatewayConfig({ MCP_AUTH_UPSTREAM: notes.url, MCP_AUTH_ISSUER: as.issuer, PORT: '0', MCP_AUTH_HTTP_TIMEOUT_MS: '2000', ...settings }), {
    log: () => {},
    warn: () => {},
    readinessCacheMs,
  });
  gateways.push(gateway);
  return gateway;
}

async function readyz(gateway: RunningGateway): Promise<{ status: number; text: string; body: Record<string, any> }> {
  const answer = await fetch(`${gateway.url}/readyz`, { signal: AbortSignal.timeout(10_000) });
  const text = await answer.text();
  return { status: answer.status, text, body: JSON.parse(text) as Record<string, any> };
}

function clientSettings(mode: 'client_credentials' | 'token_exchange', secret = as.serviceClient.clientSecret): Record<string, string> {
  return { MCP_AUTH_UPSTREAM_AUTH: mode, MCP_AUTH_UPSTREAM_CLIENT_ID: as.serviceClient.clientId, MCP_AUTH_UPSTREAM_CLIENT_SECRET: secret, MCP_AUTH_UPSTREAM_SCOPE: 'notes:read' };
}

describe('/readyz with upstream credentials', () => {
  before(async () => {
    as = await startAuthorizationServer({ extraScopes: ['mcp:basic'] });
    as.provider.on('grant.success', (ctx) => grants.push(String((ctx as { oidc: { params: { grant_type: unknown } } }).oidc.params.grant_type)));
    notes = await startNotesServer({ issuer: as.issuer });
    as.addResource(notes.url, { scopes: ['notes:read', 'notes:write', 'notes:admin'] });
    notes.server.prependListener('request', (req) => {
      if (req.url?.startsWith('/mcp')) seen.push(req.headers.authorization);
    });
    // Stands in for an authorization server that is down: a port nothing listens on.
    front = createServer();
    front.listen(0, '127.0.0.1');
    await once(front, 'listening');
  });
  after(async () => {
    for (const gateway of gateways) await gateway.shutdown();
    front?.close();
    await notes?.close();
    await as?.close();
  });

  it('static: a token the upstream refuses makes /readyz 503, without showing the token', async () => {
    const wrong = 'static-token-the-upstream-refuses';
    const gateway = await gatewayWith({ MCP_AUTH_UPSTREAM_AUTH: 'static', MCP_AUTH_UPSTREAM_TOKEN: wrong });
    seen.length = 0;
    const answer = await readyz(gateway);
    assert.equal(answer.status, 503);
    assert.equal(answer.body.status, 'not_ready');
    assert.deepEqual(answer.body.issuers, { ok: true });
    assert.deepEqual(answer.body.upstream, { ok: false, reason: "the upstream refused the gateway's credential (MCP_AUTH_UPSTREAM_AUTH): HTTP 401" });
    assert.ok(!answer.text.includes(wrong));
    assert.deepEqual(seen, [`Bearer ${wrong}`], 'the probe sent the credential');
  });

  it('static: a token the upstream accepts: 200', async () => {
    const token = await as.issueAccessToken({ resource: notes.url, scope: 'notes:read', sub: 'gateway-service' });
    const gateway = await gatewayWith({ MCP_AUTH_UPSTREAM_AUTH: 'static', MCP_AUTH_UPSTREAM_TOKEN: token });
    seen.length = 0;
    const answer = await readyz(gateway);
    assert.equal(answer.status, 200, answer.text);
    assert.deepEqual(answer.body.upstream, { ok: true });
    assert.deepEqual(seen, [`Bearer ${token}`]);
  });

  it('client_credentials: a wrong client secret makes /readyz 503 naming the refusal, never the secret', async () => {
    const gateway = await gatewayWith(clientSettings('client_credentials', WRONG_SECRET));
    seen.length = 0;
    const answer = await readyz(gateway);
    assert.equal(answer.status, 503);
    assert.deepEqual(answer.body.upstream, { ok: false, reason: "the upstream's authorization server refused the gateway's token request (invalid_client)" });
    assert.ok(!answer.text.includes(WRONG_SECRET));
    assert.deepEqual(seen, [], 'no ping without the credential');
    // A call meets the same refusal: 403, not "could not be reached" (the server's 401 is a challenge).
    as.addResource(gateway.resource, { scopes: ['mcp:basic'] });
    const caller = await as.issueAccessToken({ resource: gateway.resource, scope: 'mcp:basic', sub: 'alice' });
    const call = await postMcp(gateway.resource, { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'whoami', arguments: {} } }, caller);
    assert.equal(call.status, 403);
    assert.equal(call.json.error.message, "Forbidden: the upstream MCP server's authorization server refused the gateway a token for this request (invalid_client)");
    assert.deepEqual(seen, []);
  });

  it('client_credentials: the right secret: 200, and the token is fetched once, not per probe', async () => {
    const gateway = await gatewayWith(clientSettings('client_credentials'));
    grants.length = 0;
    seen.length = 0;
    for (let i = 0; i < 5; i++) {
      const answer = await readyz(gateway);
      assert.equal(answer.status, 200, answer.text);
      assert.deepEqual(answer.body.upstream, { ok: true });
    }
    assert.deepEqual(grants, ['client_credentials'], 'one token request for five probes');
    assert.equal(seen.length, 5);
    assert.ok(seen.every((value) => value !== undefined && value === seen[0]), 'every probe sent the one cached token');
  });

  it('client_credentials: answers are cached for the probe interval: many /readyz hits, one probe', async () => {
    const gateway = await gatewayWith(clientSettings('client_credentials'), 60_000);
    grants.length = 0;
    seen.length = 0;
    const answers = await Promise.all(Array.from({ length: 10 }, () => readyz(gateway)));
    assert.ok(answers.every((answer) => answer.status === 200));
    assert.deepEqual(grants, ['client_credentials']);
    assert.equal(seen.length, 1);
  });

  it('token_exchange: ready when the upstream and its authorization server can be reached; no token is requested', async () => {
    const gateway = await gatewayWith(clientSettings('token_exchange'));
    grants.length = 0;
    const answer = await readyz(gateway);
    assert.equal(answer.status, 200, answer.text);
    assert.deepEqual(answer.body.upstream, { ok: true });
    assert.deepEqual(grants, []);
  });

  it("token_exchange: the upstream's authorization server unreachable makes /readyz 503", async () => {
    const down = `http://127.0.0.1:${(front.address() as AddressInfo).port}`;
    front.close();
    const gateway = await gatewayWith({ ...clientSettings('token_exchange'), MCP_AUTH_UPSTREAM_ISSUER: down });
    const answer = await readyz(gateway);
    assert.equal(answer.status, 503);
    assert.match(answer.body.upstream.reason, /^the upstream's authorization server, which exchanges each caller's token, is not reachable: /);
    assert.ok(!answer.text.includes(as.serviceClient.clientSecret));
  });
});
