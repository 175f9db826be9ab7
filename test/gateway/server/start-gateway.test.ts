import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { startAuthorizationServer, type AuthorizationServer } from '../../../examples/dev/authorization-server.js';
import { loadGatewayConfig } from '../../../src/gateway/config/gateway-config.js';
import { startGateway, type RunningGateway } from '../../../src/gateway/server/start-gateway.js';
import { DPOP_SIGNING_ALGORITHMS } from '../../../src/core/dpop/dpop-proof.js';

let as: AuthorizationServer;
let upstream: Server;
let gateway: RunningGateway;
let token: string;
const lines: string[] = [];

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}
const streamReached = deferred();
const callReached = deferred();
const releaseCall = deferred();

/**
 * An upstream whose GET stream never ends by itself, and whose tools/call answers over SSE: a progress
 * event at once, the result when the test resolves `releaseCall`.
 */
function startUpstream(): Promise<string> {
  upstream = createServer((req, res) => {
    if (req.method === 'GET') {
      res.writeHead(200, { 'Content-Type': 'text/event-stream' });
      res.write(': open\n\n');
      streamReached.resolve();
      return;
    }
    req.resume();
    req.once('end', () => {
      res.writeHead(200, { 'Content-Type': 'text/event-stream' });
      res.write('event: message\ndata: {"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}\n\n');
      callReached.resolve();
      void releaseCall.promise.then(() => res.end('event: message\ndata: {"jsonrpc":"2.0","id":1,"result":{"content":[]}}\n\n'));
    });
  });
  upstream.listen(0, '127.0.0.1');
  return once(upstream, 'listening').then(() => `http://127.0.0.1:${(upstream.address() as AddressInfo).port}/mcp`);
}

describe('startGateway', () => {
  before(async () => {
    as = await startAuthorizationServer({ extraScopes: ['mcp:basic'] });
    const config = loadGatewayConfig({
      MCP_AUTH_UPSTREAM: await startUpstream(),
      MCP_AUTH_ISSUER: as.issuer,
      PORT: '0',
      // Far beyond the test's timeout: a shutdown that waited for the deadline fails the test.
      MCP_AUTH_SHUTDOWN_TIMEOUT_MS: '120000',
    });
    gateway = await startGateway(config, { log: (line) => lines.push(line), warn: () => {} });
    as.addResource(gateway.resource, { scopes: ['mcp:basic'] });
    token = await as.issueAccessToken({ resource: gateway.resource, scope: 'mcp:basic', sub: 'user-42' });
  });

  after(async () => {
    await gateway?.shutdown();
    upstream?.closeAllConnections();
    upstream?.close();
    await as?.close();
  });

  it('listens on the real port and serves metadata for the default resource', async () => {
    assert.match(gateway.url, /^http:\/\/127\.0\.0\.1:\d+$/);
    assert.equal(gateway.resource, `${gateway.url}/mcp`);
    const res = await fetch(`${gateway.url}/.well-known/oauth-protected-resource/mcp`, { signal: AbortSignal.timeout(5000) });
    assert.equal(res.status, 200);
    const metadata = (await res.json()) as { resource: string; authorization_servers: string[] };
    assert.equal(metadata.resource, gateway.resource);
    assert.deepEqual(metadata.authorization_servers, [as.issuer]);
  });

  it('serves /healthz, a JSON-RPC 404 elsewhere (asterisk-form targets included), and a bare 401 without a token', async () => {
    const health = await fetch(`${gateway.url}/healthz`, { signal: AbortSignal.timeout(5000) });
    assert.equal(health.status, 200);
    assert.deepEqual(await health.json(), { status: 'ok' });
    const notFound = { jsonrpc: '2.0', id: null, error: { code: -32601, message: 'Not found: the MCP endpoint is at the path of the resource URL' } };
    const other = await fetch(`${gateway.url}/elsewhere?x=1`, { method: 'POST', signal: AbortSignal.timeout(5000) });
    assert.equal(other.status, 404);
    assert.deepEqual(await other.json(), notFound);
    // A request target that is no path at all (RFC 9112 §3.2.4) reaches neither the endpoint nor a crash.
    const raw = await new Promise<string>((resolve, reject) => {
      const socket = connect(Number(new URL(gateway.url).port), '127.0.0.1');
      let text = '';
      socket.setEncoding('utf8');
      socket.on('data', (chunk: string) => (text += chunk));
      socket.on('error', reject);
      socket.on('end', () => resolve(text));
      socket.write(`OPTIONS * HTTP/1.1\r\nHost: ${new URL(gateway.url).host}\r\nConnection: close\r\n\r\n`);
    });
    assert.match(raw, /^HTTP\/1\.1 404 /);
    assert.deepEqual(JSON.parse(raw.slice(raw.indexOf('\r\n\r\n') + 4)), notFound);
    const anonymous = await fetch(gateway.resource, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'tools/list' }),
      signal: AbortSignal.timeout(5000),
    });
    assert.equal(anonymous.status, 401);
    // No policy here, so no scope to ask for: the bare challenge names the metadata only (RFC 6750 §3, RFC 9728 §5.1).
    const metadataUrl = `${gateway.url}/.well-known/oauth-protected-resource/mcp`;
    assert.equal(anonymous.headers.get('www-authenticate'), `Bearer resource_metadata="${metadataUrl}", DPoP algs="${DPOP_SIGNING_ALGORITHMS.join(' ')}", resource_metadata="${metadataUrl}"`);
    assert.deepEqual(await anonymous.json(), { jsonrpc: '2.0', id: 9, error: { code: -31401, message: 'Authorization required: send an OAuth 2.1 access token as "Authorization: Bearer <token>"' } });
    // The next test reads the request log from the start.
    lines.length = 0;
  });

  it('on shutdown ends standalone GET streams at once, lets a call in progress finish, and logs each request', { timeout: 20_000 }, async () => {
    const headers = { Authorization: `Bearer ${token}`, Accept: 'application/json, text/event-stream' };
    const stream = await fetch(gateway.resource, { headers, signal: AbortSignal.timeout(5000) });
    assert.equal(stream.status, 200);
    const streamText = stream.text();
    const call = fetch(gateway.resource, {
      method: 'POST',
      headers: { ...headers, 'Content-Type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'slow', arguments: {} } }),
      signal: AbortSignal.timeout(5000),
    });
    await Promise.all([streamReached.promise, callReached.promise]);
    const heldFrom = performance.now();
    assert.equal(gateway.proxy.inFlight, 2);

    const stopping = gateway.shutdown();
    assert.equal(await streamText, ': open\n\n', 'the GET stream is ended cleanly');
    // The call is still in progress through the shutdown; the upstream finishes it only now.
    assert.equal(gateway.proxy.inFlight, 1);
    const held = performance.now() - heldFrom;
    releaseCall.resolve();
    const answer = await call;
    assert.equal(answer.status, 200);
    assert.match(await answer.text(), /"id":1/);
    await stopping;
    await assert.rejects(fetch(`${gateway.url}/healthz`, { signal: AbortSignal.timeout(2000) }));

    const entries = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
    const get = entries.find((e) => e.httpMethod === 'GET' && e.path === '/mcp');
    const post = entries.find((e) => e.httpMethod === 'POST' && e.path === '/mcp');
    assert.ok(get && post, lines.join('\n'));
    assert.equal(get.decision, 'allow');
    assert.equal(get.status, 200);
    assert.deepEqual(
      { method: post.method, name: post.name, decision: post.decision, reason: post.reason, subject: post.subject, status: post.status },
      { method: 'tools/call', name: 'slow', decision: 'allow', reason: 'allowed', subject: 'user-42', status: 200 },
    );
    // The logged duration covers the streamed answer, which the upstream held open at least `held` ms.
    assert.ok(typeof post.durationMs === 'number' && post.durationMs >= Math.floor(held), `${post.durationMs} < ${held}`);
    assert.ok(!lines.join('\n').includes(token));
  });
});
