// Two guards chained: the gateway in front of the notes example, which mcp-oauth-guard protects with its own
// audience. Each MCP_AUTH_UPSTREAM_AUTH mode, what the upstream receives, and the refusals.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { decodeJwt } from 'jose';
import { startNotesServer, type RunningNotesServer } from '../../../examples/notes-server.js';
import { loadGatewayConfig } from '../../../src/gateway/config/gateway-config.js';
import { startGateway, type RunningGateway } from '../../../src/gateway/server/start-gateway.js';
import { startAuthorizationServer, type AuthorizationServer } from '../../../examples/dev/authorization-server.js';
import { postMcp } from '../../helpers/http-client.js';

const NOTES_SCOPES = ['notes:read', 'notes:write', 'notes:admin'];

let as: AuthorizationServer;
let notes: RunningNotesServer;
/** A reverse proxy in front of the notes server: it records what reaches the upstream and can refuse a token once. */
let front: Server;
let upstreamUrl: string;
const seen: (string | undefined)[] = [];
const refuseOnce = new Set<string>();
const grants: string[] = [];
const gateways: RunningGateway[] = [];
const dir = mkdtempSync(join(tmpdir(), 'upstream-auth-'));

async function startFront(): Promise<string> {
  front = createServer((req, res) => {
    const authorization = req.headers.authorization;
    if (req.url?.startsWith('/mcp')) seen.push(authorization);
    if (authorization !== undefined && refuseOnce.delete(authorization)) {
      req.resume();
      res.writeHead(401, { 'WWW-Authenticate': 'Bearer error="invalid_token"', 'Content-Length': '0' }).end();
      return;
    }
    // Where the notes server listens (its resource URL names this front).
    const { port } = notes.server.address() as AddressInfo;
    const out = request({ host: '127.0.0.1', port, method: req.method, path: req.url, headers: req.headers }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    out.on('error', () => res.destroy());
    req.pipe(out);
  });
  front.listen(0, '127.0.0.1');
  await once(front, 'listening');
  return `http://127.0.0.1:${(front.address() as AddressInfo).port}/mcp`;
}

async function gatewayWith(settings: Record<string, string>): Promise<{ gateway: RunningGateway; callerToken: (sub: string) => Promise<string> }> {
  const gateway = await startGateway(loadGatewayConfig({ MCP_AUTH_UPSTREAM: upstreamUrl, MCP_AUTH_ISSUER: as.issuer, PORT: '0', ...settings }), { log: () => {}, warn: () => {} });
  gateways.push(gateway);
  as.addResource(gateway.resource, { scopes: ['mcp:basic'] });
  return { gateway, callerToken: (sub) => as.issueAccessToken({ resource: gateway.resource, scope: 'mcp:basic', sub }) };
}

const whoami = { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'whoami', arguments: {} } };

/** Calls whoami through the gateway; returns the answer and what the notes server said about its caller. */
async function callWhoami(gateway: RunningGateway, token: string): Promise<{ status: number; json: any; identity?: { subject: string | null; client: string; scopes: string[] } }> {
  const answer = await postMcp(gateway.resource, whoami, token);
  const text = answer.json?.result?.content?.[0]?.text;
  return { status: answer.status, json: answer.json, ...(typeof text === 'string' ? { identity: JSON.parse(text) } : {}) };
}

function clientSettings(mode: 'client_credentials' | 'token_exchange'): Record<string, string> {
  return { MCP_AUTH_UPSTREAM_AUTH: mode, MCP_AUTH_UPSTREAM_CLIENT_ID: as.serviceClient.clientId, MCP_AUTH_UPSTREAM_CLIENT_SECRET: as.serviceClient.clientSecret, MCP_AUTH_UPSTREAM_SCOPE: 'notes:read' };
}

describe('gateway credentials for a protected upstream (MCP_AUTH_UPSTREAM_AUTH)', () => {
  before(async () => {
    as = await startAuthorizationServer({
      extraScopes: ['mcp:basic'],
      allowTokenExchange: (subject) => subject.sub !== 'mallory',
    });
    as.provider.on('grant.success', (ctx) => grants.push(String((ctx as { oidc: { params: { grant_type: unknown } } }).oidc.params.grant_type)));
    upstreamUrl = await startFront();
    // The notes server's resource is the URL it is reached at, through the front proxy.
    notes = await startNotesServer({ issuer: as.issuer, resource: upstreamUrl });
    as.addResource(upstreamUrl, { scopes: NOTES_SCOPES });
  });

  after(async () => {
    for (const gateway of gateways) await gateway.shutdown();
    front?.closeAllConnections();
    front?.close();
    await notes?.close();
    await as?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('none: the caller token is not forwarded, the upstream answers 401, and the caller gets 502', async () => {
    const { gateway, callerToken } = await gatewayWith({});
    const token = await callerToken('alice');
    seen.length = 0;
    const answer = await callWhoami(gateway, token);
    assert.equal(answer.status, 502);
    assert.deepEqual(seen, [undefined]);
  });

  it('static: MCP_AUTH_UPSTREAM_TOKEN is sent as the Bearer token', async () => {
    const staticToken = await as.issueAccessToken({ resource: upstreamUrl, scope: 'notes:read', sub: 'gateway-service' });
    const { gateway, callerToken } = await gatewayWith({ MCP_AUTH_UPSTREAM_AUTH: 'static', MCP_AUTH_UPSTREAM_TOKEN: staticToken });
    seen.length = 0;
    const answer = await callWhoami(gateway, await callerToken('alice'));
    assert.equal(answer.status, 200);
    assert.equal(answer.identity?.subject, 'gateway-service');
    assert.deepEqual(seen, [`Bearer ${staticToken}`]);
  });

  it('static: a rotated MCP_AUTH_UPSTREAM_TOKEN_FILE is read again when the upstream refuses the old token', async () => {
    const file = join(dir, 'token');
    writeFileSync(file, 'not-a-valid-token\n');
    const { gateway, callerToken } = await gatewayWith({ MCP_AUTH_UPSTREAM_AUTH: 'static', MCP_AUTH_UPSTREAM_TOKEN_FILE: file });
    const token = await callerToken('alice');
    // The file's token is refused, and it has not changed: nothing to retry with.
    assert.equal((await callWhoami(gateway, token)).status, 502);
    const rotated = await as.issueAccessToken({ resource: upstreamUrl, scope: 'notes:read', sub: 'rotated' });
    writeFileSync(file, `${rotated}\n`);
    seen.length = 0;
    const answer = await callWhoami(gateway, token);
    assert.equal(answer.status, 200);
    assert.equal(answer.identity?.subject, 'rotated');
    assert.equal(seen.at(-1), `Bearer ${rotated}`);
  });

  it('client_credentials: one token for the upstream audience, shared by concurrent requests, renewed once on a 401', async () => {
    const { gateway, callerToken } = await gatewayWith(clientSettings('client_credentials'));
    const token = await callerToken('alice');
    grants.length = 0;
    seen.length = 0;
    const answers = await Promise.all([callWhoami(gateway, token), callWhoami(gateway, token), callWhoami(gateway, token)]);
    for (const answer of answers) assert.equal(answer.status, 200);
    assert.deepEqual(grants, ['client_credentials']);
    assert.equal(new Set(seen).size, 1);
    const sent = String(seen[0]).replace(/^Bearer /, '');
    assert.notEqual(sent, token);
    const claims = decodeJwt(sent);
    assert.equal(claims.aud, upstreamUrl);
    assert.equal(claims.client_id, as.serviceClient.clientId);
    assert.equal(claims.scope, 'notes:read');
    assert.equal(answers[0]!.identity?.client, as.serviceClient.clientId);

    // The upstream refuses the cached token once: the gateway gets one new token and sends the request again.
    refuseOnce.add(String(seen[0]));
    seen.length = 0;
    const retried = await callWhoami(gateway, token);
    assert.equal(retried.status, 200);
    assert.deepEqual(grants, ['client_credentials', 'client_credentials']);
    assert.equal(seen.length, 2);
    assert.notEqual(seen[0], seen[1]);
    assert.equal(decodeJwt(String(seen[1]).replace(/^Bearer /, '')).aud, upstreamUrl);
  });

  it("token_exchange: the upstream gets a token for its audience whose sub is the caller's, one exchange per caller token", async () => {
    const { gateway, callerToken } = await gatewayWith(clientSettings('token_exchange'));
    const alice = await callerToken('alice');
    grants.length = 0;
    seen.length = 0;
    const first = await callWhoami(gateway, alice);
    assert.equal(first.status, 200);
    assert.equal(first.identity?.subject, 'alice');
    const again = await callWhoami(gateway, alice);
    assert.equal(again.status, 200);
    assert.deepEqual(grants, ['urn:ietf:params:oauth:grant-type:token-exchange']);
    assert.equal(seen[0], seen[1]);
    const sent = String(seen[0]).replace(/^Bearer /, '');
    assert.notEqual(sent, alice);
    const claims = decodeJwt(sent);
    assert.equal(claims.aud, upstreamUrl);
    assert.equal(claims.sub, 'alice');
    assert.equal(claims.scope, 'notes:read');

    const bob = await callWhoami(gateway, await callerToken('bob'));
    assert.equal(bob.identity?.subject, 'bob');
    assert.equal(grants.length, 2);
    for (const header of seen) assert.ok(header !== `Bearer ${alice}`);
  });

  it('token_exchange: an exchange the authorization server refuses is 403 with a JSON-RPC error, and nothing reaches the upstream', async () => {
    const { gateway, callerToken } = await gatewayWith(clientSettings('token_exchange'));
    seen.length = 0;
    const answer = await callWhoami(gateway, await callerToken('mallory'));
    assert.equal(answer.status, 403);
    assert.equal(answer.json.id, 1);
    assert.match(answer.json.error.message, /refused the gateway a token.*invalid_grant/);
    assert.deepEqual(seen, []);
  });

  it("token_exchange: the upstream's authorization server unreachable is 503 with Retry-After", async () => {
    const closed = createServer();
    closed.listen(0, '127.0.0.1');
    await once(closed, 'listening');
    const deadIssuer = `http://127.0.0.1:${(closed.address() as AddressInfo).port}`;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const { gateway, callerToken } = await gatewayWith({ ...clientSettings('token_exchange'), MCP_AUTH_UPSTREAM_ISSUER: deadIssuer });
    seen.length = 0;
    const answer = await postMcp(gateway.resource, whoami, await callerToken('alice'));
    assert.equal(answer.status, 503);
    assert.match(String(answer.headers['retry-after']), /^\d+$/);
    assert.equal(answer.json.id, 1);
    assert.equal(answer.json.error.code, -31503, 'the unavailable code, as for the guard\'s own authorization server');
    assert.deepEqual(seen, []);
  });
});
