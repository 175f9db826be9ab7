// The per-address connection bound and the server timeouts of the gateway, with real sockets on loopback.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import { connect, type Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { ConfigurationError } from '../../../src/core/kernel/errors.js';
import { addressGroup, limitConnectionsPerAddress } from '../../../src/gateway/server/connection-limit.js';
import { DEFAULT_MAX_CONNECTIONS_PER_ADDRESS, loadGatewayConfig, parseGatewayArgs } from '../../../src/gateway/config/gateway-config.js';
import { HEADERS_TIMEOUT_MS, startGateway, type RunningGateway } from '../../../src/gateway/server/start-gateway.js';
import { startTestIssuer, type TestIssuer } from '../../helpers/fake-issuer.js';
import { closeServer, listenOnLoopback } from '../../helpers/loopback-server.js';

/** Opens a TCP connection and resolves once it is established. */
async function open(origin: string): Promise<Socket> {
  const socket = connect(Number(new URL(origin).port), '127.0.0.1');
  socket.on('error', () => {});
  await once(socket, 'connect');
  return socket;
}

/** Resolves with the bytes the server sent before it closed `socket` (bounded by the test's timeout). */
async function closedByServer(socket: Socket): Promise<string> {
  const received: Buffer[] = [];
  socket.on('data', (chunk: Buffer) => received.push(chunk));
  if (!socket.destroyed) await once(socket, 'close');
  return Buffer.concat(received).toString('utf8');
}

async function until(condition: () => Promise<boolean> | boolean): Promise<void> {
  while (!(await condition())) await new Promise((resolve) => setTimeout(resolve, 10));
}

function openCount(server: Server): Promise<number> {
  return new Promise((resolve, reject) => server.getConnections((error, count) => (error ? reject(error) : resolve(count))));
}

describe('addressGroup', () => {
  it('counts IPv4 per address, IPv4-mapped IPv6 as IPv4, and IPv6 per /64', () => {
    assert.equal(addressGroup('192.0.2.7'), '192.0.2.7');
    assert.equal(addressGroup('::ffff:192.0.2.7'), '192.0.2.7');
    assert.equal(addressGroup('2001:db8::1'), '2001:db8:0:0::/64');
    assert.equal(addressGroup('2001:0DB8:0000:0000:ffff:1:2:3'), '2001:db8:0:0::/64', 'same /64, another host part');
    assert.equal(addressGroup('2001:db8:0:1::1'), '2001:db8:0:1::/64', 'another /64');
    assert.equal(addressGroup('fe80::1%eth0'), 'fe80:0:0:0::/64');
    assert.equal(addressGroup('::1'), '0:0:0:0::/64');
    assert.equal(addressGroup(undefined), undefined);
  });
});

describe('limitConnectionsPerAddress', () => {
  let server: Server;
  let origin: string;
  const sockets: Socket[] = [];
  before(async () => {
    server = createServer((_req, res) => res.end('ok'));
    origin = await listenOnLoopback(server);
  });
  after(() => {
    for (const socket of sockets) socket.destroy();
    closeServer(server);
  });

  it('closes a connection past the limit unanswered, and accepts again once one closes', { timeout: 10_000 }, async () => {
    const refused: string[] = [];
    const limit = limitConnectionsPerAddress(server, 3, ({ address }) => refused.push(address));
    try {
      const held = [await open(origin), await open(origin), await open(origin)];
      sockets.push(...held);
      await until(() => limit.openConnections('127.0.0.1') === 3);
      const extra = await open(origin);
      sockets.push(extra);
      extra.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n');
      assert.equal(await closedByServer(extra), '', 'no answer, the connection is just closed');
      assert.deepEqual(refused, ['127.0.0.1']);
      assert.ok(held.every((socket) => !socket.destroyed), 'the connections within the limit stay open');

      held[0]?.destroy();
      await until(() => limit.openConnections('127.0.0.1') === 2);
      const next = await open(origin);
      sockets.push(next);
      next.write('GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
      assert.match(await closedByServer(next), /^HTTP\/1\.1 200 /);
      assert.deepEqual(refused, ['127.0.0.1']);
    } finally {
      limit.remove();
    }
  });

  it('0 counts and refuses nothing', { timeout: 10_000 }, async () => {
    const refused: string[] = [];
    const limit = limitConnectionsPerAddress(server, 0, ({ address }) => refused.push(address));
    try {
      const many = await Promise.all(Array.from({ length: 20 }, () => open(origin)));
      sockets.push(...many);
      await until(async () => (await openCount(server)) >= 20);
      assert.deepEqual(refused, []);
      assert.equal(limit.openConnections('127.0.0.1'), 0);
      assert.ok(many.every((socket) => !socket.destroyed));
    } finally {
      limit.remove();
    }
  });
});

describe('gateway connection bound and server timeouts', () => {
  let issuer: TestIssuer;
  let gateway: RunningGateway;
  const warnings: string[] = [];
  const sockets: Socket[] = [];

  before(async () => {
    issuer = await startTestIssuer();
    const config = loadGatewayConfig({
      MCP_AUTH_UPSTREAM: 'http://127.0.0.1:9/mcp',
      MCP_AUTH_ISSUER: issuer.issuer,
      PORT: '0',
      MCP_AUTH_MAX_CONNECTIONS_PER_ADDRESS: '2',
      MCP_AUTH_BODY_TIMEOUT_MS: '300',
      MCP_AUTH_SHUTDOWN_TIMEOUT_MS: '0',
    });
    gateway = await startGateway(config, { log: () => {}, warn: (line) => warnings.push(line) });
  });
  after(async () => {
    for (const socket of sockets) socket.destroy();
    await gateway?.shutdown();
    await issuer?.close();
  });

  it('takes off for no bound, as 0, by the rule of every bound that takes off', () => {
    const base = { MCP_AUTH_UPSTREAM: 'http://127.0.0.1:9/mcp', MCP_AUTH_ISSUER: issuer.issuer, PORT: '0' };
    assert.equal(loadGatewayConfig({ ...base, MCP_AUTH_MAX_CONNECTIONS_PER_ADDRESS: 'off' }).maxConnectionsPerAddress, 0);
    assert.equal(loadGatewayConfig({ ...base, MCP_AUTH_MAX_CONNECTIONS_PER_ADDRESS: '0' }).maxConnectionsPerAddress, 0);
    const args = parseGatewayArgs(['--max-connections-per-address', 'OFF'], base);
    assert.ok(!args.help);
    assert.equal(loadGatewayConfig(args.settings).maxConnectionsPerAddress, 0);
    assert.throws(() => loadGatewayConfig({ ...base, MCP_AUTH_MAX_CONNECTIONS_PER_ADDRESS: 'none' }), /MCP_AUTH_MAX_CONNECTIONS_PER_ADDRESS: must be a whole number from 0 to 1000000 \(got "none"\); or off to disable/);
  });

  it('reads MCP_AUTH_MAX_CONNECTIONS_PER_ADDRESS and --max-connections-per-address; 0 is unlimited', () => {
    const base = { MCP_AUTH_UPSTREAM: 'http://127.0.0.1:9/mcp', MCP_AUTH_ISSUER: issuer.issuer, PORT: '0' };
    assert.equal(loadGatewayConfig(base).maxConnectionsPerAddress, DEFAULT_MAX_CONNECTIONS_PER_ADDRESS);
    assert.equal(DEFAULT_MAX_CONNECTIONS_PER_ADDRESS, 128);
    const args = parseGatewayArgs(['--max-connections-per-address', '0'], base);
    assert.ok(!args.help);
    assert.equal(loadGatewayConfig(args.settings).maxConnectionsPerAddress, 0);
    assert.throws(
      () => loadGatewayConfig({ ...base, MCP_AUTH_MAX_CONNECTIONS_PER_ADDRESS: '-1' }),
      (e: unknown) => e instanceof ConfigurationError && e.setting === 'MCP_AUTH_MAX_CONNECTIONS_PER_ADDRESS',
    );
  });

  it('bounds the headers and the whole request below Node defaults', () => {
    assert.equal(gateway.server.headersTimeout, HEADERS_TIMEOUT_MS);
    assert.ok(HEADERS_TIMEOUT_MS < 60_000, "below Node's default of 60 s");
    assert.equal(gateway.server.requestTimeout, HEADERS_TIMEOUT_MS + 300 + 5_000, 'headers, then the body timeout, then a margin');
  });

  it('refuses a third connection from one address, warns once, and serves again once one closes', { timeout: 15_000 }, async () => {
    const held = [await open(gateway.url), await open(gateway.url)];
    sockets.push(...held);
    await until(async () => (await openCount(gateway.server)) === 2);
    for (let i = 0; i < 5; i++) {
      const extra = await open(gateway.url);
      sockets.push(extra);
      extra.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
      assert.equal(await closedByServer(extra), '');
    }
    const refusals = warnings.filter((line) => line.includes('connections refused'));
    assert.equal(refusals.length, 1, 'one warning for five refusals');
    const warning = JSON.parse(refusals[0] as string) as { address: string; refused: number; message: string };
    assert.equal(warning.address, '127.0.0.1');
    assert.equal(warning.refused, 1);
    assert.match(warning.message, /MCP_AUTH_MAX_CONNECTIONS_PER_ADDRESS/);

    held[0]?.destroy();
    await until(async () => (await openCount(gateway.server)) === 1);
    const res = await fetch(`${gateway.url}/healthz`, { signal: AbortSignal.timeout(5_000), headers: { connection: 'close' } });
    assert.equal(res.status, 200);
  });

  it('answers a slow body on the MCP endpoint with 408 and closes the connection', { timeout: 15_000 }, async () => {
    for (const socket of sockets) socket.destroy();
    await until(async () => (await openCount(gateway.server)) === 0);
    const socket = await open(gateway.url);
    sockets.push(socket);
    socket.write(`POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 50\r\n\r\n{`);
    const ticker = setInterval(() => socket.writable && socket.write(' '), 100);
    try {
      const answer = await closedByServer(socket);
      assert.match(answer, /^HTTP\/1\.1 408 /);
      assert.match(answer, /\r\nConnection: close\r\n/i);
      assert.equal(JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4)).error.code, -32600);
    } finally {
      clearInterval(ticker);
    }
  });
});
