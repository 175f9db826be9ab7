// Slow request bodies against the real request pipeline on loopback: raw sockets send the headers, then one
// body byte per interval, as a slowloris client would. The body read is bounded in total, answered with 408, and
// the connection is closed while the client is still sending (after the lingering close's bounded read).
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { connect, type Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { createGuard } from '../../src/core/guard/create-guard.js';
import type { DecisionEvent } from '../../src/core/kernel/decision.js';
import { LINGER_MAX_MS } from '../../src/http/lingering-close.js';
import { createRequestPipeline } from '../../src/http/request-pipeline.js';
import { postMcp } from '../helpers/http-client.js';
import { closeServer, listenOnLoopback } from '../helpers/loopback-server.js';
import { startTestIssuer, type TestIssuer } from '../helpers/fake-issuer.js';

const BODY_TIMEOUT_MS = 300;
const TRICKLE_MS = 100;
const SECRET_TOKEN = 'secret-token-that-must-not-be-echoed';

/** What a slow client saw: the raw answer bytes, how many body bytes it got out, and that its socket closed. */
interface SlowClientOutcome {
  answer: string;
  bytesSent: number;
  closed: true;
}

/**
 * Sends the headers of a POST with a 100-byte body, then one body byte every `TRICKLE_MS`, until the server
 * closes the connection (the test's timeout bounds a server that never does).
 */
function slowClient(origin: string, extraHeaders = ''): Promise<SlowClientOutcome> {
  const { port } = new URL(origin);
  return new Promise((resolve, reject) => {
    const socket: Socket = connect(Number(port), '127.0.0.1');
    const received: Buffer[] = [];
    let bytesSent = 0;
    let ticker: NodeJS.Timeout | undefined;
    socket.on('connect', () => {
      socket.write(
        'POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n' +
          `Authorization: Bearer ${SECRET_TOKEN}\r\n${extraHeaders}\r\n`,
      );
      ticker = setInterval(() => {
        if (socket.writable && bytesSent < 100) {
          socket.write(' ');
          bytesSent++;
        }
      }, TRICKLE_MS);
    });
    socket.on('data', (chunk: Buffer) => received.push(chunk));
    // The server may reset a socket it closes while bytes are in flight; what was answered before counts.
    socket.on('error', () => {});
    socket.on('close', () => {
      clearInterval(ticker);
      resolve({ answer: Buffer.concat(received).toString('utf8'), bytesSent, closed: true });
    });
    socket.setTimeout(15_000, () => {
      clearInterval(ticker);
      socket.destroy();
      reject(new Error('the server kept the slow connection open'));
    });
  });
}

function parseAnswer(raw: string): { status: number; headers: Map<string, string>; body: any } {
  const split = raw.indexOf('\r\n\r\n');
  assert.ok(split > 0, `an HTTP answer, got ${JSON.stringify(raw.slice(0, 200))}`);
  const [statusLine, ...headerLines] = raw.slice(0, split).split('\r\n');
  const headers = new Map(headerLines.map((line) => [line.slice(0, line.indexOf(':')).toLowerCase(), line.slice(line.indexOf(':') + 1).trim()]));
  return { status: Number(statusLine?.split(' ')[1]), headers, body: JSON.parse(raw.slice(split + 4)) };
}

describe('slow request bodies (bodyTimeoutMs)', () => {
  let issuer: TestIssuer;
  let server: Server;
  let origin: string;
  const decisions: DecisionEvent[] = [];

  before(async () => {
    issuer = await startTestIssuer();
    server = createServer();
    origin = await listenOnLoopback(server);
    const guard = createGuard({ issuer: issuer.issuer, resource: `${origin}/mcp`, bodyTimeoutMs: BODY_TIMEOUT_MS, onDecision: (event) => void decisions.push(event) });
    const pipeline = createRequestPipeline(guard, async () => undefined);
    server.on('request', (req, res) => {
      if (!pipeline.serve(req, res)) res.writeHead(404).end();
    });
  });
  after(async () => {
    closeServer(server);
    await issuer.close();
  });

  it('answers 408 with a JSON-RPC error and Connection: close, then closes the socket', { timeout: 20_000 }, async () => {
    const outcome = await slowClient(origin);
    const answer = parseAnswer(outcome.answer);
    assert.equal(answer.status, 408);
    assert.equal(answer.headers.get('connection'), 'close');
    assert.equal(answer.body.jsonrpc, '2.0');
    assert.equal(answer.body.id, null);
    assert.equal(answer.body.error.code, -32600);
    assert.equal(answer.body.error.message, `Request body not received within ${BODY_TIMEOUT_MS} ms`);
    assert.ok(!outcome.answer.includes(SECRET_TOKEN), 'the token is not echoed');
    assert.ok(!/\bat .+:\d+:\d+/.test(outcome.answer), 'no stack trace');
    assert.ok(outcome.bytesSent < 100, `closed while the client was still sending (${outcome.bytesSent} of 100 bytes)`);
    const decision = decisions.find((event) => event.reason === 'request_timeout');
    assert.equal(decision?.status, 408);
    assert.equal(decision?.decision, 'deny');
  });

  it('closes 100 slow connections, each on its own bound', { timeout: 30_000 }, async () => {
    const outcomes = await Promise.all(Array.from({ length: 100 }, () => slowClient(origin)));
    for (const outcome of outcomes) {
      assert.equal(parseAnswer(outcome.answer).status, 408);
      assert.ok(outcome.bytesSent < 100);
    }
    const open = await new Promise<number>((resolve, reject) => server.getConnections((error, count) => (error ? reject(error) : resolve(count))));
    assert.equal(open, 0, 'no connection left open');
  });

  it('a refusal that leaves the body unread (a forbidden Origin) closes the connection too, within the lingering bound', { timeout: 20_000 }, async () => {
    const outcome = await slowClient(origin, 'Origin: https://evil.example.com\r\n');
    const answer = parseAnswer(outcome.answer);
    assert.equal(answer.status, 403);
    assert.equal(answer.headers.get('connection'), 'close');
    // The rest of the body is read for a bounded time (lingering close), so a trickle holds it no longer than that.
    const lingerTicks = LINGER_MAX_MS / TRICKLE_MS;
    assert.ok(outcome.bytesSent <= lingerTicks + 10, `closed within the lingering bound, not held open by the trickle (${outcome.bytesSent} bytes sent)`);
  });

  it('a body that arrives in time is served as usual', { timeout: 10_000 }, async () => {
    const answer = await postMcp(`${origin}/mcp`, { jsonrpc: '2.0', id: 1, method: 'ping' });
    // No token: the body was read and parsed (the 401 carries its id), not timed out.
    assert.equal(answer.status, 401);
    assert.equal(answer.json.id, 1);
  });
});
