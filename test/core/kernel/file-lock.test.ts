import assert from 'node:assert/strict';
import { spawnSync } from '../../helpers/child-process.js';
import { existsSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { FileLockTimeoutError, withFileLock } from '../../../src/core/kernel/file-lock.js';

const dir = mkdtempSync(join(os.tmpdir(), 'file-lock-'));
after(() => rmSync(dir, { recursive: true, force: true }));

describe('withFileLock', () => {
  it('runs one holder at a time and removes the lock however the work ends', async () => {
    const file = join(dir, 'one-at-a-time.json');
    let inside = 0;
    let most = 0;
    const holder = async (): Promise<void> => {
      inside++;
      most = Math.max(most, inside);
      await new Promise((resolve) => setTimeout(resolve, 5));
      inside--;
    };
    await Promise.all(Array.from({ length: 6 }, () => withFileLock(`${file}.lock`, holder)));
    assert.equal(most, 1);
    await assert.rejects(withFileLock(`${file}.lock`, () => Promise.reject(new Error('work failed'))), /work failed/);
    assert.equal(existsSync(`${file}.lock`), false);
  });

  it('waits for a live holder at most the wait, then names the lock file', async () => {
    const file = join(dir, 'held.json');
    // This process is alive, and the lock is fresh.
    writeFileSync(`${file}.lock`, `${process.pid}\n`);
    const started = performance.now();
    await assert.rejects(withFileLock(`${file}.lock`, async () => 'never', { waitMs: 80 }), (error: unknown) => error instanceof FileLockTimeoutError && error.message.includes(`${file}.lock`));
    assert.ok(performance.now() - started >= 75);
    assert.equal(existsSync(`${file}.lock`), true, "another holder's lock is left alone");
  });

  it('takes over the lock of a process that has exited', async () => {
    const file = join(dir, 'dead-holder.json');
    const exited = spawnSync(process.execPath, ['-e', '0']);
    assert.ok(exited.pid && exited.status === 0);
    writeFileSync(`${file}.lock`, `${exited.pid}\n`);
    assert.equal(await withFileLock(`${file}.lock`, async () => 'ran', { waitMs: 1_000 }), 'ran');
    assert.equal(existsSync(`${file}.lock`), false);
  });

  it('takes over a lock older than the stale age, whoever holds it', async () => {
    const file = join(dir, 'stale.json');
    writeFileSync(`${file}.lock`, `${process.pid}\n`);
    const old = new Date(Date.now() - 60_000);
    utimesSync(`${file}.lock`, old, old);
    assert.equal(await withFileLock(`${file}.lock`, async () => 'ran', { waitMs: 1_000, staleMs: 30_000 }), 'ran');
  });
});
