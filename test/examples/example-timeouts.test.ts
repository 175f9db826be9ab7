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

test('headers within 10 s, the whole request within 25 s, checked every second', () => {
  assert.equal(notes.server.headersTimeout, 10_000);
  assert.equal(notes.server.requestTimeout, 25_000);
  assert.ok(notes.server.requestTimeout > notes.server.headersTimeout + notes.router.guard.options.bodyTimeoutMs, 'room for the headers and the body timeout');
});

test('a client that never finishes its headers is answered 408 and cut off', { timeout: 20_000 }, async () => {
  const { port } = new URL(notes.url);
  const socket = connect(Number(port), '127.0.0.1');
  socket.write('POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n');
  const started = Date.now();
  const answer = await new Promise<string>((resolve) => {
    let text = '';
    socket.on('data', (chunk) => (text += chunk.toString('latin1')));
    socket.on('close', () => resolve(text));
  });
  const elapsed = Date.now() - started;
  assert.match(answer, /^HTTP\/1\.1 408 /);
  assert.ok(elapsed >= 9_000 && elapsed < 15_000, `closed after ${elapsed} ms`);
});
