// Records whose lines are made when their batch is taken: counted at their estimate until then and at their real size
// after, written in the order they came (pushed lines among them), their fields made for a sink that takes fields, a
// record whose line cannot be made dropped as a failed write, and those held at exit made then.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { AuditBuffer, type AuditBytesSink, type AuditDropReason, type AuditFieldsSink, type AuditRecordFields, type DeferredAuditRecord } from '../../../src/core/audit/audit-buffer.js';

/** A deferred record of `text`, counting how often its line was made. */
function deferred(text: string, sizeEstimate = 100): DeferredAuditRecord & { made: number } {
  return {
    sizeEstimate,
    made: 0,
    line(fields) {
      this.made++;
      if (fields !== undefined) fields.text = text;
      return JSON.stringify({ text });
    },
  };
}

function bytesSink() {
  const batches: Buffer[] = [];
  const sink: AuditBytesSink = { write: () => assert.fail('bytes are written as bytes'), writeBytes: async (bytes) => void batches.push(Buffer.from(bytes)) };
  return { sink, batches };
}

describe('deferred audit records', () => {
  test('are counted at their estimate until their batch, made once then, and written in the order they came', { timeout: 5_000 }, async () => {
    const out = bytesSink();
    const buffer = new AuditBuffer(out.sink, { maxBytes: 65_536 });
    const first = deferred('é', 300);
    assert.equal(buffer.pushDeferred(first), true);
    assert.equal(buffer.push('{"text":"pushed"}'), true);
    const last = deferred('c', 200);
    assert.equal(buffer.pushDeferred(last), true);
    // The pushed line made the deferred one before it; the last waits, at its estimate.
    assert.equal(first.made, 1);
    assert.equal(last.made, 0);
    assert.equal(buffer.bytes, Buffer.byteLength('{"text":"é"}\n{"text":"pushed"}\n') + 200);
    await buffer.flush();
    assert.equal(last.made, 1);
    assert.equal(Buffer.concat(out.batches).toString(), '{"text":"é"}\n{"text":"pushed"}\n{"text":"c"}\n');
    assert.equal(buffer.bytes, 0);
    await buffer.close();
    assert.equal(first.made + last.made, 2, 'each line made once');
  });

  test('a record that does not fit at its estimate is dropped as a full buffer, before its line is made', () => {
    const drops: AuditDropReason[] = [];
    const buffer = new AuditBuffer(bytesSink().sink, { maxBytes: 65_536, onDropped: (_records, why) => drops.push(why) });
    assert.equal(buffer.pushDeferred(deferred('a', 65_000)), true);
    const big = deferred('b', 1_000);
    assert.equal(buffer.pushDeferred(big), false);
    assert.equal(big.made, 0);
    assert.deepEqual(drops, ['buffer_full']);
  });

  test('a record whose line cannot be made is dropped as unwritable; the others of its batch are written', { timeout: 5_000 }, async () => {
    const out = bytesSink();
    const drops: Array<[number, AuditDropReason]> = [];
    const buffer = new AuditBuffer(out.sink, { maxBytes: 65_536, onDropped: (records, why) => drops.push([records, why]) });
    buffer.pushDeferred(deferred('a'));
    buffer.pushDeferred({ sizeEstimate: 50, line: () => assert.fail('broken') });
    buffer.pushDeferred(deferred('c'));
    await buffer.close();
    assert.equal(Buffer.concat(out.batches).toString(), '{"text":"a"}\n{"text":"c"}\n');
    assert.deepEqual(drops, [[1, 'unwritable']]);
    assert.equal(buffer.bytes, 0);
  });

  test('lines longer than their estimates are held within the bound: those that no longer fit are dropped as a full buffer', { timeout: 5_000 }, async () => {
    for (const kind of ['bytes', 'text'] as const) {
      let release: () => void = () => {};
      const stalled = new Promise<void>((resolve) => (release = resolve));
      const written: string[] = [];
      const sink =
        kind === 'bytes'
          ? ({ write: () => assert.fail('bytes'), writeBytes: async (bytes: Buffer) => (await stalled, void written.push(bytes.toString())) } satisfies AuditBytesSink)
          : { write: async (text: string) => (await stalled, void written.push(text)) };
      const drops: Array<[number, AuditDropReason]> = [];
      const buffer = new AuditBuffer(sink, { maxBytes: 65_536, onDropped: (records, why) => drops.push([records, why]) });
      // A first batch in the sink's hands, then records estimated at 100 bytes whose lines take about 6 KB each
      // (control characters are escaped as six): 640 fit by their estimates, about 10 by their lines.
      buffer.push('{"first":1}');
      await new Promise((resolve) => setTimeout(resolve, 150));
      for (let i = 0; i < 640; i++) assert.equal(buffer.pushDeferred(deferred('\u0001'.repeat(1_000))), true, `${kind}: admitted at its estimate`);
      await new Promise((resolve) => setTimeout(resolve, 150));
      assert.ok(buffer.bytes <= 65_536, `${kind}: ${buffer.bytes} bytes held, within the bound`);
      release();
      await buffer.close();
      const lines = written.join('').split('\n').filter(Boolean);
      const dropped = drops.filter(([, why]) => why === 'buffer_full').reduce((sum, [n]) => sum + n, 0);
      assert.ok(dropped > 600, `${kind}: ${dropped} dropped as a full buffer`);
      assert.equal(lines.length, 1 + 640 - dropped, `${kind}: every record written or counted`);
      assert.equal(buffer.bytes, 0);
    }
  });

  test('a sink that takes fields gets each record’s fields, made with its line', { timeout: 5_000 }, async () => {
    const got: Array<[readonly string[], readonly AuditRecordFields[]]> = [];
    const sink: AuditFieldsSink = { writeRecords: (lines, fields) => void got.push([lines, fields]) };
    const buffer = new AuditBuffer(sink, { maxBytes: 65_536 });
    buffer.pushDeferred(deferred('a'));
    buffer.pushDeferred(deferred('b'));
    await buffer.close();
    assert.deepEqual(got, [[['{"text":"a"}', '{"text":"b"}'], [{ text: 'a' }, { text: 'b' }]]]);
  });

  test('records held at exit have their lines made by the take', () => {
    const buffer = new AuditBuffer(bytesSink().sink, { maxBytes: 65_536 });
    buffer.pushDeferred(deferred('a'));
    assert.deepEqual(buffer.takePending(), Buffer.from('{"text":"a"}\n'));
    assert.equal(buffer.takePending().length, 0);
  });
});
