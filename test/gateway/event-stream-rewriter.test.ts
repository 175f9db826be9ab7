import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createEventStreamRewriter } from '../../src/gateway/event-stream-rewriter.js';

// Replacements never contain line ends (JSON.stringify output), so the stand-in drops them too.
const upper = (data: string): string | undefined => (data.includes('"x"') ? data.replaceAll('\n', '').toUpperCase() : undefined);

function run(chunks: (string | Buffer)[], max = 1000): string {
  const rewriter = createEventStreamRewriter(upper, max);
  let out = '';
  for (const c of chunks) {
    const piece = rewriter.push(Buffer.isBuffer(c) ? c : Buffer.from(c));
    if (piece === undefined) return `${out}<too large>`;
    out += piece;
  }
  return out;
}

describe('createEventStreamRewriter', () => {
  it('rewrites message data, keeps other fields and events, and holds only the event being assembled', () => {
    const out = run(['id: 1\nevent: message\ndata: {"x"', ':1}\n\nevent: ping\ndata: {"x":2}\n\n: comment\n\ndata: {"y":3}\n\ndata: {"x"\ndata: :4}\nretry: 5\n\n', 'data: {"x":9}\n']);
    assert.equal(out, 'id: 1\nevent: message\ndata: {"X":1}\n\nevent: ping\ndata: {"x":2}\n\n: comment\n\ndata: {"y":3}\n\ndata: {"X":4}\nretry: 5\n\n');
  });

  it('reads \\r\\n and \\r line ends, also split across chunks, and characters split across chunks', () => {
    const euro = Buffer.from('data: {"x":"€"}\r');
    assert.equal(run([euro.subarray(0, 14), euro.subarray(14), '\n\r', '\ndata: {"y":1}\r\r']), 'data: {"X":"€"}\n\ndata: {"y":1}\n\n');
    // An event ended by \r alone is delivered at once, without waiting for the next chunk.
    assert.equal(run(['data: {"y":2}\r\r']), 'data: {"y":2}\n\n');
  });

  it('refuses an event larger than the limit', () => {
    assert.equal(run(['data: {"x":1}\n\n', `data: ${'a'.repeat(50)}`], 40), 'data: {"X":1}\n\n<too large>');
  });
});
