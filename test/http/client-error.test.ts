// What Node's HTTP parser refuses before any handler runs (headers too large, not HTTP, headers too slow) is
// answered with Node's status and a JSON-RPC error body, by a plain server and by the gateway, over real sockets.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import { connect } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { loadGatewayConfig } from '../../src/gateway/config/gateway-config.js';
import { startGateway, type RunningGateway } from '../../src/gateway/server/start-gateway.js';
import { answerClientErrors } from '../../src/http/client-error.js';
import { startTestIssuer, type TestIssuer } from '../helpers/fake-issuer.js';
import { closeServer, listenOnLoopback } from '../helpers/loopback-server.js';

/** Sends `bytes` on a new connection and resolves with all the server wrote before it closed the connection. */
async function exchange(origin: string, bytes: string): Promise<string> {
  const socket = connect(Number(new URL(origin).port), '127.0.0.1');
  socket.on('error', () => {});
  await once(socket, 'connect');
  const received: Buffer[] = [];
  socket.on('data', (chunk: Buffer) => received.push(chunk));
  socket.write(bytes);
  const timer = setTimeout(() => socket.destroy(), 8_000);
  await once(socket, 'close');
  clearTimeout(timer);
  return Buffer.concat(received).toString('utf8');
}

/** Status line and parsed body of a raw answer. */
function parse(raw: string): { statusLine: string; headers: string; body: any } {
  const [head = '', body = ''] = raw.split('\r\n\r\n');
  const [statusLine = '', ...headers] = head.split('\r\n');
  return { statusLine, headers: headers.join('\n').toLowerCase(), body: body ? JSON.parse(body) : undefined };
}

const hugeHeaders = `POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: ${'a'.repeat(64 * 1024)}\r\n\r\n`;

describe('answerClientErrors', () => {
  let server: Server;
  let origin: string;
  before(async () => {
    server = createServer((_req, res) => res.end('ok'));
    answerClientErrors(server);
    origin = await listenOnLoopback(server);
  });
  after(() => closeServer(server));

  it('headers over the limit: 431 with a JSON-RPC error, and the connection closed', async () => {
    const answer = parse(await exchange(origin, hugeHeaders));
    assert.equal(answer.statusLine, 'HTTP/1.1 431 Request Header Fields Too Large');
    assert.match(answer.headers, /content-type: application\/json/);
    assert.match(answer.headers, /connection: close/);
    assert.doesNotMatch(answer.headers, /www-authenticate/, 'no challenge: no request reached the guard');
    assert.deepEqual(answer.body, { jsonrpc: '2.0', id: null, error: { code: -32600, message: 'Request Header Fields Too Large: the request headers are over the limit; send fewer or shorter headers' } });
  });

  it('not HTTP: 400 with a JSON-RPC error that repeats nothing of the request', async () => {
    const raw = await exchange(origin, 'GARBAGE secret-token-123\r\n\r\n');
    const answer = parse(raw);
    assert.equal(answer.statusLine, 'HTTP/1.1 400 Bad Request');
    assert.equal(answer.body.error.code, -32600);
    assert.deepEqual(answer.body, { jsonrpc: '2.0', id: null, error: { code: -32600, message: 'Bad Request: the request is not valid HTTP/1.1' } });
    assert.doesNotMatch(answer.headers, /www-authenticate/);
    assert.ok(!raw.includes('secret-token-123'));
  });
});

describe('answerClientErrors: a request not received in time', () => {
  let server: Server;
  let origin: string;
  before(async () => {
    server = createServer({ requestTimeout: 300, headersTimeout: 300, connectionsCheckingInterval: 50 }, (_req, res) => res.end('ok'));
    answerClientErrors(server);
    origin = await listenOnLoopback(server);
  });
  after(() => closeServer(server));

  it('headers that stop half-way: 408 with a JSON-RPC error, then the connection is closed', { timeout: 10_000 }, async () => {
    const answer = parse(await exchange(origin, 'POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: a'));
    assert.equal(answer.statusLine, 'HTTP/1.1 408 Request Timeout');
    assert.deepEqual(answer.body, { jsonrpc: '2.0', id: null, error: { code: -32600, message: 'Request Timeout: the request did not arrive in time' } });
  });
});

describe('the gateway answers parser refusals the same way', () => {
  let issuer: TestIssuer;
  let gateway: RunningGateway;
  before(async () => {
    issuer = await startTestIssuer();
    gateway = await startGateway(loadGatewayConfig({ MCP_AUTH_UPSTREAM: 'http://127.0.0.1:9/mcp', MCP_AUTH_ISSUER: issuer.issuer, HOST: '127.0.0.1', PORT: '0' }), { log: () => {}, warn: () => {} });
  });
  after(async () => {
    await gateway?.shutdown();
    await issuer?.close();
  });

  it('a 64 KB header gets 431 with a JSON-RPC error, and the gateway serves on', async () => {
    const answer = parse(await exchange(gateway.url, hugeHeaders));
    assert.equal(answer.statusLine, 'HTTP/1.1 431 Request Header Fields Too Large');
    assert.equal(answer.body.error.code, -32600);
    assert.deepEqual(answer.body, { jsonrpc: '2.0', id: null, error: { code: -32600, message: 'Request Header Fields Too Large: the request headers are over the limit; send fewer or shorter headers' } });
    assert.doesNotMatch(answer.headers, /www-authenticate/);
    assert.equal((await fetch(`${gateway.url}/healthz`, { signal: AbortSignal.timeout(5_000) })).status, 200);
  });
});
