// The response writers over real HTTP: exact lengths, 202, SSE framing, and errors after a stream started.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, request, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { after, before, describe, test } from 'node:test';
import type { GuardHttpResponse } from '../../src/core/guard/create-guard.js';
import { jsonRpcError, JsonRpcErrorCode, type JsonRpcMessage } from '../../src/core/wire/jsonrpc.js';
import { startEventStream, writeAccepted, writeError, writeEvent, writeEventWithId, writeJson, writeJsonRpcError } from '../../src/http/write-response.js';
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
      case '/jsonrpc-error':
        return writeJsonRpcError(res, 503, 7, JsonRpcErrorCode.InternalError, 'Service unavailable: é', { 'Retry-After': '5' });
      case '/jsonrpc-error-bare':
        return writeJsonRpcError(res, 404, null, JsonRpcErrorCode.SessionNotFound, 'Session not found');
      case '/sse-ids':
        startEventStream(res);
        writeEventWithId(res, 's1', '');
        writeEventWithId(res, 's2', JSON.stringify(final));
        res.end();
        return;
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

describe('writeJsonRpcError', () => {
  /** The raw head of an answer, names in the order they were sent. */
  async function rawHead(path: string): Promise<{ status: number; names: string[]; headers: IncomingMessage['headers']; text: string }> {
    const req = request(`${base}${path}`, { method: 'POST' });
    req.end('{}');
    const [res] = (await once(req, 'response')) as [IncomingMessage];
    let text = '';
    res.setEncoding('utf8');
    res.on('data', (chunk: string) => (text += chunk));
    await once(res, 'end');
    const names = res.rawHeaders.filter((_, i) => i % 2 === 0).map((n) => n.toLowerCase());
    return { status: res.statusCode ?? 0, names, headers: res.headers, text };
  }

  test('the status, the JSON-RPC error body with its exact length, and the extra headers', async () => {
    const { status, names, headers, text } = await rawHead('/jsonrpc-error');
    const body = JSON.stringify(jsonRpcError(7, JsonRpcErrorCode.InternalError, 'Service unavailable: é'));
    assert.equal(status, 503);
    assert.equal(text, body);
    assert.equal(headers['content-length'], String(Buffer.byteLength(body)));
    assert.deepEqual(names.filter((n) => n !== 'date' && n !== 'connection' && n !== 'keep-alive').sort(), ['content-length', 'content-type', 'retry-after']);
    assert.equal(headers['content-type'], 'application/json');
    assert.equal(headers['retry-after'], '5');
  });

  test('without extra headers: the content headers only', async () => {
    const { status, names, text } = await rawHead('/jsonrpc-error-bare');
    assert.equal(status, 404);
    assert.deepEqual(names.slice(0, 2), ['content-type', 'content-length']);
    assert.ok(!names.includes('retry-after'));
    assert.deepEqual(JSON.parse(text), { jsonrpc: '2.0', id: null, error: { code: -32001, message: 'Session not found' } });
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

  test('writeEventWithId: a priming event (an id, empty data, no event line), then messages with ids', async () => {
    const res = await send(`${base}/sse-ids`, { method: 'GET' });
    assert.equal(res.text, `id: s1\ndata: \n\nid: s2\nevent: message\ndata: ${JSON.stringify(final)}\n\n`);
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
