// The audit buffer's close: records pushed while it runs (answers still ending) are written, those pushed after it
// are dropped and counted as such, not as a full buffer.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { AuditBuffer, type AuditDropReason } from '../../../src/core/audit/audit-buffer.js';

/** A sink whose writes take `delayMs`, keeping every line written. */
function slowSink(delayMs: number) {
  const lines: string[] = [];
  let closed = false;
  return {
    lines,
    get closed() {
      return closed;
    },
    sink: {
      write: async (batch: string) => {
        await new Promise((resolve) => setTimeout(resolve, delayMs));
        lines.push(...batch.split('\n').filter((line) => line !== ''));
      },
      close: () => {
        closed = true;
      },
    },
  };
}

describe('audit buffer close', () => {
  test('a record pushed while the close runs is written; one pushed after it is dropped as closed', { timeout: 5_000 }, async () => {
    const out = slowSink(30);
    const drops: Array<[number, AuditDropReason]> = [];
    const buffer = new AuditBuffer(out.sink, { maxBytes: 1 << 20, onDropped: (records, why) => drops.push([records, why]) });
    buffer.push('{"n":1}');
    const closing = buffer.close();
    // The first batch is being written: an answer ends now, before the close is done.
    await new Promise((resolve) => setTimeout(resolve, 10));
    assert.equal(buffer.push('{"n":2}'), true, 'taken while the close runs');
    await closing;
    assert.deepEqual(out.lines, ['{"n":1}', '{"n":2}']);
    assert.equal(out.closed, true);
    assert.deepEqual(drops, []);
    assert.equal(buffer.push('{"n":3}'), false, 'refused once the close is done');
    assert.deepEqual(drops, [[1, 'closed']]);
    assert.equal(buffer.dropped, 1);
    await buffer.close();
    assert.deepEqual(out.lines, ['{"n":1}', '{"n":2}'], 'a second close writes nothing more');
  });

  test('a close with nothing held is done at once, and a push after it is dropped as closed', async () => {
    const out = slowSink(0);
    const drops: AuditDropReason[] = [];
    const buffer = new AuditBuffer(out.sink, { maxBytes: 1 << 20, onDropped: (_records, why) => drops.push(why) });
    await buffer.close();
    assert.equal(buffer.push('{}'), false);
    assert.deepEqual(drops, ['closed']);
  });
});

describe('audit buffer write failures', () => {
  test('a batch the destination refuses counts exactly its records as dropped, and its text ends in one newline', { timeout: 5_000 }, async () => {
    const batches: string[] = [];
    const drops: Array<[number, AuditDropReason]> = [];
    const buffer = new AuditBuffer(
      {
        write: async (batch: string) => {
          batches.push(batch);
          throw new Error('disk full');
        },
      },
      { maxBytes: 1_048_576, onDropped: (records, why) => drops.push([records, why]) },
    );
    buffer.push('{"a":1}');
    buffer.push('{"b":2}');
    await buffer.flush();
    assert.deepEqual(batches, ['{"a":1}\n{"b":2}\n']);
    assert.deepEqual(drops, [[2, 'write_failed']]);
    assert.equal(buffer.dropped, 2);
    assert.equal(buffer.bytes, 0);
  });
});
