import assert from 'node:assert/strict';
import { execFileSync } from '../helpers/child-process.js';
import { once } from 'node:events';
import { createServer, request as httpRequest, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, describe, test } from 'node:test';
import { filterListResponse, type FilterListResponseOptions, type ListAnswerMemo } from '../../src/http/filter-written-response.js';
import type { JsonRpcMessage } from '../../src/core/wire/jsonrpc.js';

/** What replaces an answer that cannot be filtered: the server's answer is named as the fault, nothing of it echoed. */
const UNFILTERABLE_MESSAGE = "Bad gateway: the server's answer was invalid (not JSON, compressed or too large), so its list could not be filtered";

const LIST_REQUEST: JsonRpcMessage = { jsonrpc: '2.0', id: 7, method: 'tools/list', params: {} };
const TOOLS = [{ name: 'public_tool' }, { name: 'secret_tool' }, { name: 'other_tool' }];
const LIST_RESPONSE = { jsonrpc: '2.0', id: 7, result: { tools: TOOLS, nextCursor: 'c1' } };
const FILTERED_RESULT = { tools: [{ name: 'public_tool' }, { name: 'other_tool' }], nextCursor: 'c1' };

/** Drops tools whose name starts with `secret`, like a policy would for a caller without the scope. */
function dropSecrets(response: JsonRpcMessage): JsonRpcMessage {
  const r = response as { result?: { tools?: Array<{ name: string }> } };
  if (!r.result?.tools) return response;
  return { ...response, result: { ...r.result, tools: r.result.tools.filter((t) => !t.name.startsWith('secret')) } } as JsonRpcMessage;
}

type Script = (res: ServerResponse, req: IncomingMessage) => void | Promise<void>;

const servers: Array<ReturnType<typeof createServer>> = [];
after(() => {
  for (const s of servers) s.close();
});

async function serve(script: Script, options?: FilterListResponseOptions, request: JsonRpcMessage = LIST_REQUEST): Promise<string> {
  const server = createServer((req, res) => {
    filterListResponse(res, request, dropSecrets, options);
    void script(res, req);
  });
  servers.push(server);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
}

interface RawResponse {
  status: number;
  headers: IncomingMessage['headers'];
  body: Buffer;
}

async function get(url: string): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    httpRequest(url, { method: 'POST' }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    })
      .on('error', reject)
      .end();
  });
}

/** Splits an SSE body into events (blank-line separated), normalizing line ends, for assertions. */
function sseData(body: string): unknown[] {
  const out: unknown[] = [];
  for (const block of body.replace(/\r\n|\r/g, '\n').split('\n\n')) {
    const data = block
      .split('\n')
      .filter((l) => l.startsWith('data:'))
      .map((l) => l.slice(5).replace(/^ /, ''));
    if (data.length > 0) out.push(JSON.parse(data.join('\n')));
  }
  return out;
}

const tick = (): Promise<void> => new Promise((r) => setImmediate(r));

describe('filterListResponse: application/json', () => {
  test('writeHead with a headers object, write, end (the SDK transport through @hono/node-server)', async () => {
    const body = JSON.stringify(LIST_RESPONSE);
    const url = await serve((res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), 'mcp-session-id': 's1' });
      res.write(body.slice(0, 10));
      res.write(Buffer.from(body.slice(10)));
      res.end();
    });
    const r = await get(url);
    assert.equal(r.status, 200);
    assert.equal(r.headers['mcp-session-id'], 's1');
    assert.equal(Number(r.headers['content-length']), r.body.length);
    assert.deepEqual(JSON.parse(r.body.toString()), { jsonrpc: '2.0', id: 7, result: FILTERED_RESULT });
  });

  test('implicit headers (setHeader then end with a body, as Express res.json does); a stale ETag is dropped', async () => {
    const url = await serve((res) => {
      const body = JSON.stringify(LIST_RESPONSE);
      res.setHeader('Content-Type', 'application/json; charset=utf-8');
      res.setHeader('Content-Length', Buffer.byteLength(body));
      res.setHeader('ETag', 'W/"abc"');
      res.statusCode = 200;
      res.end(body, 'utf8');
    });
    const r = await get(url);
    assert.equal(r.status, 200);
    assert.equal(r.headers.etag, undefined);
    assert.equal(Number(r.headers['content-length']), r.body.length);
    assert.deepEqual(JSON.parse(r.body.toString()).result, FILTERED_RESULT);
  });

  test('a response whose id differs ("7" for 7) is filtered all the same: the shape decides, not the id', async () => {
    const body = JSON.stringify({ ...LIST_RESPONSE, id: '7' });
    const url = await serve((res) => {
      res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) });
      res.end(body);
    });
    const r = await get(url);
    assert.deepEqual(JSON.parse(r.body.toString()), { jsonrpc: '2.0', id: '7', result: FILTERED_RESULT });
    assert.equal(Number(r.headers['content-length']), r.body.length);
  });

  test('batch arrays: every response is filtered', async () => {
    const other = { jsonrpc: '2.0', id: 8, result: { tools: TOOLS } };
    const url = await serve((res) => {
      res.writeHead(200, ['Content-Type', 'application/json']);
      res.end(JSON.stringify([other, LIST_RESPONSE]));
    });
    const r = await get(url);
    assert.deepEqual(JSON.parse(r.body.toString()), [{ jsonrpc: '2.0', id: 8, result: { tools: FILTERED_RESULT.tools } }, { jsonrpc: '2.0', id: 7, result: FILTERED_RESULT }]);
  });

  test('error responses pass unchanged; a list answer that is not JSON is replaced by a 502 JSON-RPC error (fail closed)', async () => {
    const error = JSON.stringify({ jsonrpc: '2.0', id: 7, error: { code: -32601, message: 'nope' } });
    let url = await serve((res) => {
      res.writeHead(404, { 'Content-Type': 'application/json' });
      res.end(error);
    });
    let r = await get(url);
    assert.equal(r.status, 404);
    assert.equal(r.body.toString(), error);
    url = await serve((res) => {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end('{not json');
    });
    r = await get(url);
    assert.equal(r.status, 502);
    assert.deepEqual(JSON.parse(r.body.toString()), { jsonrpc: '2.0', id: 7, error: { code: -32603, message: UNFILTERABLE_MESSAGE } });
  });

  test('a list answer behind a UTF-8 byte order mark is filtered, not forwarded whole', async () => {
    const url = await serve((res) => {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end(Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(JSON.stringify(LIST_RESPONSE))]));
    });
    const r = await get(url);
    assert.equal(r.status, 200);
    // What a client reads: `Response.json()` decodes UTF-8 and drops the mark.
    assert.deepEqual(JSON.parse(new TextDecoder().decode(r.body)), { jsonrpc: '2.0', id: 7, result: FILTERED_RESULT });
  });

  test('a body over maxBufferedBytes is replaced by a 502 JSON-RPC error (fail closed)', async () => {
    const url = await serve(
      (res) => {
        res.writeHead(200, { 'Content-Type': 'application/json' });
        res.write(JSON.stringify(LIST_RESPONSE));
        res.write(' '.repeat(100));
        res.end();
      },
      { maxBufferedBytes: 64 },
    );
    const r = await get(url);
    assert.equal(r.status, 502);
    assert.deepEqual(JSON.parse(r.body.toString()), {
      jsonrpc: '2.0',
      id: 7,
      error: { code: -32603, message: UNFILTERABLE_MESSAGE },
    });
  });

  test('a compressed list answer cannot be filtered: 502 instead of an unfiltered list', async () => {
    const url = await serve((res) => {
      res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Encoding': 'gzip' });
      res.end(Buffer.from([0x1f, 0x8b, 0, 0]));
    });
    const r = await get(url);
    assert.equal(r.status, 502);
    assert.equal(r.headers['content-encoding'], undefined);
    assert.equal(JSON.parse(r.body.toString()).error.code, -32603);
  });

  test('other content types pass through untouched, headers and all', async () => {
    const url = await serve((res) => {
      res.writeHead(200, { 'Content-Type': 'text/plain', 'Content-Length': 5 });
      res.end('hello');
    });
    const r = await get(url);
    assert.equal(r.headers['content-type'], 'text/plain');
    assert.equal(r.body.toString(), 'hello');
  });

  test('an error path that checks headersSent after the head was held does not write a second head', async () => {
    const url = await serve((res) => {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.write(JSON.stringify(LIST_RESPONSE));
      assert.equal(res.headersSent, true);
      res.end();
    });
    const r = await get(url);
    assert.deepEqual(JSON.parse(r.body.toString()).result, FILTERED_RESULT);
  });
});

describe('filterListResponse: text/event-stream', () => {
  const progress = { jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 1, progress: 1 } };

  test('the SDK shape: event: message / id: / data:, only the matching event is rewritten, fields kept', async () => {
    const first = `event: message\nid: e1\ndata: ${JSON.stringify(progress)}\n\n`;
    const url = await serve((res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', 'content-length': 999 });
      res.flushHeaders();
      res.write(first);
      res.write(`event: message\nid: e2\ndata: ${JSON.stringify(LIST_RESPONSE)}\n\n`);
      res.end();
    });
    const r = await get(url);
    assert.equal(r.headers['content-length'], undefined);
    const text = r.body.toString();
    assert.ok(text.startsWith(first), 'the other event is forwarded byte for byte');
    assert.equal(text.slice(first.length), `event: message\nid: e2\ndata: ${JSON.stringify({ jsonrpc: '2.0', id: 7, result: FILTERED_RESULT })}\n\n`);
  });

  test('CRLF line ends, multi-line data, comments and a retry field; written one byte at a time', async () => {
    const listJson = JSON.stringify(LIST_RESPONSE, null, 1); // multi-line JSON → several data: lines
    const listEvent = `: a comment\r\nretry: 10\r\n${listJson
      .split('\n')
      .map((l) => `data:${l}`)
      .join('\r\n')}\r\n\r\n`;
    const before = `data: ${JSON.stringify(progress)}\r\n\r\n`;
    const afterEvent = `event: message\r\ndata: {"jsonrpc":"2.0","method":"notifications/message","params":{}}\r\n\r\n`;
    const stream = Buffer.from(before + listEvent + afterEvent);
    const url = await serve(async (res) => {
      res.writeHead(200, { 'Content-Type': 'text/event-stream' });
      for (let i = 0; i < stream.length; i++) res.write(stream.subarray(i, i + 1));
      res.end();
    });
    const text = (await get(url)).body.toString();
    assert.ok(text.startsWith(before));
    assert.ok(text.endsWith(afterEvent), 'events after the match pass through unchanged');
    const rewritten = text.slice(before.length, text.length - afterEvent.length);
    assert.ok(rewritten.startsWith(': a comment\nretry: 10\ndata: '));
    assert.deepEqual(sseData(text), [progress, { jsonrpc: '2.0', id: 7, result: FILTERED_RESULT }, JSON.parse(afterEvent.split('data: ')[1]!)]);
  });

  test('chunk boundaries at every position of a two-event stream give the same events', async () => {
    const stream = `data: ${JSON.stringify(progress)}\r\n\r\nevent: message\r\ndata: ${JSON.stringify(LIST_RESPONSE)}\r\n\r\n`;
    const bytes = Buffer.from(stream);
    for (const cut of [1, 5, 20, bytes.indexOf('\r\n\r\n') + 1, bytes.indexOf('\r\n\r\n') + 2, bytes.indexOf('\r\n\r\n') + 3, bytes.length - 1]) {
      const url = await serve((res) => {
        res.writeHead(200, { 'Content-Type': 'text/event-stream' });
        res.write(bytes.subarray(0, cut));
        res.end(bytes.subarray(cut));
      });
      const text = (await get(url)).body.toString();
      assert.deepEqual(sseData(text), [progress, { jsonrpc: '2.0', id: 7, result: FILTERED_RESULT }], `cut at ${cut}`);
      assert.ok(text.startsWith(`data: ${JSON.stringify(progress)}\r\n\r\n`), `cut at ${cut}: first event byte for byte`);
    }
  });

  test('bare CR line ends, with an event ending on a CR at the end of a chunk', async () => {
    const first = `data: ${JSON.stringify(progress)}\r\r`;
    const url = await serve((res) => {
      res.writeHead(200, { 'Content-Type': 'text/event-stream' });
      res.write(first);
      res.write(`data: ${JSON.stringify(LIST_RESPONSE)}\r`);
      res.write('\r');
      res.end('\n: trailing comment\n\n');
    });
    const text = (await get(url)).body.toString();
    assert.ok(text.startsWith(first));
    assert.deepEqual(sseData(text), [progress, { jsonrpc: '2.0', id: 7, result: FILTERED_RESULT }]);
    assert.ok(!text.includes('secret_tool'));
  });

  test('a stream starting with a byte order mark is still filtered (clients skip the mark)', async () => {
    const url = await serve((res) => {
      res.writeHead(200, { 'Content-Type': 'text/event-stream' });
      res.end(Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(`data: ${JSON.stringify(LIST_RESPONSE)}\n\n`)]));
    });
    const text = (await get(url)).body.toString();
    assert.ok(!text.includes('secret_tool'), text);
    assert.deepEqual(sseData(text.replace(/^\ufeff/, '')), [{ jsonrpc: '2.0', id: 7, result: FILTERED_RESULT }]);
  });

  test('a list answer with another id is filtered too; other event types and non-JSON data pass through untouched', async () => {
    const untouched = `event: custom\ndata: ${JSON.stringify(LIST_RESPONSE)}\n\n` + `data: hello\n\n` + `data\n\n`;
    const url = await serve((res) => {
      res.writeHead(200, { 'Content-Type': 'text/event-stream' });
      res.end(`event: message\ndata: ${JSON.stringify({ ...LIST_RESPONSE, id: '7' })}\n\n${untouched}`);
    });
    assert.equal((await get(url)).body.toString(), `event: message\ndata: ${JSON.stringify({ jsonrpc: '2.0', id: '7', result: FILTERED_RESULT })}\n\n${untouched}`);
  });

  test('an event cut off by the end of the stream is still filtered if it is the response', async () => {
    const url = await serve((res) => {
      res.writeHead(200, { 'Content-Type': 'text/event-stream' });
      res.end(`data: ${JSON.stringify(LIST_RESPONSE)}\n`);
    });
    const text = (await get(url)).body.toString();
    assert.deepEqual(sseData(text), [{ jsonrpc: '2.0', id: 7, result: FILTERED_RESULT }]);
  });

  test('no buffering: the client reads the first event before the server writes the list event', async () => {
    let clientGotFirst!: () => void;
    const firstSeen = new Promise<void>((r) => (clientGotFirst = r));
    let listWritten = false;
    const url = await serve(async (res) => {
      res.writeHead(200, { 'Content-Type': 'text/event-stream' });
      res.flushHeaders();
      // The first event arrives in two pieces, the second ending it.
      res.write('event: message\ndata: {"jsonrpc":"2.0","method":"notifications/progress",');
      await tick();
      res.write('"params":{"progressToken":1,"progress":1}}\n\n');
      await firstSeen;
      listWritten = true;
      res.write(`event: message\ndata: ${JSON.stringify(LIST_RESPONSE)}\n\n`);
      res.end();
    });
    const body = await new Promise<string>((resolve, reject) => {
      httpRequest(url, { method: 'POST' }, (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => {
          text += c;
          if (text.includes('\n\n') && !listWritten) {
            assert.deepEqual(sseData(text), [progress]);
            clientGotFirst();
          }
        });
        res.on('end', () => resolve(text));
        res.on('error', reject);
      })
        .on('error', reject)
        .end();
    });
    assert.deepEqual(sseData(body), [progress, { jsonrpc: '2.0', id: 7, result: FILTERED_RESULT }]);
  });

  test('an event over maxBufferedBytes ends the stream with a JSON-RPC error event (fail closed)', async () => {
    const url = await serve(
      (res) => {
        res.writeHead(200, { 'Content-Type': 'text/event-stream' });
        res.write('data: {"jsonrpc":"2.0","method":"x"}\n\n');
        res.write(`data: ${JSON.stringify(LIST_RESPONSE)}`);
        res.end('\n\n');
      },
      { maxBufferedBytes: 64 },
    );
    const text = (await get(url)).body.toString();
    assert.ok(!text.includes('secret_tool'));
    assert.deepEqual(sseData(text), [
      { jsonrpc: '2.0', method: 'x' },
      { jsonrpc: '2.0', id: 7, error: { code: -32603, message: UNFILTERABLE_MESSAGE } },
    ]);
  });

  test('write() reports backpressure and the writer gets drain', async () => {
    const big = `data: ${JSON.stringify({ jsonrpc: '2.0', method: 'n', params: { pad: 'x'.repeat(256 * 1024) } })}\n\n`;
    let sawFalse = false;
    const url = await serve(async (res) => {
      res.writeHead(200, { 'Content-Type': 'text/event-stream' });
      for (let i = 0; i < 8; i++) {
        if (!res.write(big)) {
          sawFalse = true;
          await once(res, 'drain');
        }
      }
      res.end(`data: ${JSON.stringify(LIST_RESPONSE)}\n\n`);
    });
    const text = (await get(url)).body.toString();
    assert.equal(sawFalse, true);
    assert.equal(sseData(text).length, 9);
    assert.deepEqual(sseData(text)[8], { jsonrpc: '2.0', id: 7, result: FILTERED_RESULT });
  });
});

test('a body the upstream writes in answer to a notification is filtered too', async () => {
  const url = await serve(
    (res) => {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify(LIST_RESPONSE));
    },
    undefined,
    { jsonrpc: '2.0', method: 'notifications/initialized' },
  );
  assert.deepEqual(JSON.parse((await get(url)).body.toString()), { jsonrpc: '2.0', id: 7, result: FILTERED_RESULT });
});

describe('filterListResponse: the answer to any other request', () => {
  const CALL_REQUEST: JsonRpcMessage = { jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'x' } };
  const callAnswer = (text: string) => JSON.stringify({ jsonrpc: '2.0', id: 7, result: { content: [{ type: 'text', text }] } });

  test('an answer that cannot hold a list passes byte for byte, without a parse (the filter is never called)', async () => {
    const body = callAnswer('say "tools" and \\u00e9');
    const server = createServer((_req, res) => {
      filterListResponse(res, CALL_REQUEST, () => assert.fail('not parsed'));
      res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) });
      res.write(body.slice(0, 5));
      res.end(body.slice(5));
    });
    servers.push(server);
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const r = await get(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`);
    assert.equal(r.body.toString(), body);
    assert.equal(r.headers['content-length'], String(Buffer.byteLength(body)));
  });

  test('a list carried by the answer to a call is filtered, JSON or event stream, whatever its id', async () => {
    let url = await serve((res) => {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify({ ...LIST_RESPONSE, id: 7 }));
    }, undefined, CALL_REQUEST);
    assert.deepEqual(JSON.parse((await get(url)).body.toString()).result, FILTERED_RESULT);
    url = await serve((res) => {
      res.writeHead(200, { 'Content-Type': 'text/event-stream' });
      res.write(`data: ${JSON.stringify({ ...LIST_RESPONSE, id: 9 })}\n\n`);
      res.end(`data: ${callAnswer('done')}\n\n`);
    }, undefined, CALL_REQUEST);
    assert.deepEqual(sseData((await get(url)).body.toString()), [{ jsonrpc: '2.0', id: 9, result: FILTERED_RESULT }, JSON.parse(callAnswer('done'))]);
  });

  test('an answer larger than maxBufferedBytes passes on as it comes, and is cut off should a list key follow', async () => {
    const big = callAnswer('x'.repeat(200));
    let url = await serve((res) => {
      res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(big) });
      for (let i = 0; i < big.length; i += 50) res.write(big.slice(i, i + 50));
      res.end();
    }, { maxBufferedBytes: 64 }, CALL_REQUEST);
    const passed = await get(url);
    assert.equal(passed.status, 200);
    assert.equal(passed.body.toString(), big);
    // The key arrives cut in two across chunks, after the head and the first bytes were sent.
    const leaking = `{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"${'x'.repeat(100)}"}],"resou` + `rces":[{"uri":"secret"}]}}`;
    url = await serve((res) => {
      res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(leaking) });
      const cut = leaking.indexOf('rces"');
      res.write(leaking.slice(0, 80));
      res.write(leaking.slice(80, cut));
      res.end(leaking.slice(cut));
    }, { maxBufferedBytes: 64 }, CALL_REQUEST);
    const cutOff = await new Promise<{ body: string; error?: Error }>((resolve) => {
      let body = '';
      httpRequest(url, { method: 'POST' }, (res) => {
        res.on('data', (c: Buffer) => (body += c.toString()));
        res.on('end', () => resolve({ body }));
        res.on('error', (error) => resolve({ body, error }));
      })
        .on('error', (error) => resolve({ body, error }))
        .end();
    });
    assert.ok(cutOff.error, 'the answer was cut off');
    assert.doesNotMatch(cutOff.body, /secret/);
  });
});

describe('filterListResponse: a call\'s answer is not held', () => {
  const CALL_REQUEST: JsonRpcMessage = { jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'x' } };

  test('its first bytes reach the client before the handler writes the rest', async () => {
    let clientGotFirst!: () => void;
    const firstSeen = new Promise<boolean>((resolve) => {
      clientGotFirst = () => resolve(true);
      setTimeout(() => resolve(false), 2000).unref();
    });
    let seenBeforeEnd: boolean | undefined;
    const url = await serve(async (res) => {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.write('{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"');
      seenBeforeEnd = await firstSeen;
      res.end('done"}]}}');
    }, undefined, CALL_REQUEST);
    const body = await new Promise<string>((resolve, reject) => {
      let text = '';
      httpRequest(url, { method: 'POST' }, (res) => {
        res.on('data', (c: Buffer) => {
          text += c.toString();
          clientGotFirst();
        });
        res.on('end', () => resolve(text));
      })
        .on('error', reject)
        .end();
    });
    assert.equal(seenBeforeEnd, true, 'the first bytes were not held until the end');
    assert.deepEqual(JSON.parse(body).result.content[0].text, 'done');
  });

  test('write returns false while the client does not read (backpressure), and drain follows', async () => {
    let sawFalse = false;
    let drained = false;
    let release!: () => void;
    const reading = new Promise<void>((r) => (release = r));
    const chunk = 'x'.repeat(65_536);
    const url = await serve(async (res) => {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.write('{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"');
      for (let i = 0; i < 256 && !sawFalse; i++) sawFalse = !res.write(chunk);
      release();
      if (sawFalse) {
        await once(res, 'drain');
        drained = true;
      }
      res.end('"}]}}');
    }, undefined, CALL_REQUEST);
    const body = await new Promise<string>((resolve, reject) => {
      httpRequest(url, { method: 'POST' }, (res) => {
        res.pause();
        void reading.then(() => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => resolve(Buffer.concat(chunks).toString()));
          res.resume();
        });
      })
        .on('error', reject)
        .end();
    });
    assert.equal(sawFalse, true, 'write returned false');
    assert.equal(drained, true);
    assert.ok(JSON.parse(body).result.content[0].text.length >= 65_536);
  });

  test('an event larger than maxBufferedBytes passes when it holds no list key; one that does is refused', async () => {
    const big = JSON.stringify({ jsonrpc: '2.0', id: 7, result: { content: [{ type: 'text', text: 'x'.repeat(500) }] } });
    let url = await serve((res) => {
      res.writeHead(200, { 'Content-Type': 'text/event-stream' });
      for (let i = 0; i < big.length; i += 100) res.write(`${i === 0 ? 'event: message\ndata: ' : ''}${big.slice(i, i + 100)}`);
      res.end('\n\n');
    }, { maxBufferedBytes: 200 }, CALL_REQUEST);
    assert.deepEqual(sseData((await get(url)).body.toString()), [JSON.parse(big)]);
    const listy = JSON.stringify({ jsonrpc: '2.0', id: 7, result: { tools: [{ name: 'secret_tool' }], pad: 'x'.repeat(500) } });
    url = await serve((res) => {
      res.writeHead(200, { 'Content-Type': 'text/event-stream' });
      for (let i = 0; i < listy.length; i += 100) res.write(`${i === 0 ? 'data: ' : ''}${listy.slice(i, i + 100)}`);
      res.end('\n\n');
    }, { maxBufferedBytes: 200 }, CALL_REQUEST);
    const text = (await get(url)).body.toString();
    assert.doesNotMatch(text, /secret/);
    assert.deepEqual(sseData(text), [{ jsonrpc: '2.0', id: 7, error: { code: -32603, message: UNFILTERABLE_MESSAGE } }]);
  });
});

describe('filterListResponse: reusing a filtered answer (memo)', () => {
  /** Serves answers from `bodies` in turn, filtering with a counting filter and one shared memo. */
  async function memoServer(bodies: string[], key = 'k', store: ListAnswerMemo = new Map()) {
    let filtered = 0;
    let next = 0;
    const server = createServer((req, res) => {
      const id = Number(new URL(req.url!, 'http://x').searchParams.get('id') ?? 7);
      const body = bodies[next++]!.replace('"id":7', `"id":${id}`);
      filterListResponse(res, { ...LIST_REQUEST, id }, (response) => (filtered++, dropSecrets(response)), { memo: { key, store } });
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end(body);
    });
    servers.push(server);
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
    return { store, filtered: () => filtered, fetchAnswer: async (id = 7) => JSON.parse((await get(`${url}?id=${id}`)).body.toString()) };
  }

  test('the same upstream bytes are filtered once; another id reuses it with its own id', async () => {
    const body = JSON.stringify(LIST_RESPONSE);
    const { filtered, fetchAnswer } = await memoServer([body, body, body]);
    assert.deepEqual(await fetchAnswer(7), { jsonrpc: '2.0', id: 7, result: FILTERED_RESULT });
    assert.deepEqual(await fetchAnswer(7), { jsonrpc: '2.0', id: 7, result: FILTERED_RESULT });
    assert.deepEqual(await fetchAnswer(9), { jsonrpc: '2.0', id: 9, result: FILTERED_RESULT });
    assert.equal(filtered(), 1);
  });

  test('changed upstream bytes are filtered again', async () => {
    const changed = JSON.stringify({ ...LIST_RESPONSE, result: { tools: [...TOOLS, { name: 'secret_two' }, { name: 'new_tool' }] } });
    const { filtered, fetchAnswer } = await memoServer([JSON.stringify(LIST_RESPONSE), changed]);
    await fetchAnswer();
    assert.deepEqual((await fetchAnswer()).result.tools.map((t: { name: string }) => t.name), ['public_tool', 'other_tool', 'new_tool']);
    assert.equal(filtered(), 2);
  });

  test('another key (other effective scopes) never reuses the answer', async () => {
    const store: ListAnswerMemo = new Map();
    const body = JSON.stringify(LIST_RESPONSE);
    const a = await memoServer([body], 'scopes-a', store);
    const b = await memoServer([body], 'scopes-b', store);
    await a.fetchAnswer();
    await b.fetchAnswer();
    assert.equal(a.filtered() + b.filtered(), 2);
    assert.deepEqual([...store.keys()], ['scopes-a', 'scopes-b']);
  });

  test('the memo is bounded: answers over 1 MiB are not kept', async () => {
    const big = JSON.stringify({ ...LIST_RESPONSE, result: { tools: [...TOOLS, { name: 'x'.repeat(1_100_000) }] } });
    const { store, filtered, fetchAnswer } = await memoServer([big, big]);
    await fetchAnswer();
    await fetchAnswer();
    assert.equal(filtered(), 2);
    assert.equal(store.size, 0);
  });
});

describe('filterListResponse: the response object after filtering', () => {
  test('is left with fast properties (the patch is rolled back newest first), for JSON, event streams and pass-through', () => {
    // V8's own answer, asked in a child started with --allow-natives-syntax: a response left in dictionary
    // mode makes every later property access on it slower, in Node's HTTP code as in ours.
    const script = `
      import { createServer } from 'node:http';
      import { filterListResponse } from ${JSON.stringify(new URL('../../src/http/filter-written-response.ts', import.meta.url).href)};
      const fast = (o) => eval('%HasFastProperties(o)');
      const results = [];
      const server = createServer((req, res) => {
        const kind = req.url.slice(1);
        filterListResponse(res, { jsonrpc: '2.0', id: 1, method: 'tools/list' }, (r) => r, { memo: { key: 'k', store: new Map() } });
        if (kind === 'sse') {
          res.writeHead(200, { 'content-type': 'text/event-stream' });
          res.end('event: message\\ndata: {"jsonrpc":"2.0","id":1,"result":{"tools":[]}}\\n\\n');
        } else {
          res.writeHead(200, { 'content-type': kind === 'json' ? 'application/json' : 'text/plain' });
          res.write('{"jsonrpc":"2.0","id":1,"result":');
          res.end('{"tools":[]}}');
        }
        results.push(kind, fast(res), Object.hasOwn(res, 'write'), res.statusMessage);
      }).listen(0, '127.0.0.1', async () => {
        const base = 'http://127.0.0.1:' + server.address().port;
        for (const kind of ['json', 'plain', 'sse']) await (await fetch(base + '/' + kind)).text();
        server.close();
        console.log(JSON.stringify(results));
      });
    `;
    const out = execFileSync(process.execPath, ['--allow-natives-syntax', '--import', 'tsx', '--input-type=module', '--eval', script], { encoding: 'utf8', timeout: 30_000 });
    assert.deepEqual(JSON.parse(out.trim()), ['json', true, false, 'OK', 'plain', true, false, 'OK', 'sse', true, false, 'OK']);
  });
});

describe('filterListResponse: a response filtered twice', () => {
  test('goes through both filters, the inner one first, whichever writes follow', async () => {
    /** Drops tools whose name starts with `other`: a second policy over the first. */
    const dropOthers = (response: JsonRpcMessage): JsonRpcMessage => {
      const r = response as { result?: { tools?: Array<{ name: string }> } };
      if (!r.result?.tools) return response;
      return { ...response, result: { ...r.result, tools: r.result.tools.filter((t) => !t.name.startsWith('other')) } } as JsonRpcMessage;
    };
    const server = createServer((_req, res) => {
      filterListResponse(res, LIST_REQUEST, dropSecrets);
      filterListResponse(res, LIST_REQUEST, dropOthers);
      const body = JSON.stringify(LIST_RESPONSE);
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
      res.write(body.slice(0, 20));
      res.end(body.slice(20));
    });
    servers.push(server);
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const res = await get(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`);
    assert.equal(res.status, 200);
    assert.deepEqual(JSON.parse(res.body.toString()), { jsonrpc: '2.0', id: 7, result: { tools: [{ name: 'public_tool' }], nextCursor: 'c1' } });
    assert.equal(Number(res.headers['content-length']), res.body.length);
  });
});
