import assert from 'node:assert/strict';
import { test } from 'node:test';
import { eventStreamData } from '../../../src/core/wire/event-stream.js';
import { messageEventFrame } from '../../../src/core/wire/event-stream-frame.js';

const message = JSON.stringify({ jsonrpc: '2.0', id: 1, result: { text: 'line1\nline2 "quoted" é' } });

test('a message event: one event line, one data line, a blank line', () => {
  assert.equal(messageEventFrame(message), `event: message\ndata: ${message}\n\n`);
});

test('with an id: the id first, for Last-Event-ID', () => {
  assert.equal(messageEventFrame(message, '3_7'), `id: 3_7\nevent: message\ndata: ${message}\n\n`);
});

test('with an id and no data: a priming event, with no event line', () => {
  assert.equal(messageEventFrame('', '3_0'), 'id: 3_0\ndata: \n\n');
});

test('the parser reads back what the writer frames', () => {
  const stream = messageEventFrame('', 'p') + messageEventFrame(message, 'a') + messageEventFrame(message);
  assert.deepEqual(eventStreamData(stream).filter((d) => d !== ''), [message, message]);
});

test('data relayed with line breaks: one data line per line, read back as the same data', () => {
  const relayed = '{"jsonrpc":"2.0",\n"id":8,\r\n"result":{}}';
  const framed = messageEventFrame(relayed, 'r');
  assert.equal(framed, 'id: r\nevent: message\ndata: {"jsonrpc":"2.0",\ndata: "id":8,\ndata: "result":{}}\n\n');
  assert.deepEqual(eventStreamData(framed), ['{"jsonrpc":"2.0",\n"id":8,\n"result":{}}']);
});
