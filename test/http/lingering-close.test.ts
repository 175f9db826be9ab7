// The bounds of the lingering close after an early answer, against the real request pipeline on loopback with raw
// sockets: an idle client, a client that sends more than the byte bound, more lingering clients than the process
// keeps, and one address trying to take every slot (loopback has a whole /8 of addresses, so clients connect from
// 127.0.0.x as distinct addresses). (That the answer then reaches real clients is
// test/integration/early-answer-clients.test.ts.)
import assert from 'node:assert/strict';
import type { Server } from 'node:http';
import { connect, type Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { createGuard } from '../../src/core/guard/create-guard.js';
import { createRequestPipeline } from '../../src/http/request-pipeline.js';
import { LINGER_IDLE_MS, LINGER_MAX_BYTES, LINGER_MAX_CONNECTIONS, LINGER_MAX_PER_ADDRESS, lingeringConnections } from '../../src/http/lingering-close.js';
import { startTestIssuer, type TestIssuer } from '../helpers/fake-issuer.js';
import { closeServer, servePipeline } from '../helpers/loopback-server.js';

const LIMIT = 1024;

/** A raw client that sent the headers of a POST declaring a body; `received` is what it read, `closed` when (ms). */
interface RawClient {
  socket: Socket;
  received: () => string;
  closed: Promise<number>;
}

function openClient(url: string, declared: number, from = '127.0.0.1'): RawClient {
  const { port, pathname } = new URL(url);
  const socket = connect({ port: Number(port), host: '127.0.0.1', localAddress: from });
  const chunks: Buffer[] = [];
  socket.on('data', (chunk: Buffer) => chunks.push(chunk));
  socket.on('error', () => {});
  socket.write(`POST ${pathname} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${declared}\r\n\r\n`);
  const closed = new Promise<number>((resolve) => socket.once('close', () => resolve(performance.now())));
  return { socket, received: () => Buffer.concat(chunks).toString('utf8'), closed };
}

async function answered(client: RawClient): Promise<number> {
  while (!client.received().includes('\r\n\r\n')) await new Promise((resolve) => (client.socket.once('data', resolve), client.socket.once('close', resolve)));
  return performance.now();
}

describe('lingering close bounds', () => {
  let issuer: TestIssuer;
  let server: Server;
  let url: string;

  before(async () => {
    issuer = await startTestIssuer();
    const guard = createGuard({ issuer: issuer.issuer, resource: 'http://127.0.0.1/mcp', maxBodyBytes: LIMIT });
    ({ server, url } = await servePipeline(createRequestPipeline(guard, async () => undefined)));
  });
  after(async () => {
    closeServer(server);
    await issuer.close();
  });

  it('a client that sends nothing more is closed after the idle bound', { timeout: 10_000 }, async () => {
    const client = openClient(url, 10 * LIMIT);
    const answeredAt = await answered(client);
    assert.match(client.received(), /^HTTP\/1\.1 413 .*\r\n(.*\r\n)*Connection: close\r\n/i);
    const lingered = (await client.closed) - answeredAt;
    assert.ok(lingered >= LINGER_IDLE_MS - 100 && lingered < LINGER_IDLE_MS + 1_500, `closed after ${Math.round(lingered)} ms`);
    assert.equal(lingeringConnections(), 0);
  });

  it('a client sending more than the byte bound is cut off there', { timeout: 20_000 }, async () => {
    const declared = 64 * LINGER_MAX_BYTES;
    const client = openClient(url, declared);
    await answered(client);
    const piece = Buffer.alloc(256 * 1024, 0x20);
    let sent = 0;
    let open = true;
    void client.closed.then(() => (open = false));
    while (open && sent < declared) {
      sent += piece.length;
      if (!client.socket.write(piece)) await new Promise((resolve) => (client.socket.once('drain', resolve), client.socket.once('close', resolve)));
    }
    await client.closed;
    // What the kernel buffers hold besides what was read: a few MB at most, far from the declared body.
    assert.ok(sent < 4 * LINGER_MAX_BYTES, `closed after ${sent} bytes were written`);
    assert.equal(lingeringConnections(), 0);
  });

  const closeAll = async (clients: RawClient[]): Promise<void> => {
    for (const client of clients) client.socket.destroy();
    await Promise.all(clients.map((client) => client.closed));
    // The server sees each close a moment later.
    const deadline = Date.now() + 5_000;
    while (lingeringConnections() > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
    assert.equal(lingeringConnections(), 0);
  };
  const closedAtOnce = async (client: RawClient): Promise<boolean> => {
    const answeredAt = await answered(client);
    assert.match(client.received(), /^HTTP\/1\.1 413 /);
    return (await client.closed) - answeredAt < LINGER_IDLE_MS / 2;
  };

  it('one address takes at most half the slots; from there each address lingers at most its share', { timeout: 20_000 }, async () => {
    const half = LINGER_MAX_CONNECTIONS / 2;
    const flood: RawClient[] = [];
    for (let i = 0; i < half; i++) flood.push(openClient(url, 10 * LIMIT, '127.0.0.1'));
    await Promise.all(flood.map(answered));
    assert.equal(lingeringConnections(), half);
    const more = openClient(url, 10 * LIMIT, '127.0.0.1');
    assert.ok(await closedAtOnce(more), 'the flooding address gets no slot past half');
    // Another address still gets its share, and its early answers are read in full before the close.
    const others = [openClient(url, 10 * LIMIT, '127.0.0.2'), openClient(url, 10 * LIMIT, '127.0.0.2')];
    await Promise.all(others.map(answered));
    assert.equal(lingeringConnections(), half + LINGER_MAX_PER_ADDRESS);
    assert.ok(await closedAtOnce(openClient(url, 10 * LIMIT, '127.0.0.2')), 'past its share, that address too');
    await closeAll([...flood, ...others]);
    // Below half again, one address may linger beyond its share.
    const again = [0, 1, 2].map(() => openClient(url, 10 * LIMIT, '127.0.0.2'));
    await Promise.all(again.map(answered));
    assert.equal(lingeringConnections(), 3);
    await closeAll(again);
  });

  it(`at most ${LINGER_MAX_CONNECTIONS} connections linger; past that an early answer closes at once`, { timeout: 20_000 }, async () => {
    const clients: RawClient[] = [];
    const half = LINGER_MAX_CONNECTIONS / 2;
    for (let i = 0; i < half; i++) clients.push(openClient(url, 10 * LIMIT, '127.0.0.1'));
    await Promise.all(clients.map(answered));
    // The other half, each address its share.
    for (let i = 0; clients.length < LINGER_MAX_CONNECTIONS; i++) {
      for (let j = 0; j < LINGER_MAX_PER_ADDRESS && clients.length < LINGER_MAX_CONNECTIONS; j++) clients.push(openClient(url, 10 * LIMIT, `127.0.1.${i + 1}`));
    }
    await Promise.all(clients.map(answered));
    assert.equal(lingeringConnections(), LINGER_MAX_CONNECTIONS);
    const extra = openClient(url, 10 * LIMIT, '127.0.2.1');
    const answeredAt = await answered(extra);
    assert.match(extra.received(), /^HTTP\/1\.1 413 /);
    assert.ok((await extra.closed) - answeredAt < LINGER_IDLE_MS / 2, 'the extra connection was closed without lingering');
    assert.equal(lingeringConnections(), LINGER_MAX_CONNECTIONS);
    await closeAll(clients);
  });
});
