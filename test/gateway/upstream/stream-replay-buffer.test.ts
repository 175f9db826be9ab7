// The replay buffer behind resumable stdio streams, with a controlled clock: ids, per-stream replay, both bounds.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { createStreamReplayBuffer } from '../../../src/gateway/upstream/stream-replay-buffer.js';

/** A full garbage collection, for measuring what a structure really holds (the flag takes effect for new contexts). */
function collectGarbage(): void {
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  gc();
  gc();
}

function clock(start = 1_000_000): { now: () => number; advance(ms: number): void } {
  let t = start;
  return { now: () => t, advance: (ms) => void (t += ms) };
}

describe('stream replay buffer', () => {
  it('gives ids unique across the streams of a session, and replays one stream only, in order, after the cursor', () => {
    const buffer = createStreamReplayBuffer({ maxBytes: 1_048_576, maxAgeMs: 60_000 });
    const a = buffer.openStream();
    const b = buffer.openStream();
    const a1 = buffer.record(a, '"a1"');
    const b1 = buffer.record(b, '"b1"');
    const a2 = buffer.record(a, '"a2"');
    const a3 = buffer.record(a, '"a3"');
    buffer.record(b, '"b2"');
    assert.equal(new Set([a1, b1, a2, a3]).size, 4);
    const point = buffer.after(a1);
    assert.ok(!('refused' in point));
    assert.equal(point.stream, a);
    assert.deepEqual(point.events, [{ id: a2, data: '"a2"' }, { id: a3, data: '"a3"' }]);
    assert.equal(point.ended, false);
    const fromB = buffer.after(b1);
    assert.ok(!('refused' in fromB));
    assert.deepEqual(fromB.events.map((e) => e.data), ['"b2"']);
    // The newest event as cursor: nothing missed.
    const latest = buffer.after(a3);
    assert.ok(!('refused' in latest));
    assert.deepEqual(latest.events, []);
    buffer.endStream(a);
    const ended = buffer.after(a2);
    assert.ok(!('refused' in ended));
    assert.equal(ended.ended, true);
  });

  it("refuses ids it never issued: malformed, another session's, or a number it has not reached", () => {
    const one = createStreamReplayBuffer({ maxBytes: 1_048_576, maxAgeMs: 60_000 });
    const other = createStreamReplayBuffer({ maxBytes: 1_048_576, maxAgeMs: 60_000 });
    const stream = one.openStream();
    const id = one.record(stream, '"x"');
    const foreign = other.record(other.openStream(), '"y"');
    for (const bad of ['', 'garbage', foreign, `${id}0`, id.replace(/\.(\d+)$/, '.999999'), id.replace(/\.\d+\.(\d+)$/, '.7.$1'), `${id}.1`]) {
      assert.deepEqual(one.after(bad), { refused: 'unknown_event' }, bad);
    }
  });

  it('forgets the oldest events past the byte bound, and refuses a cursor whose later events are gone', () => {
    const buffer = createStreamReplayBuffer({ maxBytes: 1_000, maxAgeMs: 60_000 });
    const stream = buffer.openStream();
    const ids = Array.from({ length: 10 }, (_, i) => buffer.record(stream, JSON.stringify({ i, pad: 'x'.repeat(200) })));
    assert.ok(buffer.bytes <= 1_000, `holds ${buffer.bytes} bytes`);
    assert.deepEqual(buffer.after(ids[0]!), { refused: 'events_lost' });
    // The newest events are still there, so a recent cursor resumes with all that followed it.
    const recent = buffer.after(ids[8]!);
    assert.ok(!('refused' in recent));
    assert.deepEqual(recent.events.map((e) => (JSON.parse(e.data) as { i: number }).i), [9]);
  });

  it('holds about what its byte bound says in heap, however small the events (priming events, tiny progress)', () => {
    const maxBytes = 1_048_576;
    collectGarbage();
    const before = process.memoryUsage().heapUsed;
    const buffer = createStreamReplayBuffer({ maxBytes, maxAgeMs: 600_000 });
    const stream = buffer.openStream();
    for (let i = 0; i < 100_000; i++) buffer.record(stream, i % 2 === 0 ? '' : JSON.stringify({ p: i }));
    collectGarbage();
    const held = process.memoryUsage().heapUsed - before;
    assert.ok(buffer.bytes <= maxBytes);
    // Counted 1 MiB used to be 6.4 MiB of heap for events this small; allow some slack for the measurement.
    assert.ok(held < maxBytes * 1.5, `holds ${held} bytes of heap for a bound of ${maxBytes}`);
    assert.ok(buffer.bytes > 0);
  });

  it('forgets events older than maxAgeMs', () => {
    const time = clock();
    const buffer = createStreamReplayBuffer({ maxBytes: 1_048_576, maxAgeMs: 1_000, now: time.now });
    const stream = buffer.openStream();
    const first = buffer.record(stream, '"1"');
    buffer.record(stream, '"2"');
    time.advance(999);
    assert.ok(!('refused' in buffer.after(first)));
    time.advance(2);
    assert.deepEqual(buffer.after(first), { refused: 'events_lost' });
    assert.equal(buffer.bytes, 0);
    // A stream that ended with every event gone is forgotten: its ids can never be resumed.
    buffer.endStream(stream);
    assert.deepEqual(buffer.after(first), { refused: 'events_lost' });
  });
});
