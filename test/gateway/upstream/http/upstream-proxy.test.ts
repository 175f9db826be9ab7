import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { Agent as HttpsAgent, createServer as createHttpsServer } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import { after, describe, it } from 'node:test';
import { Agent as UndiciAgent, buildConnector } from 'undici';
import type { AuthInfo } from '../../../../src/core/kernel/auth-info.js';
import { selfSignedCertificate } from '../../../helpers/self-signed-certificate.js';
import { ConfigurationError } from '../../../../src/core/kernel/errors.js';
import { UNKNOWN_REQUEST } from '../../../../src/core/policy/response-filter.js';
import type { GuardedRequest, JsonRpcMessage } from '../../../../src/http/http-handler.js';
import { filterListResponse } from '../../../../src/http/filter-written-response.js';
import { createUpstreamProxy, type UpstreamProxyOptions } from '../../../../src/gateway/upstream/http/upstream-proxy.js';
import { checkIdentityHeaders } from '../../../../src/gateway/upstream/http/identity-headers.js';
import { GATEWAY_JSONRPC_CODE, type SessionRefusal, type UpstreamFailure, type UpstreamProxy } from '../../../../src/gateway/upstream/upstream.js';

const AUTH: AuthInfo = {
  token: 'secret-token-value',
  clientId: 'client-1',
  scopes: ['mcp:read', 'mcp:tools'],
  extra: { sub: 'alice', claims: { sub: 'alice' }, tokenType: 'jwt' },
};

/** Callers by test token: `Authorization: Bearer bob` makes the request bob's. */
const CALLERS: Record<string, AuthInfo> = {
  alice: AUTH,
  'alice-refreshed': { ...AUTH, token: 'another-token', scopes: ['mcp:read'] },
  bob: { ...AUTH, token: 'bob-token', extra: { sub: 'bob', claims: { sub: 'bob' }, tokenType: 'jwt' } },
  'alice-other-client': { ...AUTH, token: 'alice-2', clientId: 'client-2' },
  'alice-other-issuer': { ...AUTH, token: 'alice-3', extra: { ...AUTH.extra, iss: 'https://other.example' } },
  anonymous: { token: 'anon', clientId: '', scopes: [], extra: { claims: {}, tokenType: 'introspection' } },
};

const servers: Server[] = [];
const proxies: UpstreamProxy[] = [];
after(async () => {
  for (const p of proxies) p.close();
  for (const s of servers) {
    s.closeAllConnections();
    s.close();
  }
});

async function listen(server: Server): Promise<string> {
  servers.push(server);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

type UpstreamHandler = (req: IncomingMessage, res: ServerResponse, body: string) => void;

/** A real upstream on 127.0.0.1 that records what it receives. */
async function startUpstream(handle: UpstreamHandler): Promise<{ url: string; received: { method: string; headers: IncomingHttpHeaders; body: string; url: string }[] }> {
  const received: { method: string; headers: IncomingHttpHeaders; body: string; url: string }[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      received.push({ method: req.method ?? '', headers: req.headers, body, url: req.url ?? '' });
      handle(req, res, body);
    });
  });
  return { url: `${await listen(server)}/mcp`, received };
}

/**
 * The part of the guard the proxy relies on: it parses the body into `req.body`, sets `req.auth`, and
 * calls the handler. Kept minimal so these tests exercise the proxy alone.
 */
async function startFront(
  options: UpstreamProxyOptions,
  filterResponse: (request: JsonRpcMessage, response: JsonRpcMessage) => JsonRpcMessage = (_request, response) => response,
): Promise<{ url: string; proxy: UpstreamProxy; failures: UpstreamFailure[]; refusals: SessionRefusal[] }> {
  const failures: UpstreamFailure[] = [];
  const refusals: SessionRefusal[] = [];
  const proxy = createUpstreamProxy({ ...options, onUpstreamError: (_req, f) => failures.push(f), onSessionRefused: (_req, r) => refusals.push(r) });
  proxies.push(proxy);
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      // The bearer token names the test caller; the real guard would have verified it.
      const token = /^Bearer (\S+)$/.exec(req.headers.authorization ?? '')?.[1];
      const auth = (token && CALLERS[token]) || AUTH;
      const guarded = Object.assign(req, { auth, body: text ? JSON.parse(text) : undefined }) as GuardedRequest;
      const controller = new AbortController();
      // As the guard's pipeline does: a GET's stream (a replay above all) is filtered by the shape of its answers.
      if (req.method === 'GET') filterListResponse(res, undefined, (response) => filterResponse(UNKNOWN_REQUEST, response));
      void proxy.handle(guarded, res, { auth, signal: controller.signal, filterResponse });
    });
  });
  return { url: `${await listen(server)}/mcp`, proxy, failures, refusals };
}

function jsonReply(res: ServerResponse, status: number, body: unknown, headers: Record<string, string | string[]> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text), ...headers });
  res.end(text);
}

const CALL = { jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'echo', arguments: { message: 'hi' } } };
const INITIALIZE = { jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } } };

function post(url: string, body: unknown, headers: Record<string, string> = {}, signal?: AbortSignal): Promise<Response> {
  return fetch(url, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', ...headers },
    body: JSON.stringify(body),
    signal: signal ?? AbortSignal.timeout(5000),
  });
}

/** An upstream that opens session `session-1` on `initialize` and answers every other request with a call result. */
function startOneSessionUpstream(): ReturnType<typeof startUpstream> {
  return startUpstream((_req, res, body) =>
    JSON.parse(body).method === 'initialize'
      ? jsonReply(res, 200, { jsonrpc: '2.0', id: 0, result: {} }, { 'Mcp-Session-Id': 'session-1' })
      : jsonReply(res, 200, { jsonrpc: '2.0', id: 7, result: { content: [] } }),
  );
}

describe('createUpstreamProxy', () => {
  it('forwards the allow-listed headers and the parsed body, and never the token or cookies', async () => {
    const upstream = await startOneSessionUpstream();
    const front = await startFront({ upstream: upstream.url });
    await (await post(front.url, INITIALIZE)).arrayBuffer();
    upstream.received.length = 0;
    const res = await post(front.url, CALL, {
      Authorization: 'Bearer secret-token-value',
      Cookie: 'session=abc',
      'Proxy-Authorization': 'Basic eDp5',
      'Mcp-Session-Id': 'session-1',
      'MCP-Protocol-Version': '2025-11-25',
      'Last-Event-ID': 'event-9',
      'Mcp-Method': 'tools/call',
      'Mcp-Name': 'echo',
      'Mcp-Param-Region': 'eu',
      'X-Custom': 'not forwarded',
      'X-Forwarded-For': '10.0.0.1',
      'X-MCP-Subject': 'mallory',
    });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('x-accel-buffering'), null, 'only event streams are marked unbuffered');
    assert.deepEqual(await res.json(), { jsonrpc: '2.0', id: 7, result: { content: [] } });
    assert.equal(upstream.received.length, 1);
    const got = upstream.received[0]!;
    assert.equal(got.method, 'POST');
    assert.equal(got.url, '/mcp');
    assert.deepEqual(JSON.parse(got.body), CALL);
    const h = got.headers;
    assert.equal(h['mcp-session-id'], 'session-1');
    assert.equal(h['mcp-protocol-version'], '2025-11-25');
    assert.equal(h['last-event-id'], 'event-9');
    assert.equal(h['mcp-method'], 'tools/call');
    assert.equal(h['mcp-name'], 'echo');
    assert.equal(h['mcp-param-region'], 'eu');
    assert.equal(h['content-type'], 'application/json');
    assert.equal(h['accept'], 'application/json, text/event-stream');
    for (const name of ['authorization', 'cookie', 'proxy-authorization', 'x-custom', 'x-forwarded-for', 'x-mcp-subject', 'accept-encoding']) {
      assert.equal(h[name], undefined, `${name} must not be forwarded`);
    }
    assert.ok(!JSON.stringify(got).includes('secret-token-value'));
    assert.deepEqual(front.failures, []);
  });

  it('passes response headers through, except Set-Cookie, CORS, WWW-Authenticate and hop-by-hop ones', async () => {
    const upstream = await startUpstream((_req, res) =>
      jsonReply(res, 200, { jsonrpc: '2.0', id: 7, result: {} }, {
        'Mcp-Session-Id': 'session-2',
        'Set-Cookie': ['affinity=node-3; Path=/'],
        'Access-Control-Allow-Origin': '*',
        'WWW-Authenticate': 'Bearer realm="upstream"',
        'X-Upstream': 'yes',
        'Keep-Alive': 'timeout=5',
        Connection: 'keep-alive, X-Hop',
        'X-Hop': 'hop-by-hop',
      }),
    );
    const front = await startFront({ upstream: upstream.url });
    const res = await post(front.url, CALL);
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('mcp-session-id'), 'session-2');
    assert.equal(res.headers.get('x-upstream'), 'yes');
    assert.equal(res.headers.get('set-cookie'), null);
    assert.equal(res.headers.get('access-control-allow-origin'), null);
    assert.equal(res.headers.get('www-authenticate'), null);
    assert.equal(res.headers.get('x-hop'), null);
    await res.arrayBuffer();
  });

  it('adds identity headers from the verified token when configured, replacing any the client sent', async () => {
    const upstream = await startUpstream((_req, res) => jsonReply(res, 200, { jsonrpc: '2.0', id: 7, result: {} }));
    const front = await startFront({
      upstream: upstream.url,
      identityHeaders: { subject: 'X-MCP-Subject', clientId: 'X-MCP-Client-Id', scopes: 'X-MCP-Scopes', issuer: 'X-MCP-Issuer' },
    });
    const res = await post(front.url, CALL, { 'X-MCP-Subject': 'mallory', 'X-MCP-Scopes': 'admin', 'X-MCP-Issuer': 'https://evil.example.com' });
    assert.equal(res.status, 200);
    await res.arrayBuffer();
    const h = upstream.received[0]!.headers;
    assert.equal(h['x-mcp-subject'], 'alice');
    assert.equal(h['x-mcp-client-id'], 'client-1');
    assert.equal(h['x-mcp-scopes'], 'mcp:read mcp:tools');
    assert.equal(h['x-mcp-issuer'], undefined, 'the client\'s copy is dropped; this token names no issuer');
    assert.equal(h['authorization'], undefined);
    const other = await post(front.url, CALL, { Authorization: 'Bearer alice-other-issuer' });
    await other.arrayBuffer();
    // With several issuers, alice of one is not alice of another: the upstream is told which issuer vouched.
    assert.equal(upstream.received[1]!.headers['x-mcp-issuer'], 'https://other.example');
  });

  it('streams SSE event by event: the first event arrives before the upstream finishes', async () => {
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    let upstreamEnded = false;
    const upstream = await startUpstream((_req, res) => {
      res.writeHead(200, { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache' });
      res.write(`event: message\ndata: ${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 1, progress: 1 } })}\n\n`);
      void released.then(() => {
        upstreamEnded = true;
        res.end(`event: message\ndata: ${JSON.stringify({ jsonrpc: '2.0', id: 7, result: { content: [] } })}\n\n`);
      });
    });
    const front = await startFront({ upstream: upstream.url });
    const res = await post(front.url, CALL);
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'text/event-stream');
    // Servers SHOULD send it when starting a stream (2026-07-28), so a proxy in front does not hold events back.
    assert.equal(res.headers.get('x-accel-buffering'), 'no');
    const reader = res.body!.getReader();
    const decoder = new TextDecoder();
    const first = await reader.read();
    assert.equal(upstreamEnded, false, 'the first event must be delivered while the upstream is still streaming');
    assert.match(decoder.decode(first.value), /notifications\/progress/);
    release();
    let rest = '';
    for (;;) {
      const next = await reader.read();
      if (next.done) break;
      rest += decoder.decode(next.value, { stream: true });
    }
    assert.match(rest, /"id":7/);
  });

  it('answers 502 with a JSON-RPC error when the upstream is down, without its error details', async () => {
    const closed = createServer();
    const base = await listen(closed);
    closed.close();
    await once(closed, 'close');
    const front = await startFront({ upstream: `${base}/mcp` });
    const res = await post(front.url, CALL);
    assert.equal(res.status, 502);
    assert.equal(res.headers.get('content-type'), 'application/json');
    const body = (await res.json()) as { jsonrpc: string; id: unknown; error: { code: number; message: string } };
    assert.deepEqual(body, { jsonrpc: '2.0', id: 7, error: { code: GATEWAY_JSONRPC_CODE, message: 'Bad gateway: the upstream MCP server is unreachable' } });
    assert.deepEqual(front.failures, [{ reason: 'upstream_unreachable', status: 502, code: 'ECONNREFUSED' }]);
  });

  // Bounds (not assertions) on how long: the post's own 5 s signal, and the test's timeout.
  it('answers 504 when the upstream sends no response headers within the idle timeout, and aborts its request', { timeout: 10_000 }, async () => {
    let upstreamClosed!: () => void;
    const closedUpstream = new Promise<void>((resolve) => (upstreamClosed = resolve));
    const upstream = await startUpstream((_req, res) => {
      // Never answers.
      res.once('close', () => upstreamClosed());
    });
    const front = await startFront({ upstream: upstream.url, idleTimeoutMs: 300 });
    const res = await post(front.url, CALL);
    assert.equal(res.status, 504);
    assert.deepEqual(await res.json(), { jsonrpc: '2.0', id: 7, error: { code: GATEWAY_JSONRPC_CODE, message: 'Gateway timeout: the upstream MCP server did not answer in time' } });
    assert.deepEqual(front.failures, [{ reason: 'upstream_timeout', status: 504 }]);
    assert.equal(upstream.received.length, 1, 'the request reached the upstream');
    await closedUpstream;
    assert.equal(front.proxy.inFlight, 0);
  });

  it('answers 504 when the upstream cannot be connected to within the connect timeout, and drops the connection attempt', { timeout: 10_000 }, async () => {
    // A connection whose name lookup never completes: the socket stays "connecting", as with a dead host.
    const attempts: Socket[] = [];
    const base = buildConnector({ timeout: 300, lookup: () => {} } as buildConnector.BuildOptions);
    const dispatcher = new UndiciAgent({
      connect: (options, callback) => {
        const socket = base(options, callback) as unknown as Socket;
        attempts.push(socket);
        return socket as never;
      },
    });
    const front = await startFront({ upstream: 'http://upstream.invalid/mcp', connectTimeoutMs: 300, dispatcher });
    const res = await post(front.url, CALL);
    assert.equal(res.status, 504);
    assert.deepEqual(await res.json(), { jsonrpc: '2.0', id: 7, error: { code: GATEWAY_JSONRPC_CODE, message: 'Gateway timeout: could not connect to the upstream MCP server in time' } });
    assert.deepEqual(front.failures, [{ reason: 'upstream_connect_timeout', status: 504 }]);
    assert.equal(attempts.length, 1);
    for (let i = 0; i < 50 && !attempts[0]!.destroyed; i++) await new Promise((r) => setTimeout(r, 20));
    assert.equal(attempts[0]!.destroyed, true, 'the pending connection was given up');
    assert.equal(front.proxy.inFlight, 0);
    await dispatcher.destroy();
  });

  it('reaches an https upstream with a private CA given as a dispatcher, or as the TLS options of a (deprecated) https.Agent', async () => {
    const { key, cert } = selfSignedCertificate();
    const server = createHttpsServer({ key, cert }, (req, res) => {
      req.resume();
      req.on('end', () => {
        res.writeHead(200, { 'Content-Type': 'application/json' });
        res.end(JSON.stringify({ jsonrpc: '2.0', id: 7, result: { content: [] } }));
      });
    });
    servers.push(server as unknown as Server);
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const upstream = `https://localhost:${(server.address() as AddressInfo).port}/mcp`;

    const untrusted = await startFront({ upstream });
    const refused = await post(untrusted.url, CALL);
    assert.equal(refused.status, 502, 'a certificate from an unknown CA is refused');
    assert.equal(untrusted.failures[0]?.reason, 'upstream_unreachable');

    const dispatcher = new UndiciAgent({ connect: { ca: cert } });
    const viaDispatcher = await startFront({ upstream, dispatcher });
    const answered = await post(viaDispatcher.url, CALL);
    assert.equal(answered.status, 200);
    assert.deepEqual(await answered.json(), { jsonrpc: '2.0', id: 7, result: { content: [] } });
    await dispatcher.destroy();

    const viaAgent = await startFront({ upstream, agent: new HttpsAgent({ ca: cert }) });
    const alsoAnswered = await post(viaAgent.url, CALL);
    assert.equal(alsoAnswered.status, 200);
  });

  it('ends an event stream cleanly when the upstream goes idle mid-stream', async () => {
    const upstream = await startUpstream((_req, res) => {
      res.writeHead(200, { 'Content-Type': 'text/event-stream' });
      res.write('event: message\ndata: {"jsonrpc":"2.0","method":"notifications/message","params":{}}\n\n');
    });
    const front = await startFront({ upstream: upstream.url, idleTimeoutMs: 300 });
    const res = await post(front.url, CALL);
    assert.equal(res.status, 200);
    const text = await res.text();
    assert.match(text, /notifications\/message/);
    assert.equal(front.failures[0]?.reason, 'upstream_idle_timeout');
  });

  it('answers 502 when the upstream itself demands authentication, and drops its challenge', async () => {
    const upstream = await startUpstream((_req, res) => jsonReply(res, 401, { error: 'unauthorized' }, { 'WWW-Authenticate': 'Bearer' }));
    const front = await startFront({ upstream: upstream.url });
    const res = await post(front.url, CALL);
    assert.equal(res.status, 502);
    assert.equal(res.headers.get('www-authenticate'), null);
    assert.deepEqual(await res.json(), { jsonrpc: '2.0', id: 7, error: { code: GATEWAY_JSONRPC_CODE, message: 'Bad gateway: the upstream MCP server refused the gateway' } });
  });

  it('refuses identity header names that describe the connection (hop-by-hop, Expect), which no proxy may send on', () => {
    for (const name of ['Connection', 'Keep-Alive', 'Upgrade', 'TE', 'Trailer', 'Transfer-Encoding', 'Proxy-Connection', 'Expect']) {
      assert.throws(() => checkIdentityHeaders({ clientId: name }, 'MCP_AUTH_IDENTITY_HEADERS'), (error: unknown) => {
        assert.ok(error instanceof ConfigurationError);
        assert.equal(error.setting, 'MCP_AUTH_IDENTITY_HEADERS');
        assert.match(error.message, new RegExp(`clientId: "${name}" is reserved; choose a name such as X-MCP-Subject`));
        return true;
      });
    }
  });

  it('never sends a POST twice when its connection fails before the answer, and retries a GET once', async () => {
    let posts = 0;
    let gets = 0;
    const upstream = await startUpstream((req, res) => {
      if (req.method === 'POST') {
        posts++;
        // The first call is answered, so the second travels on a pooled connection that has answered before: the
        // case a retry on a reused connection would take for 'never reached the upstream'. It did reach it: the
        // connection is cut after the upstream read the call, before any answer.
        if (posts === 1) jsonReply(res, 200, { jsonrpc: '2.0', id: 7, result: { content: [] } });
        else req.socket.destroy();
        return;
      }
      gets++;
      if (gets === 1) {
        req.socket.destroy();
        return;
      }
      res.writeHead(200, { 'Content-Type': 'text/event-stream' });
      res.end('event: message\ndata: {"jsonrpc":"2.0","method":"notifications/message","params":{}}\n\n');
    });
    const front = await startFront({ upstream: upstream.url });
    assert.equal((await post(front.url, CALL)).status, 200);
    const res = await post(front.url, CALL);
    assert.equal(res.status, 502);
    assert.deepEqual(await res.json(), { jsonrpc: '2.0', id: 7, error: { code: GATEWAY_JSONRPC_CODE, message: 'Bad gateway: the upstream MCP server is unreachable' } });
    assert.equal(posts, 2, 'the second call reached the upstream once');
    assert.deepEqual(front.failures, [{ reason: 'upstream_unreachable', status: 502, code: 'ECONNRESET' }]);

    const stream = await fetch(front.url, { headers: { Accept: 'text/event-stream' }, signal: AbortSignal.timeout(5000) });
    assert.equal(stream.status, 200);
    assert.match(await stream.text(), /notifications\/message/);
    assert.equal(gets, 2, 'the GET was sent once more on a fresh connection');
  });

  it('passes a repeated response header on as node:http reads it: the first value of Retry-After or ETag, others joined', async () => {
    const upstream = await startUpstream((_req, res) => {
      res.setHeader('Retry-After', ['5', '10']);
      res.setHeader('ETag', ['"a"', '"b"']);
      res.setHeader('X-Note', ['one', 'two']);
      jsonReply(res, 200, { jsonrpc: '2.0', id: 7, result: { content: [] } });
    });
    const front = await startFront({ upstream: upstream.url });
    const res = await post(front.url, CALL);
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('retry-after'), '5');
    assert.equal(res.headers.get('etag'), '"a"');
    assert.equal(res.headers.get('x-note'), 'one, two');
  });

  it('answers 503 to a request that arrives after close(), in a session or not, without reaching the upstream', async () => {
    const upstream = await startOneSessionUpstream();
    const front = await startFront({ upstream: upstream.url });
    assert.equal((await post(front.url, INITIALIZE)).status, 200);
    assert.equal((await post(front.url, CALL, { 'Mcp-Session-Id': 'session-1' })).status, 200);
    front.proxy.close();
    for (const headers of [{}, { 'Mcp-Session-Id': 'session-1' }] as Record<string, string>[]) {
      const res = await post(front.url, CALL, headers);
      assert.equal(res.status, 503, 'not a 404 sending the client to open a new session on a gateway that is stopping');
      assert.deepEqual(await res.json(), { jsonrpc: '2.0', id: 7, error: { code: GATEWAY_JSONRPC_CODE, message: 'Service unavailable: the gateway is shutting down' } });
    }
    assert.deepEqual(front.failures, [{ reason: 'gateway_shutdown', status: 503 }, { reason: 'gateway_shutdown', status: 503 }]);
    assert.deepEqual(front.refusals, []);
    assert.equal(upstream.received.length, 2);
  });

  it('closes the connection of a refused (401) answer it renews the credentials for, however long its body', { timeout: 10_000 }, async () => {
    let refusedClosed!: () => void;
    const closedRefusal = new Promise<void>((resolve) => (refusedClosed = resolve));
    const upstream = await startUpstream((req, res) => {
      if (req.headers.authorization === 'Bearer old') {
        // A refusal whose body never ends: the gateway must not wait for it, nor keep its connection.
        res.writeHead(401, { 'Content-Type': 'text/plain' });
        res.write('refused');
        res.once('close', () => refusedClosed());
        return;
      }
      jsonReply(res, 200, { jsonrpc: '2.0', id: 7, result: { content: [] } });
    });
    const credentials = {
      authorization: async () => 'Bearer old',
      renew: async () => 'Bearer new',
    };
    const front = await startFront({ upstream: upstream.url, credentials });
    const res = await post(front.url, CALL);
    assert.equal(res.status, 200);
    assert.deepEqual(await res.json(), { jsonrpc: '2.0', id: 7, result: { content: [] } });
    await closedRefusal;
    assert.equal(front.proxy.inFlight, 0);
  });

  it('aborts the upstream request when the client goes away', { timeout: 10_000 }, async () => {
    let upstreamClosed!: () => void;
    const closedUpstream = new Promise<void>((resolve) => (upstreamClosed = resolve));
    const upstream = await startUpstream((_req, res) => {
      res.writeHead(200, { 'Content-Type': 'text/event-stream' });
      res.write('event: message\ndata: {"jsonrpc":"2.0","method":"notifications/message","params":{}}\n\n');
      res.once('close', () => upstreamClosed());
    });
    const front = await startFront({ upstream: upstream.url });
    const controller = new AbortController();
    const res = await post(front.url, CALL, {}, controller.signal);
    const reader = res.body!.getReader();
    await reader.read();
    controller.abort();
    // Not aborted: the test times out.
    await closedUpstream;
    // The gateway ends the exchange before it drops the upstream request, so none is left once the upstream saw the close.
    assert.equal(front.proxy.inFlight, 0);
  });

  it('proxies GET (standalone SSE stream) and DELETE (session end) with the session header', async () => {
    const upstream = await startUpstream((req, res) => {
      if (req.method === 'POST') {
        jsonReply(res, 200, { jsonrpc: '2.0', id: 0, result: {} }, { 'Mcp-Session-Id': 's-1' });
      } else if (req.method === 'GET') {
        res.writeHead(200, { 'Content-Type': 'text/event-stream' });
        res.end('event: message\ndata: {"jsonrpc":"2.0","method":"notifications/tools/list_changed"}\n\n');
      } else {
        res.writeHead(200, { 'Content-Length': '0' });
        res.end();
      }
    });
    const front = await startFront({ upstream: upstream.url });
    await (await post(front.url, INITIALIZE)).arrayBuffer();
    upstream.received.length = 0;
    // Headers that mirror a body mean nothing without one: nothing checked them, so they are not passed on.
    const mirrored = { 'Mcp-Method': 'tools/call', 'Mcp-Name': 'secret_admin', 'Mcp-Param-Region': 'eu' };
    const get = await fetch(front.url, { headers: { Accept: 'text/event-stream', 'Mcp-Session-Id': 's-1', 'Last-Event-ID': 'e-1', Authorization: 'Bearer secret-token-value', ...mirrored }, signal: AbortSignal.timeout(5000) });
    assert.equal(get.status, 200);
    assert.match(await get.text(), /list_changed/);
    const del = await fetch(front.url, { method: 'DELETE', headers: { 'Mcp-Session-Id': 's-1', Authorization: 'Bearer secret-token-value', ...mirrored }, signal: AbortSignal.timeout(5000) });
    assert.equal(del.status, 200);
    await del.arrayBuffer();
    assert.deepEqual(upstream.received.map((r) => [r.method, r.headers['mcp-session-id'], r.body]), [['GET', 's-1', ''], ['DELETE', 's-1', '']]);
    assert.equal(upstream.received[0]!.headers['last-event-id'], 'e-1');
    assert.equal(upstream.received[0]!.headers['content-length'], undefined);
    assert.ok(upstream.received.every((r) => r.headers.authorization === undefined));
    for (const r of upstream.received) {
      assert.deepEqual([r.headers['mcp-method'], r.headers['mcp-name'], r.headers['mcp-param-region']], [undefined, undefined, undefined], r.method);
    }
  });

  it('passes 202 for a client response and the upstream status for errors', async () => {
    const upstream = await startUpstream((_req, res, body) => {
      const msg = JSON.parse(body) as { method?: string };
      if (msg.method === undefined) {
        res.writeHead(202).end();
      } else {
        jsonReply(res, 404, { jsonrpc: '2.0', id: null, error: { code: -32001, message: 'Session not found' } });
      }
    });
    const front = await startFront({ upstream: upstream.url });
    const accepted = await post(front.url, { jsonrpc: '2.0', id: 0, result: { action: 'accept', content: {} } });
    assert.equal(accepted.status, 202);
    assert.equal(await accepted.text(), '');
    const missing = await post(front.url, CALL);
    assert.equal(missing.status, 404);
    await missing.arrayBuffer();
  });

  it('refuses bad options at construction', () => {
    assert.throws(() => createUpstreamProxy({ upstream: 'not a url' }), ConfigurationError);
    assert.throws(() => createUpstreamProxy({ upstream: 'ftp://127.0.0.1/mcp' }), ConfigurationError);
    assert.throws(() => createUpstreamProxy({ upstream: 'http://user:pw@127.0.0.1/mcp' }), ConfigurationError);
    assert.throws(() => createUpstreamProxy({ upstream: 'http://127.0.0.1/mcp', identityHeaders: { subject: 'Authorization' } }), ConfigurationError);
    assert.throws(() => createUpstreamProxy({ upstream: 'http://127.0.0.1/mcp', identityHeaders: { subject: 'Mcp-Session-Id' } }), ConfigurationError);
    assert.throws(() => createUpstreamProxy({ upstream: 'http://127.0.0.1/mcp', idleTimeoutMs: 0 }), ConfigurationError);
  });
});

/**
 * An upstream that mints a session id for each `initialize` and knows which it issued: it answers 404 for
 * any other id, as MCP servers do. GET opens an event stream; DELETE ends the session.
 */
async function startSessionUpstream(): Promise<Awaited<ReturnType<typeof startUpstream>> & { issued: string[] }> {
  const issued: string[] = [];
  const live = new Set<string>();
  const upstream = await startUpstream((req, res, body) => {
    const sid = req.headers['mcp-session-id'];
    const message = body ? (JSON.parse(body) as { id?: number; method?: string }) : undefined;
    if (req.method === 'POST' && message?.method === 'initialize') {
      const id = `sess-${issued.length + 1}`;
      issued.push(id);
      live.add(id);
      jsonReply(res, 200, { jsonrpc: '2.0', id: message.id, result: { protocolVersion: '2025-11-25' } }, { 'Mcp-Session-Id': id });
      return;
    }
    if (typeof sid !== 'string' || !live.has(sid)) {
      jsonReply(res, 404, { jsonrpc: '2.0', id: null, error: { code: -32001, message: 'Session not found' } });
      return;
    }
    if (req.method === 'DELETE') {
      live.delete(sid);
      res.writeHead(200, { 'Content-Length': '0' }).end();
    } else if (req.method === 'GET') {
      res.writeHead(200, { 'Content-Type': 'text/event-stream' });
      res.write(`event: message\ndata: ${JSON.stringify({ jsonrpc: '2.0', method: 'sampling/createMessage', id: 1, params: { secret: `for ${sid}` } })}\n\n`);
    } else {
      jsonReply(res, 200, { jsonrpc: '2.0', id: message?.id, result: { session: sid } });
    }
  });
  return { ...upstream, issued };
}

function bearer(token: string, extra: Record<string, string> = {}): Record<string, string> {
  return { Authorization: `Bearer ${token}`, ...extra };
}

async function initialize(url: string, token: string): Promise<string> {
  const res = await post(url, INITIALIZE, bearer(token));
  assert.equal(res.status, 200);
  await res.arrayBuffer();
  const sid = res.headers.get('mcp-session-id');
  assert.ok(sid);
  return sid;
}

const NOT_FOUND = (id: number | null) => ({ jsonrpc: '2.0', id, error: { code: -32001, message: 'Session not found' } });

describe('createUpstreamProxy sessions', () => {
  it('lets the session\'s owner use it, also with a refreshed token (same issuer, subject and client)', async () => {
    const upstream = await startSessionUpstream();
    const front = await startFront({ upstream: upstream.url });
    const sid = await initialize(front.url, 'alice');
    for (const token of ['alice', 'alice-refreshed']) {
      const res = await post(front.url, CALL, bearer(token, { 'Mcp-Session-Id': sid }));
      assert.equal(res.status, 200);
      assert.deepEqual(await res.json(), { jsonrpc: '2.0', id: 7, result: { session: sid } });
    }
    assert.equal(upstream.received.length, 3);
    assert.deepEqual(front.refusals, []);
  });

  it('answers 404 Session not found to another caller\'s token, without forwarding, as for an unknown id', async () => {
    const upstream = await startSessionUpstream();
    const front = await startFront({ upstream: upstream.url });
    const sid = await initialize(front.url, 'alice');
    const before = upstream.received.length;
    for (const token of ['bob', 'alice-other-client', 'alice-other-issuer']) {
      const res = await post(front.url, CALL, bearer(token, { 'Mcp-Session-Id': sid }));
      assert.equal(res.status, 404, token);
      assert.equal(res.headers.get('content-type'), 'application/json');
      assert.deepEqual(await res.json(), NOT_FOUND(7));
    }
    const unknown = await post(front.url, CALL, bearer('bob', { 'Mcp-Session-Id': 'sess-999' }));
    assert.equal(unknown.status, 404);
    assert.deepEqual(await unknown.json(), NOT_FOUND(7), 'a foreign session and an unknown one look the same');
    assert.equal(upstream.received.length, before, 'the upstream never saw the refused requests');
    assert.deepEqual(front.refusals, [
      { reason: 'session_owner_mismatch', sessionId: sid },
      { reason: 'session_owner_mismatch', sessionId: sid },
      { reason: 'session_owner_mismatch', sessionId: sid },
      { reason: 'session_unknown', sessionId: 'sess-999' },
    ]);
    // The owner's session is untouched.
    const own = await post(front.url, CALL, bearer('alice', { 'Mcp-Session-Id': sid }));
    assert.equal(own.status, 200);
    await own.arrayBuffer();
  });

  it('refuses another caller\'s GET stream and DELETE, so its server requests and the session stay the owner\'s', async () => {
    const upstream = await startSessionUpstream();
    const front = await startFront({ upstream: upstream.url });
    const sid = await initialize(front.url, 'alice');
    const before = upstream.received.length;
    const get = await fetch(front.url, { headers: bearer('bob', { Accept: 'text/event-stream', 'Mcp-Session-Id': sid, 'Last-Event-ID': 'e-1' }), signal: AbortSignal.timeout(5000) });
    assert.equal(get.status, 404);
    assert.deepEqual(await get.json(), NOT_FOUND(null));
    const del = await fetch(front.url, { method: 'DELETE', headers: bearer('bob', { 'Mcp-Session-Id': sid }), signal: AbortSignal.timeout(5000) });
    assert.equal(del.status, 404);
    assert.deepEqual(await del.json(), NOT_FOUND(null));
    assert.equal(upstream.received.length, before);

    const controller = new AbortController();
    const own = await fetch(front.url, { headers: bearer('alice', { Accept: 'text/event-stream', 'Mcp-Session-Id': sid }), signal: controller.signal });
    assert.equal(own.status, 200);
    const first = await own.body!.getReader().read();
    assert.match(new TextDecoder().decode(first.value), new RegExp(`for ${sid}`));
    controller.abort();
  });

  it('answers 404 to a session id it never saw issued, e.g. after a gateway restart', async () => {
    const upstream = await startSessionUpstream();
    const first = await startFront({ upstream: upstream.url });
    const sid = await initialize(first.url, 'alice');
    const restarted = await startFront({ upstream: upstream.url });
    const before = upstream.received.length;
    const res = await post(restarted.url, CALL, bearer('alice', { 'Mcp-Session-Id': sid }));
    assert.equal(res.status, 404);
    assert.deepEqual(await res.json(), NOT_FOUND(7));
    assert.equal(upstream.received.length, before);
    assert.deepEqual(restarted.refusals, [{ reason: 'session_unknown', sessionId: sid }]);
  });

  it('binds no session to a token with neither subject nor client id', async () => {
    const upstream = await startSessionUpstream();
    const front = await startFront({ upstream: upstream.url });
    const sid = await initialize(front.url, 'anonymous');
    const before = upstream.received.length;
    const res = await post(front.url, CALL, bearer('anonymous', { 'Mcp-Session-Id': sid }));
    assert.equal(res.status, 404);
    assert.deepEqual(await res.json(), NOT_FOUND(7));
    assert.equal(upstream.received.length, before);
    assert.deepEqual(front.refusals, [{ reason: 'session_no_identity', sessionId: sid }]);
  });

  it('forgets a session after a successful DELETE, and when the upstream answers 404 for it', async () => {
    const upstream = await startSessionUpstream();
    const front = await startFront({ upstream: upstream.url });
    const sid = await initialize(front.url, 'alice');
    const del = await fetch(front.url, { method: 'DELETE', headers: bearer('alice', { 'Mcp-Session-Id': sid }), signal: AbortSignal.timeout(5000) });
    assert.equal(del.status, 200);
    await del.arrayBuffer();
    const before = upstream.received.length;
    const after = await post(front.url, CALL, bearer('alice', { 'Mcp-Session-Id': sid }));
    assert.equal(after.status, 404);
    await after.arrayBuffer();
    assert.equal(upstream.received.length, before, 'the ended session is not forwarded any more');
    assert.deepEqual(front.refusals, [{ reason: 'session_unknown', sessionId: sid }]);

    // A session the upstream no longer knows (expired there): its 404 passes through once, then the gateway forgets it.
    const second = await initialize(front.url, 'alice');
    const ended = await fetch(upstream.url, { method: 'DELETE', headers: { 'Mcp-Session-Id': second } });
    assert.equal(ended.status, 200);
    const gone = await post(front.url, CALL, bearer('alice', { 'Mcp-Session-Id': second }));
    assert.equal(gone.status, 404);
    await gone.arrayBuffer();
    const count = upstream.received.length;
    const again = await post(front.url, CALL, bearer('alice', { 'Mcp-Session-Id': second }));
    assert.equal(again.status, 404);
    await again.arrayBuffer();
    assert.equal(upstream.received.length, count);
  });

  it('keeps at most maxSessions, forgetting the least recently used', async () => {
    const upstream = await startSessionUpstream();
    const front = await startFront({ upstream: upstream.url, maxSessions: 2 });
    const s1 = await initialize(front.url, 'alice');
    const s2 = await initialize(front.url, 'bob');
    // Using s1 makes s2 the least recently used.
    const use = await post(front.url, CALL, bearer('alice', { 'Mcp-Session-Id': s1 }));
    assert.equal(use.status, 200);
    await use.arrayBuffer();
    const s3 = await initialize(front.url, 'alice');
    const statuses: number[] = [];
    for (const [sid, token] of [[s1, 'alice'], [s2, 'bob'], [s3, 'alice']] as const) {
      const res = await post(front.url, CALL, bearer(token, { 'Mcp-Session-Id': sid }));
      statuses.push(res.status);
      await res.arrayBuffer();
    }
    assert.deepEqual(statuses, [200, 404, 200]);
  });

  it('forgets a session idle for sessionIdleTimeoutMs, but not one with an open GET stream', async () => {
    const upstream = await startSessionUpstream();
    let clock = 1_000_000;
    const front = await startFront({ upstream: upstream.url, sessionIdleTimeoutMs: 150, now: () => clock });
    const idle = await initialize(front.url, 'alice');
    const streaming = await initialize(front.url, 'bob');
    const controller = new AbortController();
    const stream = await fetch(front.url, { headers: bearer('bob', { Accept: 'text/event-stream', 'Mcp-Session-Id': streaming }), signal: controller.signal });
    assert.equal(stream.status, 200);
    await stream.body!.getReader().read();
    clock += 149;
    const early = await post(front.url, CALL, bearer('alice', { 'Mcp-Session-Id': idle }));
    assert.equal(early.status, 200, 'not idle long enough yet');
    await early.arrayBuffer();
    clock += 150;
    const expired = await post(front.url, CALL, bearer('alice', { 'Mcp-Session-Id': idle }));
    assert.equal(expired.status, 404);
    assert.deepEqual(await expired.json(), NOT_FOUND(7));
    const alive = await post(front.url, CALL, bearer('bob', { 'Mcp-Session-Id': streaming }));
    assert.equal(alive.status, 200, 'the open GET stream kept the session in use');
    await alive.arrayBuffer();
    controller.abort();
  });

  it('refuses an upstream answer that issues a session id already bound to another caller', async () => {
    const upstream = await startUpstream((_req, res) => jsonReply(res, 200, { jsonrpc: '2.0', id: 0, result: {} }, { 'Mcp-Session-Id': 'fixed' }));
    const front = await startFront({ upstream: upstream.url });
    assert.equal(await initialize(front.url, 'alice'), 'fixed');
    const res = await post(front.url, INITIALIZE, bearer('bob'));
    assert.equal(res.status, 502);
    assert.equal(res.headers.get('mcp-session-id'), null);
    assert.equal(((await res.json()) as { error: { code: number } }).error.code, GATEWAY_JSONRPC_CODE);
    assert.equal(front.failures[0]?.reason, 'upstream_session_conflict');
  });

  it('a replayed resources/read answer goes through the same filter as the live one (cache downgrade)', async () => {
    const readEvent = (id: number) => `id: ev-${id}\nevent: message\ndata: ${JSON.stringify({ jsonrpc: '2.0', id, result: { contents: [], cacheScope: 'public' } })}\n\n`;
    const upstream = await startUpstream((req, res, body) => {
      const message = body ? (JSON.parse(body) as { id: number; method: string }) : undefined;
      if (message?.method === 'initialize') {
        jsonReply(res, 200, { jsonrpc: '2.0', id: message.id, result: {} }, { 'Mcp-Session-Id': 'sess-read' });
        return;
      }
      res.writeHead(200, { 'Content-Type': 'text/event-stream' });
      res.end(readEvent(req.method === 'POST' ? message!.id : 4));
    });
    const seen: unknown[] = [];
    const front = await startFront({ upstream: upstream.url }, (request, response) => {
      seen.push(request);
      if (!('result' in response) || !Array.isArray(response.result.contents)) return response;
      return { ...response, result: { ...response.result, cacheScope: 'private' } };
    });
    const sid = await initialize(front.url, 'alice');
    const live = await post(front.url, { jsonrpc: '2.0', id: 4, method: 'resources/read', params: { uri: 'mem://restricted' } }, bearer('alice', { 'Mcp-Session-Id': sid }));
    await live.text();
    const resumed = await fetch(front.url, { headers: bearer('alice', { Accept: 'text/event-stream', 'Mcp-Session-Id': sid, 'Last-Event-ID': 'ev-0' }), signal: AbortSignal.timeout(5000) });
    const text = await resumed.text();
    assert.match(text, /"cacheScope":"private"/, text);
    assert.doesNotMatch(text, /"public"/);
    assert.deepEqual(seen, [UNKNOWN_REQUEST], 'the replay is filtered by its shape: the id it carries may name another request by now');
  });

  it('a resumed stream without a session is filtered too, answers recognised by their shape (fail closed)', async () => {
    const upstream = await startUpstream((_req, res) => {
      res.writeHead(200, { 'Content-Type': 'text/event-stream' });
      res.end(`id: e1\ndata: ${JSON.stringify({ jsonrpc: '2.0', id: 3, result: { tools: [{ name: 'echo' }, { name: 'get-env' }] } })}\n\n`);
    });
    const front = await startFront({ upstream: upstream.url }, (_request, response) => {
      if (!('result' in response) || !Array.isArray(response.result.tools)) return response;
      return { ...response, result: { tools: (response.result.tools as { name: string }[]).filter((t) => t.name !== 'get-env') } };
    });
    const resumed = await fetch(front.url, { headers: bearer('alice', { Accept: 'text/event-stream', 'Last-Event-ID': 'e0' }), signal: AbortSignal.timeout(5000) });
    const text = await resumed.text();
    assert.match(text, /"echo"/);
    assert.doesNotMatch(text, /get-env/);
  });

  it('filters a list answer replayed on a resumed GET stream (Last-Event-ID), as the original answer was', async () => {
    const tools = [{ name: 'echo' }, { name: 'get-env' }];
    let markFirstEventRead!: () => void;
    const firstEventRead = new Promise<void>((resolve) => (markFirstEventRead = resolve));
    const listEvent = (id: number | string) => `id: ev-${id}\nevent: message\ndata: ${JSON.stringify({ jsonrpc: '2.0', id, result: { tools } })}\n\n`;
    const upstream = await startUpstream((req, res, body) => {
      const message = body ? (JSON.parse(body) as { id: number; method: string }) : undefined;
      if (message?.method === 'initialize') {
        jsonReply(res, 200, { jsonrpc: '2.0', id: message.id, result: {} }, { 'Mcp-Session-Id': 'sess-lists' });
        return;
      }
      res.writeHead(200, { 'Content-Type': 'text/event-stream' });
      if (req.method === 'POST') {
        res.end(listEvent(message!.id));
        return;
      }
      // The replay: the list answer split across chunks with \r\n line ends, then an unrelated answer with id 5.
      // The rest is sent once the caller has read the first event, so the gateway surely got two chunks.
      const replay = `: replay\r\n\r\n${listEvent(3).replaceAll('\n', '\r\n')}${listEvent(5)}`;
      const cut = replay.indexOf('get-env');
      res.write(replay.slice(0, cut));
      void firstEventRead.then(() => res.end(replay.slice(cut)));
    });
    // The caller may not see get-env: the filter the guard hands to the handler drops it.
    const front = await startFront({ upstream: upstream.url }, (_request, response) => {
      if (!('result' in response) || !Array.isArray(response.result.tools)) return response;
      const listed = (response.result.tools as { name: string }[]).filter((t) => t.name !== 'get-env');
      return { ...response, result: { ...response.result, tools: listed } };
    });
    const sid = await initialize(front.url, 'alice');
    const list = await post(front.url, { jsonrpc: '2.0', id: 3, method: 'tools/list' }, bearer('alice', { 'Mcp-Session-Id': sid }));
    assert.equal(list.status, 200);
    await list.text();
    const resumed = await fetch(front.url, { headers: bearer('alice', { Accept: 'text/event-stream', 'Mcp-Session-Id': sid, 'Last-Event-ID': 'ev-1' }), signal: AbortSignal.timeout(5000) });
    assert.equal(resumed.status, 200);
    const reader = resumed.body!.getReader();
    const decoder = new TextDecoder();
    let text = '';
    // Events the gateway does not rewrite pass byte for byte, so the first one ends with \r\n\r\n.
    while (!/\r?\n\r?\n/.test(text)) {
      const next = await reader.read();
      assert.equal(next.done, false, text);
      text += decoder.decode(next.value, { stream: true });
    }
    markFirstEventRead();
    for (;;) {
      const next = await reader.read();
      if (next.done) break;
      text += decoder.decode(next.value, { stream: true });
    }
    assert.ok(text.startsWith(': replay\r\n\r\n'), 'the comment passes byte for byte');
    const events = text.slice(': replay\r\n\r\n'.length).split('\n\n').filter(Boolean);
    assert.equal(events.length, 2, text);
    assert.equal(events[0], `id: ev-3\nevent: message\ndata: ${JSON.stringify({ jsonrpc: '2.0', id: 3, result: { tools: [{ name: 'echo' }] } })}`);
    // Id 5 was never a list request in this session: its answer is a tools list all the same, and filtered as one.
    assert.equal(events[1], `id: ev-5\nevent: message\ndata: ${JSON.stringify({ jsonrpc: '2.0', id: 5, result: { tools: [{ name: 'echo' }] } })}`);
  });
});
