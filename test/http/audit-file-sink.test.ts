// The audit file is readable by its owner only, even when it was there before with a wider mode, and after a
// rotation.
import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { createAuditFileSink } from '../../src/http/audit-file-sink.js';

const dir = mkdtempSync(join(tmpdir(), 'audit-file-sink-'));
after(() => rmSync(dir, { recursive: true, force: true }));
const modeOf = (path: string) => statSync(path).mode & 0o777;

describe('audit file mode', { skip: process.platform === 'win32' ? 'file modes are POSIX' : false }, () => {
  test('a file that exists with mode 0644 is made 0600 when opened, and the file a rotation starts is 0600', async () => {
    const path = join(dir, 'audit.jsonl');
    writeFileSync(path, '{"old":true}\n');
    chmodSync(path, 0o644);
    const sink = createAuditFileSink({ path, maxFileBytes: 64, files: 2 });
    await sink.write('{"n":1}\n');
    assert.equal(modeOf(path), 0o600);
    assert.equal(readFileSync(path, 'utf8'), '{"old":true}\n{"n":1}\n', 'appended, not replaced');
    await sink.write(`{"n":2,"pad":"${'x'.repeat(60)}"}\n`);
    await sink.close?.();
    assert.match(readFileSync(`${path}.1`, 'utf8'), /"n":1/, 'rotated');
    assert.equal(modeOf(path), 0o600);
    assert.equal(modeOf(`${path}.1`), 0o600);
  });
});

describe('audit file written from bytes', () => {
  /** Every file of a sink's rotation, oldest first, as text. */
  const filesOf = (path: string, files: number) =>
    Array.from({ length: files }, (_, n) => (n === 0 ? path : `${path}.${n}`))
      .reverse()
      .map((file) => {
        try {
          return readFileSync(file, 'utf8');
        } catch {
          return '';
        }
      });

  test('bytes make the same files as text, non-ASCII records and rotation boundaries included', async () => {
    const records = Array.from({ length: 60 }, (_, n) => `{"n":${n},"who":"${'é€😀'.repeat(n % 7)}","pad":"${'x'.repeat((n * 13) % 50)}"}`);
    // Batches of 1 to 5 records, so that some cross the bound of a file and are cut at a record's end.
    const batches: string[] = [];
    for (let at = 0, size = 1; at < records.length; at += size, size = (size % 5) + 1) batches.push(`${records.slice(at, at + size).join('\n')}\n`);
    const byText = join(dir, 'by-text.jsonl');
    const byBytes = join(dir, 'by-bytes.jsonl');
    const textSink = createAuditFileSink({ path: byText, maxFileBytes: 300, files: 4 });
    const bytesSink = createAuditFileSink({ path: byBytes, maxFileBytes: 300, files: 4 });
    for (const batch of batches) {
      await textSink.write(batch);
      await bytesSink.writeBytes(Buffer.from(batch));
    }
    await textSink.close?.();
    await bytesSink.close?.();
    const fromText = filesOf(byText, 4);
    assert.deepEqual(filesOf(byBytes, 4), fromText);
    for (const file of fromText) assert.ok(Buffer.byteLength(file) <= 300, 'each file within its bound');
    assert.ok(fromText.join('').endsWith(`${records.at(-1)}\n`), 'the last record kept, whole');
    assert.ok(fromText.filter((file) => file !== '').length === 4, 'rotated');
  });
});
