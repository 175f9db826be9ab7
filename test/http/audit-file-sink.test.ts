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
