// The example servers bound the time a client may take to send a request, as the docs tell users to: the guard
// bounds the body, the headers are the server's (Node's default would let them trickle for a minute or more).
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { after, before, test } from 'node:test';
import { startNotesServer, type RunningNotesServer } from '../../examples/notes-server.js';
import { startTestIssuer, type TestIssuer } from '../helpers/fake-issuer.js';

let issuer: TestIssuer;
let notes: RunningNotesServer;
before(async () => {
  issuer = await startTestIssuer();
  notes = await startNotesServer({ issuer: issuer.issuer });
});
after(async () => {
  await notes.close();
  await issuer.close();
});

test('headers within 10 s; the whole request within the headers, the body timeout and 5 s', async () => {
  assert.equal(notes.server.headersTimeout, 10_000);
  assert.equal(notes.server.requestTimeout, 10_000 + 10_000 + 5_000, 'with the default body timeout (10 s)');
  // A longer body timeout moves the request timeout with it, so that the guard's 408 still comes first.
  const slow = await startNotesServer({ issuer: issuer.issuer, bodyTimeoutMs: 60_000 });
  try {
    assert.equal(slow.server.requestTimeout, 10_000 + 60_000 + 5_000);
  } finally {
    await slow.close();
  }
});

test('a client that never finishes its headers is answered 408 and cut off', { timeout: 20_000 }, async () => {
  const { port } = new URL(notes.url);
  const socket = connect(Number(port), '127.0.0.1');
  socket.write('POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n');
  const started = Date.now();
  let text = '';
  const answer = await new Promise<string>((resolve) => {
    socket.on('data', (chunk) => (text += chunk.toString('latin1')));
    // A reset after the answer ends the wait as well as a close does.
    socket.on('error', () => resolve(text));
    socket.on('close', () => resolve(text));
  }).finally(() => socket.destroy());
  const elapsed = Date.now() - started;
  assert.match(answer, /^HTTP\/1\.1 408 /);
  assert.ok(elapsed >= 9_000 && elapsed < 15_000, `closed after ${elapsed} ms`);
});
