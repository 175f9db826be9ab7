import assert from 'node:assert/strict';
import { describe, it, test } from 'node:test';
import { createEventStreamRewriter, eventStreamData } from '../../../src/core/wire/event-stream.js';

// Replacements never contain line ends (JSON.stringify output), so the stand-in drops them too.
const upper = (data: string): string | undefined => (data.includes('"x"') ? data.replaceAll('\n', '').toUpperCase() : undefined);

function run(chunks: (string | Buffer)[], max = 1000, once = false): string {
  const rewriter = createEventStreamRewriter(upper, { maxEventBytes: max, once });
  let out = '';
  for (const c of chunks) {
    const pieces = rewriter.push(Buffer.isBuffer(c) ? c : Buffer.from(c));
    if (pieces === undefined) return `${out}<too large>`;
    out += Buffer.concat(pieces).toString();
  }
  return out + Buffer.concat(rewriter.end()).toString();
}

describe('createEventStreamRewriter', () => {
  it('rewrites message data, keeps other fields, and passes other events byte for byte', () => {
    const out = run(['id: 1\nevent: message\ndata: {"x"', ':1}\n\nevent: ping\ndata: {"x":2}\n\n: comment\n\ndata: {"y":3}\n\ndata: {"x"\ndata: :4}\nretry: 5\n\n']);
    assert.equal(out, 'id: 1\nevent: message\ndata: {"X":1}\n\nevent: ping\ndata: {"x":2}\n\n: comment\n\ndata: {"y":3}\n\ndata: {"X":4}\nretry: 5\n\n');
  });

  it('reads \\r\\n and \\r line ends, also split across chunks, and characters split across chunks', () => {
    const euro = Buffer.from('data: {"x":"€"}\r');
    assert.equal(run([euro.subarray(0, 14), euro.subarray(14), '\n\r', '\ndata: {"y":1}\r\r']), 'data: {"X":"€"}\n\ndata: {"y":1}\r\r');
    // An event ended by \r alone is delivered at once, without waiting for the next chunk.
    const rewriter = createEventStreamRewriter(upper, { maxEventBytes: 100 });
    assert.equal(Buffer.concat(rewriter.push(Buffer.from('data: {"y":2}\r\r'))!).toString(), 'data: {"y":2}\r\r');
  });

  it('refuses an event larger than the limit', () => {
    assert.equal(run(['data: {"x":1}\n\n', `data: ${'a'.repeat(50)}`], 40), 'data: {"X":1}\n\n<too large>');
  });

  it('once: after the first rewritten event the rest passes unparsed', () => {
    assert.equal(run(['data: {"x":1}\n\ndata: {"x":2}\n\n'], 1000, true), 'data: {"X":1}\n\ndata: {"x":2}\n\n');
  });

  it('an event cut off by the end of the stream is still offered to the rewrite, and stays cut off', () => {
    assert.equal(run(['data: {"y":0}\n\ndata: {"x":1}\n']), 'data: {"y":0}\n\ndata: {"X":1}\n');
    assert.equal(run(['data: {"y":0}\n']), 'data: {"y":0}\n');
  });

  it('a byte order mark at the start is passed on and skipped, also when split across chunks', () => {
    const bom = Buffer.from([0xef, 0xbb, 0xbf]);
    const event = Buffer.from('data: {"x":1}\n\n');
    assert.equal(run([Buffer.concat([bom, event])]), '\ufeffdata: {"X":1}\n\n');
    assert.equal(run([bom.subarray(0, 1), bom.subarray(1, 2), Buffer.concat([bom.subarray(2), event])]), '\ufeffdata: {"X":1}\n\n');
    assert.equal(run([bom.subarray(0, 2)]), '\ufffd', 'a lone partial mark is passed on at the end');
    // Only at the start: a mark later in the stream is data like any other.
    assert.equal(run(['data: {"y":0}\n\n', Buffer.concat([bom, event])]), 'data: {"y":0}\n\n\ufeffdata: {"x":1}\n\n');
  });
});

test('eventStreamData: the data of each message event of a whole stream, by the same parser', () => {
  const stream = ': comment\r\nevent: message\r\ndata: {"a":1}\r\n\r\nevent: other\ndata: skipped\n\nid: 7\ndata: line one\ndata: line two\n\ndata: {"unterminated":true}';
  assert.deepEqual(eventStreamData(stream), ['{"a":1}', 'line one\nline two', '{"unterminated":true}']);
  assert.deepEqual(eventStreamData(Buffer.from('\ufeffdata: x\n\n')), ['x'], 'a leading BOM is skipped, bytes or text');
  assert.deepEqual(eventStreamData(''), []);
});
