import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createLineSplitter } from '../../../../src/gateway/upstream/stdio/line-splitter.js';

function run(max: number, chunks: (string | Buffer)[]): { lines: string[]; oversized: number[] } {
  const lines: string[] = [];
  const oversized: number[] = [];
  const splitter = createLineSplitter(max, { line: (l) => lines.push(l), oversized: (n) => oversized.push(n) });
  for (const c of chunks) splitter.push(Buffer.isBuffer(c) ? c : Buffer.from(c));
  splitter.end();
  return { lines, oversized };
}

describe('createLineSplitter', () => {
  it('reports each line once complete, across chunks, without its \\n or \\r\\n', () => {
    assert.deepEqual(run(100, ['{"a":1}\n{"b"', ':2}\r\n\n', '{"c":3}']).lines, ['{"a":1}', '{"b":2}', '', '{"c":3}']);
  });

  it('keeps a UTF-8 character split across chunks whole', () => {
    const bytes = Buffer.from('"héllo ✓"\n');
    assert.deepEqual(run(100, [bytes.subarray(0, 3), bytes.subarray(3, 10), bytes.subarray(10)]).lines, ['"héllo ✓"']);
  });

  it('stops at a line longer than the limit, whether it arrives at once or grows, and reports nothing after', () => {
    assert.deepEqual(run(8, ['12345678\n', '123456789\n', 'after\n']), { lines: ['12345678'], oversized: [9] });
    assert.deepEqual(run(8, ['12345', '6789', '\nafter\n']), { lines: [], oversized: [9] });
  });
});
