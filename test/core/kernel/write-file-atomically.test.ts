// The shared atomic file writer: the file is replaced whole with the mode given, nothing temporary is left behind,
// and a write that fails leaves the file as it was.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { writeFileAtomically } from '../../../src/core/kernel/write-file-atomically.js';

const dir = mkdtempSync(join(tmpdir(), 'atomic-write-'));
after(() => rmSync(dir, { recursive: true, force: true }));

describe('writeFileAtomically', () => {
  it('replaces the file whole, with the mode given, and leaves no temporary file', async () => {
    const file = join(dir, 'pins.json');
    writeFileSync(file, 'old');
    await writeFileAtomically(file, 'new text', 0o644);
    assert.equal(readFileSync(file, 'utf8'), 'new text');
    assert.equal(statSync(file).mode & 0o777, 0o644);
    await writeFileAtomically(join(dir, 'secret'), 'sealed');
    assert.equal(statSync(join(dir, 'secret')).mode & 0o777, 0o600);
    assert.deepEqual(readdirSync(dir).sort(), ['pins.json', 'secret']);
  });

  it('leaves the file as it was when the rename fails, and removes its temporary file', async () => {
    const target = join(dir, 'a-directory');
    // Renaming a file over a non-empty directory fails.
    writeFileSync(join(dir, 'keep'), 'x');
    mkdirSync(target);
    writeFileSync(join(target, 'inside'), 'kept');
    await assert.rejects(writeFileAtomically(target, 'lost'));
    assert.equal(readFileSync(join(target, 'inside'), 'utf8'), 'kept');
    assert.ok(!readdirSync(dir).some((name) => name.startsWith('.tmp-')), 'no temporary file left');
  });
});
