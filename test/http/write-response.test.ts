// The response writers over real HTTP: exact lengths, 202, SSE framing, and errors after a stream started.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, request, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { after, before, describe, test } from 'node:test';
import type { GuardHttpResponse } from '../../src/core/guard/create-guard.js';
import { jsonRpcError, type JsonRpcMessage } from '../../src/core/wire/jsonrpc.js';
import { startEventStream, writeAccepted, writeError, writeEvent, writeJson } from '../../src/http/write-response.js';
import { send } from '../helpers/http-client.js';
import { closeServer, listenOnLoopback } from '../helpers/loopback-server.js';

let server: Server;
let base: string;
/** Responses held open by the /hold route, for the test to write to. */
const held: ServerResponse[] = [];
const holdWaiters: Array<(res: ServerResponse) => void> = [];

const progress: JsonRpcMessage = { jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 'p', progress: 1, message: 'line1\nline2 "quoted" é' } };
const final: JsonRpcMessage = { jsonrpc: '2.0', id: 1, result: { content: [{ type: 'text', text: '世界' }] } };
const errorAnswer: GuardHttpResponse = {
  status: 403,
  headers: { 'WWW-Authenticate': 'Bearer error="insufficient_scope", resource_metadata="https://x/.well-known/oauth-protected-resource"' },
  body: jsonRpcError(4, -32003, 'Insufficient scope', { error: 'insufficient_scope' }),
};

before(async () => {
  server = createServer((req, res) => {
    switch (new URL(req.url ?? '/', 'http://x').pathname) {
      case '/json':
        return writeJson(res, 201, { text: 'héllo 世界 🙂', n: 1 }, { 'X-Extra': 'yes' });
      case '/accepted':
        return writeAccepted(res);
      case '/sse':
        startEventStream(res);
        writeEvent(res, progress);
        writeEvent(res, final);
        res.end();
        return;
      case '/error':
        return writeError(res, errorAnswer);
      case '/error-after-stream':
        startEventStream(res);
        writeEvent(res, progress);
        writeError(res, errorAnswer);
        return;
      case '/hold': {
        startEventStream(res);
        const waiter = holdWaiters.shift();
        if (waiter) waiter(res);
        else held.push(res);
        return;
      }
    }
  });
  base = await listenOnLoopback(server);
});
after(() => closeServer(server));

describe('writeJson', () => {
  test('Content-Length is the byte length of the multibyte body, not its character count', async () => {
    const res = await send(`${base}/json`, { method: 'GET' });
    const expected = JSON.stringify({ text: 'héllo 世界 🙂', n: 1 });
    assert.equal(res.status, 201);
    assert.equal(res.headers['content-type'], 'application/json');
    assert.equal(res.headers['content-length'], String(Buffer.byteLength(expected)));
    assert.notEqual(Buffer.byteLength(expected), expected.length);
    assert.equal(res.headers['x-extra'], 'yes');
    assert.equal(res.headers['transfer-encoding'], undefined);
    assert.equal(res.text, expected);
  });
});

describe('writeAccepted', () => {
  test('202 with an empty body and Content-Length 0', async () => {
    const res = await send(`${base}/accepted`, { method: 'POST', body: '{}' });
    assert.equal(res.status, 202);
    assert.equal(res.headers['content-length'], '0');
    assert.equal(res.headers['content-type'], undefined);
    assert.equal(res.text, '');
  });
});

describe('event streams', () => {
  test('startEventStream sets the SSE headers; writeEvent frames each message as one event with one data line', async () => {
    const res = await send(`${base}/sse`, { method: 'POST', body: '{}' });
    assert.equal(res.status, 200);
    assert.equal(res.headers['content-type'], 'text/event-stream');
    assert.equal(res.headers['cache-control'], 'no-cache, no-transform');
    assert.equal(res.headers['x-accel-buffering'], 'no');
    assert.equal(res.headers.connection, 'keep-alive');
    assert.equal(res.headers['content-length'], undefined);
    assert.equal(res.text, `event: message\ndata: ${JSON.stringify(progress)}\n\nevent: message\ndata: ${JSON.stringify(final)}\n\n`);
    const events = res.text.split('\n\n').filter(Boolean);
    assert.equal(events.length, 2);
    for (const event of events) assert.equal(event.split('\n').length, 2, event);
    assert.deepEqual(JSON.parse(events[0]!.slice('event: message\ndata: '.length)), progress);
  });

  test('headers reach the client before any event is written', async () => {
    const gotResponse = new Promise<ServerResponse>((resolve) => holdWaiters.push(resolve));
    const req = request(`${base}/hold`, { method: 'GET' });
    req.end();
    const [res] = (await once(req, 'response')) as [IncomingMessage];
    assert.equal(res.statusCode, 200);
    assert.equal(res.headers['content-type'], 'text/event-stream');
    // Only now does the server write the one event and end.
    const serverRes = held.shift() ?? (await gotResponse);
    let text = '';
    res.setEncoding('utf8');
    res.on('data', (chunk: string) => (text += chunk));
    assert.equal(writeEvent(serverRes, final), true);
    serverRes.end();
    await once(res, 'end');
    assert.equal(text, `event: message\ndata: ${JSON.stringify(final)}\n\n`);
  });
});

describe('writeError', () => {
  test('before headers: the error status, its headers and the JSON-RPC body', async () => {
    const res = await send(`${base}/error`, { method: 'POST', body: '{}' });
    assert.equal(res.status, 403);
    assert.equal(res.headers['www-authenticate'], errorAnswer.headers['WWW-Authenticate']);
    assert.equal(res.headers['content-length'], String(Buffer.byteLength(JSON.stringify(errorAnswer.body))));
    assert.deepEqual(res.json, errorAnswer.body);
  });

  test('after the stream started: the response is ended as it is, with no error body appended', async () => {
    const res = await send(`${base}/error-after-stream`, { method: 'POST', body: '{}' });
    assert.equal(res.status, 200);
    assert.equal(res.headers['content-type'], 'text/event-stream');
    assert.equal(res.headers['www-authenticate'], undefined);
    assert.equal(res.text, `event: message\ndata: ${JSON.stringify(progress)}\n\n`);
  });
});
