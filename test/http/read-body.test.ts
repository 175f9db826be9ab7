// readBody against a real node:http server and raw client sockets, so the test controls exactly when each
// byte is sent (or not sent at all).
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, request, type IncomingMessage, type Server } from 'node:http';
import { after, before, describe, test } from 'node:test';
import { RequestRejectedError } from '../../src/core/kernel/errors.js';
import { readBody } from '../../src/http/read-body.js';
import { send } from '../helpers/http-client.js';
import { closeServer, listenOnLoopback } from '../helpers/loopback-server.js';

const LIMIT = 16;

/** What readBody gave the server for one request. */
type Outcome = { ok: true; body: string } | { ok: false; error: unknown };

let server: Server;
let base: string;
/** Outcomes in arrival order; `next()` waits for the next one. */
const outcomes: Outcome[] = [];
const waiters: Array<(o: Outcome) => void> = [];
function record(o: Outcome): void {
  const waiter = waiters.shift();
  if (waiter) waiter(o);
  else outcomes.push(o);
}
function nextOutcome(): Promise<Outcome> {
  const ready = outcomes.shift();
  return ready ? Promise.resolve(ready) : new Promise((resolve) => waiters.push(resolve));
}

before(async () => {
  server = createServer((req: IncomingMessage & { body?: unknown }, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    const run = async (): Promise<string> => {
      if (url.pathname === '/parsed') {
        // A body parser ran before: the stream is consumed and req.body holds its result.
        req.resume();
        await once(req, 'end');
        req.body = url.searchParams.get('as') === 'string' ? '{"kept":"as is"}' : { jsonrpc: '2.0', id: 1, method: 'ping', params: { é: 'ü' } };
      }
      return readBody(req, LIMIT, 5_000);
    };
    run().then(
      (body) => {
        record({ ok: true, body });
        res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' });
        res.end(body);
      },
      (error: unknown) => {
        record({ ok: false, error });
        if (res.destroyed) return;
        const e = error as RequestRejectedError;
        res.writeHead(e.status, { ...e.headers, 'content-length': '0' });
        res.end();
      },
    );
  });
  base = await listenOnLoopback(server);
});
after(() => closeServer(server));

function assertTooLarge(outcome: Outcome): void {
  assert.equal(outcome.ok, false);
  const error = (outcome as { error: unknown }).error;
  assert.ok(error instanceof RequestRejectedError, String(error));
  assert.equal(error.status, 413);
  assert.equal(error.reason, 'request_too_large');
  assert.equal(error.jsonRpcCode, -32600);
  assert.deepEqual(error.headers, { Connection: 'close' });
  assert.equal(error.message, `Request body larger than ${LIMIT} bytes`);
}

describe('readBody', () => {
  test('returns the exact body, multibyte characters split across chunks included', async () => {
    const text = 'é世界🙂ok'; // 2 + 3 + 3 + 4 + 2 = 14 bytes
    const bytes = Buffer.from(text, 'utf8');
    assert.equal(bytes.length, 14);
    const req = request(`${base}/`, { method: 'POST', headers: { 'transfer-encoding': 'chunked' } });
    const response = once(req, 'response');
    // Split inside the 3-byte and the 4-byte characters.
    req.write(bytes.subarray(0, 3));
    req.write(bytes.subarray(3, 9));
    req.end(bytes.subarray(9));
    const outcome = await nextOutcome();
    assert.deepEqual(outcome, { ok: true, body: text });
    const [res] = (await response) as [IncomingMessage];
    res.resume();
    assert.equal(res.statusCode, 200);
  });

  test('a body of exactly the limit is accepted; an empty body is the empty string', async () => {
    const exact = 'x'.repeat(LIMIT);
    const res = await send(`${base}/`, { body: exact });
    assert.equal(res.status, 200);
    assert.equal(res.text, exact);
    assert.deepEqual(await nextOutcome(), { ok: true, body: exact });
    const empty = await send(`${base}/`, { body: '' });
    assert.equal(empty.status, 200);
    assert.deepEqual(await nextOutcome(), { ok: true, body: '' });
  });

  test('a declared Content-Length over the limit is refused before any of the body is sent', async () => {
    const req = request(`${base}/`, { method: 'POST', headers: { 'content-length': String(LIMIT + 1) } });
    req.on('error', () => {});
    req.flushHeaders(); // headers only: not one byte of the body is ever written
    const [res] = (await once(req, 'response')) as [IncomingMessage];
    res.resume();
    assert.equal(res.statusCode, 413);
    assert.equal(res.headers.connection, 'close');
    assertTooLarge(await nextOutcome());
    req.destroy();
  });

  test('a chunked body growing past the limit is refused as soon as it does, with Connection: close', async () => {
    const req = request(`${base}/`, { method: 'POST', headers: { 'transfer-encoding': 'chunked' } });
    req.on('error', () => {}); // the server may close while the rest is still being written
    req.write('x'.repeat(LIMIT - 4));
    req.write('y'.repeat(8)); // now LIMIT + 4 bytes; the request is not ended
    const [res] = (await once(req, 'response')) as [IncomingMessage];
    res.resume();
    assert.equal(res.statusCode, 413);
    assert.equal(res.headers.connection, 'close');
    assertTooLarge(await nextOutcome());
    // The rest of the body is discarded without trouble.
    req.write('z'.repeat(1024));
    req.end();
    await once(res, 'end');
  });

  test('a body already parsed by a body parser is re-serialized as one JSON value', async () => {
    const res = await send(`${base}/parsed`, { body: '{"ignored": true}', headers: { 'content-type': 'application/json' } });
    assert.equal(res.status, 200);
    assert.deepEqual(await nextOutcome(), { ok: true, body: '{"jsonrpc":"2.0","id":1,"method":"ping","params":{"é":"ü"}}' });
    await send(`${base}/parsed?as=string`, { body: 'raw' });
    assert.deepEqual(await nextOutcome(), { ok: true, body: '{"kept":"as is"}' });
  });

  test('a client going away mid-body: the read is rejected, nothing crashes, the server keeps serving', { timeout: 10_000 }, async () => {
    const req = request(`${base}/`, { method: 'POST', headers: { 'content-length': String(LIMIT) } });
    req.on('error', () => {});
    req.write('half');
    // Wait until the server has the request, then drop the connection with the body incomplete.
    const started = new Promise<void>((resolve) => server.once('request', () => resolve()));
    await started;
    req.destroy();
    const outcome = await nextOutcome();
    assert.equal(outcome.ok, false);
    const error = (outcome as { error: unknown }).error;
    assert.ok(error instanceof RequestRejectedError, String(error));
    assert.equal(error.status, 400);
    assert.equal(error.reason, 'request_invalid');
    assert.equal(error.jsonRpcCode, -32600);
    assert.equal(error.message, 'Request body could not be read');

    const after = await send(`${base}/`, { body: 'still here' });
    assert.equal(after.status, 200);
    assert.equal(after.text, 'still here');
    assert.deepEqual(await nextOutcome(), { ok: true, body: 'still here' });
  });
});
