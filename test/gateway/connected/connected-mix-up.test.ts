// The mix-up attack of RFC 9700 §4.4 on connected accounts, end to end: a gateway with two connected servers, `a`
// and `b`, each behind its own authorization server, where `b`'s server is hostile. When alice's browser comes to
// b's authorization endpoint, b sends it on to a's instead, with the gateway's client id at a and b's own `state`.
// a redirects to the gateway's redirect URI for a; the gateway must refuse there, and never take a's code to b's
// token endpoint (where b would get the code and the PKCE verifier). The pending authorization is left untouched,
// so alice's real authorization at b still completes.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { startAuthorizationServer, type AuthorizationServer } from '../../../examples/dev/authorization-server.js';
import { startNotesServer, type RunningNotesServer } from '../../../examples/notes-server.js';
import { loadGatewayConfig } from '../../../src/gateway/config/gateway-config.js';
import { upstreamCallbackUrl } from '../../../src/gateway/connected/oauth/gateway-client-urls.js';
import { startGateway, type RunningGateway } from '../../../src/gateway/server/start-gateway.js';
import { CONNECTED_USERS, LOGIN_CLIENT, NOTES_SCOPES, STORE_KEY, startConnectedAccountsParts, UPSTREAM_CLIENT, type ConnectedAccountsParts } from '../../helpers/connected-accounts.js';
import { messages, postMcp } from '../../helpers/http-client.js';
import { PageBrowser } from './pages/page-browser.js';

const ALICE = CONNECTED_USERS[0];
const SESSION_VERSION = '2025-11-25';

/** One connected server: its authorization server, its notes server, and the requests to its token endpoint. */
interface Upstream {
  as: AuthorizationServer;
  notes: RunningNotesServer;
  tokenRequests: number;
}

let parts: ConnectedAccountsParts;
let gateway: RunningGateway | undefined;
const upstreams: Partial<Record<'a' | 'b', Upstream>> = {};

/** Starts `server`'s authorization server, with the gateway's client registered with that server's redirect URI. */
async function startUpstream(server: 'a' | 'b'): Promise<Upstream> {
  const as = await startAuthorizationServer({ users: [...CONNECTED_USERS], clients: [{ ...UPSTREAM_CLIENT, redirectUris: [upstreamCallbackUrl(parts.origin, server)] }] });
  const upstream: Upstream = { as, notes: await startNotesServer({ issuer: as.issuer }), tokenRequests: 0 };
  as.addResource(upstream.notes.url, { scopes: NOTES_SCOPES });
  // Every request to oidc-provider's token endpoint ends in one of these two events.
  for (const event of ['grant.success', 'grant.error'] as const) as.provider.on(event, () => void upstream.tokenRequests++);
  return upstream;
}

before(async () => {
  parts = await startConnectedAccountsParts();
  upstreams.a = await startUpstream('a');
  upstreams.b = await startUpstream('b');
  const auth = { mode: 'connected', clientId: UPSTREAM_CLIENT.clientId, clientSecretEnv: 'UPSTREAM_SECRET', scope: 'notes:read' };
  const servers = { a: { url: upstreams.a.notes.url, auth }, b: { url: upstreams.b.notes.url, auth } };
  const file = join(parts.tempDir, 'gateway.json');
  writeFileSync(file, JSON.stringify({ gateway: { issuer: parts.gatewayAs.issuer, host: '127.0.0.1', port: parts.port, loginClientId: LOGIN_CLIENT.clientId, tokenStore: parts.storeDir }, servers }));
  const env = { PATH: process.env.PATH, MCP_AUTH_CONFIG: file, UPSTREAM_SECRET: UPSTREAM_CLIENT.clientSecret, MCP_AUTH_TOKEN_STORE_SECRET: STORE_KEY, MCP_AUTH_LOGIN_CLIENT_SECRET: LOGIN_CLIENT.clientSecret };
  gateway = await startGateway(loadGatewayConfig(env), { log: () => {}, warn: () => {} });
  parts.trustGateway(gateway.resource);
});

after(async () => {
  await gateway?.shutdown();
  for (const upstream of Object.values(upstreams)) {
    await upstream.notes.close();
    await upstream.as.close();
  }
  await parts?.close();
});

/** The connect link alice's client is given for server `b` (a 2025-11-25 session declaring URL elicitation). */
async function connectLinkForB(): Promise<string> {
  const token = await parts.callerToken(gateway!.resource, 'alice');
  const init = await postMcp(gateway!.resource, { jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: SESSION_VERSION, capabilities: { elicitation: { url: {} } }, clientInfo: { name: 't', version: '1' } } }, token);
  assert.equal(init.status, 200, init.text);
  const headers = { 'mcp-session-id': String(init.headers['mcp-session-id']), 'mcp-protocol-version': SESSION_VERSION };
  await postMcp(gateway!.resource, { jsonrpc: '2.0', method: 'notifications/initialized' }, token, headers);
  const answer = await postMcp(gateway!.resource, { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'b__notes_list', arguments: {} } }, token, headers);
  const error = messages(answer).find((message) => 'error' in message)?.error as { code: number; data: { elicitations: { url: string }[] } } | undefined;
  assert.equal(error?.code, -32042, answer.text);
  return error.data.elicitations[0]!.url;
}

describe('connected accounts: mix-up defence (RFC 9700 §4.4)', { timeout: 60_000 }, () => {
  it("refuses a's code brought back with b's state, never calls b's token endpoint, and b's own authorization still completes", async () => {
    const { a, b } = upstreams as Required<typeof upstreams>;
    const browser = new PageBrowser(parts.origin);
    const toLogin = await browser.request(await connectLinkForB());
    assert.equal(toLogin.status, 302, toLogin.body);
    const afterLogin = await browser.request(await browser.signIn(toLogin.headers.get('location')!, ALICE, parts.callback));
    assert.equal(afterLogin.status, 302, afterLogin.body);
    const toB = new URL(afterLogin.headers.get('location')!);
    assert.equal(toB.origin, b.as.issuer);
    assert.equal(toB.searchParams.get('redirect_uri'), upstreamCallbackUrl(parts.origin, 'b'));

    // b, hostile, sends the browser to a's authorization endpoint with the gateway's client at a and b's state.
    const toA = new URL(`${a.as.issuer}/auth`);
    for (const name of ['state', 'code_challenge', 'code_challenge_method', 'response_type', 'scope']) toA.searchParams.set(name, toB.searchParams.get(name)!);
    toA.searchParams.set('client_id', UPSTREAM_CLIENT.clientId);
    toA.searchParams.set('redirect_uri', upstreamCallbackUrl(parts.origin, 'a'));
    toA.searchParams.set('resource', a.notes.url);
    const fromA = await browser.signIn(toA, ALICE, upstreamCallbackUrl(parts.origin, 'a'));
    assert.ok(fromA.searchParams.get('code'), `a issued a code: ${fromA.href}`);
    assert.equal(fromA.searchParams.get('state'), toB.searchParams.get('state'));
    const refused = await browser.request(fromA);
    assert.equal(refused.status, 400, refused.body);
    assert.equal(b.tokenRequests, 0, "a's code was never sent to b's token endpoint");
    assert.equal(a.tokenRequests, 0, 'nor exchanged anywhere');

    // Nothing was taken: alice's real authorization at b, with the same state, completes.
    const done = await browser.request(await browser.signIn(toB, ALICE, upstreamCallbackUrl(parts.origin, 'b')));
    assert.equal(done.status, 200, done.body);
    assert.match(done.body, /Connected to/);
    assert.equal(b.tokenRequests, 1);
  });
});
