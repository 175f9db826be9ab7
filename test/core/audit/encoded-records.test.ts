// Records encoded as they are pushed, for a destination that writes bytes: the bytes are exactly those of the batch's
// text, whatever the characters (non-ASCII, surrogate pairs, lone surrogates) and however the records fall across
// blocks, and the buffer's bound counts each record's exact size.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { AuditBuffer, type AuditBytesSink, type AuditDropReason } from '../../../src/core/audit/audit-buffer.js';
import { ENCODED_BLOCK_BYTES, EncodedRecords } from '../../../src/core/audit/encoded-records.js';

/** A seeded generator, so that a failure can be replayed. */
function random(seed: number): (n: number) => number {
  let state = seed;
  return (n) => {
    state = (state * 1_103_515_245 + 12_345) % 2 ** 31;
    return state % n;
  };
}

const PIECES = ['a', '"', 'é', '€', '😀', '\uD800', 'x'.repeat(200), '日本語', '\\u0065'];

function randomLine(next: (n: number) => number, longest: number): string {
  let line = '{"v":"';
  const pieces = next(longest);
  for (let i = 0; i < pieces; i++) line += PIECES[next(PIECES.length)];
  return `${line}"}`;
}

describe('encoded records', () => {
  test('the bytes taken are those of the lines joined by newlines, across blocks and takes', () => {
    const next = random(7);
    const records = new EncodedRecords();
    let lines: string[] = [];
    let batches = 0;
    for (let i = 0; i < 3_000; i++) {
      // Now and then a record longer than a block, which gets one of its own.
      const line = i % 997 === 0 ? `{"long":"${'ü'.repeat(ENCODED_BLOCK_BYTES)}"}` : randomLine(next, 40);
      const size = records.append(line, Number.MAX_SAFE_INTEGER);
      assert.equal(size, Buffer.byteLength(line) + 1, 'the exact size of the record and its newline');
      lines.push(line);
      if (next(50) === 0 || i === 2_999) {
        assert.equal(records.empty, false);
        assert.deepEqual(records.take(), Buffer.from(`${lines.join('\n')}\n`));
        assert.equal(records.empty, true);
        lines = [];
        batches++;
      }
    }
    assert.ok(batches > 10);
    assert.equal(records.take().length, 0, 'nothing left');
  });

  test('a record that does not fit the room is not appended, and one after it is', () => {
    const records = new EncodedRecords();
    assert.equal(records.append('{"n":"é"}', 10), -1, '11 bytes do not fit 10');
    assert.equal(records.empty, true);
    assert.equal(records.append('{"n":"e"}', 10), 10);
    assert.deepEqual(records.take(), Buffer.from('{"n":"e"}\n'));
  });
});

/** A sink taking bytes, whose writes take `delayMs`, keeping every batch. */
function bytesSink(delayMs: number) {
  const batches: Buffer[] = [];
  const sink: AuditBytesSink = {
    write: () => assert.fail('bytes are written as bytes'),
    writeBytes: async (bytes) => {
      await new Promise((resolve) => setTimeout(resolve, delayMs));
      batches.push(Buffer.from(bytes));
    },
  };
  return { sink, batches };
}

describe('audit buffer with a destination that takes bytes', () => {
  test('every record pushed is written, as the text path would write it, and the bound counts exact sizes', { timeout: 5_000 }, async () => {
    const out = bytesSink(5);
    const drops: Array<[number, AuditDropReason]> = [];
    const buffer = new AuditBuffer(out.sink, { maxBytes: 65_536, onDropped: (records, why) => drops.push([records, why]) });
    const next = random(11);
    const lines = Array.from({ length: 200 }, () => randomLine(next, 20));
    for (const line of lines) assert.equal(buffer.push(line), true);
    assert.equal(buffer.bytes, Buffer.byteLength(`${lines.join('\n')}\n`), 'exact bytes held');
    await buffer.close();
    assert.deepEqual(Buffer.concat(out.batches), Buffer.from(`${lines.join('\n')}\n`));
    assert.deepEqual(drops, []);
    assert.equal(buffer.bytes, 0);
  });

  test('a full buffer drops the record that does not fit, exactly at the bound', { timeout: 5_000 }, async () => {
    let release: () => void = () => {};
    const stalled = new Promise<void>((resolve) => (release = resolve));
    const written: Buffer[] = [];
    const drops: AuditDropReason[] = [];
    const sink: AuditBytesSink = { write: () => assert.fail('bytes'), writeBytes: async (bytes) => (await stalled, void written.push(Buffer.from(bytes))) };
    const buffer = new AuditBuffer(sink, { maxBytes: 100, onDropped: (_records, why) => drops.push(why) });
    // 9 bytes and a newline each: ten fill the bound exactly, the eleventh does not fit.
    for (let i = 0; i < 10; i++) assert.equal(buffer.push(`{"n":${i}}ab`), true);
    assert.equal(buffer.bytes, 100);
    assert.equal(buffer.push('{"n":10}a'), false);
    assert.deepEqual(drops, ['buffer_full']);
    release();
    await buffer.close();
    assert.equal(Buffer.concat(written).toString().split('\n').filter(Boolean).length, 10);
  });

  test('a refused batch counts its records as dropped; records held at exit are taken as bytes', { timeout: 5_000 }, async () => {
    const drops: Array<[number, AuditDropReason]> = [];
    const sink: AuditBytesSink = {
      write: () => assert.fail('bytes'),
      writeBytes: async () => {
        throw new Error('disk full');
      },
    };
    const buffer = new AuditBuffer(sink, { maxBytes: 65_536, onDropped: (records, why) => drops.push([records, why]) });
    buffer.push('{"a":1}');
    buffer.push('{"b":"ü"}');
    await buffer.flush();
    assert.deepEqual(drops, [[2, 'write_failed']]);
    assert.equal(buffer.bytes, 0);
    buffer.push('{"c":3}');
    assert.deepEqual(buffer.takePending(), Buffer.from('{"c":3}\n'));
    assert.equal(buffer.takePending().length, 0, 'nothing held after the take');
    await buffer.close();
  });
});
