import assert from 'node:assert/strict';
import { spawnSync } from '../../helpers/child-process.js';
import { existsSync, mkdtempSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { FileLockTimeoutError, lockFileText, withFileLock } from '../../../src/core/kernel/file-lock.js';

/** A lock file's text naming `pid` on `host` in this boot (or another boot id). */
async function lockNaming(pid: number, overrides: { host?: string; boot?: string } = {}): Promise<string> {
  return `${JSON.stringify({ ...JSON.parse(await lockFileText()), pid, ...overrides })}\n`;
}

/** Work that holds the lock for `ms`, and the most holders seen inside at once. */
function holders(ms: number): { holder: () => Promise<void>; most: () => number } {
  let inside = 0;
  let most = 0;
  const holder = async (): Promise<void> => {
    inside++;
    most = Math.max(most, inside);
    await new Promise((resolve) => setTimeout(resolve, ms));
    inside--;
  };
  return { holder, most: () => most };
}

/** The id of a process that has exited. */
function exitedPid(): number {
  const exited = spawnSync(process.execPath, ['-e', '0']);
  assert.ok(exited.pid && exited.status === 0);
  return exited.pid;
}

const dir = mkdtempSync(join(os.tmpdir(), 'file-lock-'));
after(() => rmSync(dir, { recursive: true, force: true }));

describe('withFileLock', () => {
  it('runs one holder at a time and removes the lock however the work ends', async () => {
    const file = join(dir, 'one-at-a-time.json');
    const { holder, most } = holders(5);
    await Promise.all(Array.from({ length: 6 }, () => withFileLock(`${file}.lock`, holder)));
    assert.equal(most(), 1);
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
    writeFileSync(`${file}.lock`, await lockNaming(exitedPid()));
    assert.equal(await withFileLock(`${file}.lock`, async () => 'ran', { waitMs: 1_000 }), 'ran');
    assert.equal(existsSync(`${file}.lock`), false);
  });

  it('trusts no process id of another host, of another boot, or of a lock naming no host: only the stale age', async () => {
    const pid = exitedPid();
    for (const [name, text] of [
      ['other-host', await lockNaming(pid, { host: 'another-container' })],
      ['other-boot', await lockNaming(pid, { boot: '00000000-0000-0000-0000-000000000000' })],
      ['no-host', `${pid}\n`],
    ] as const) {
      const lock = join(dir, `${name}.json.lock`);
      writeFileSync(lock, text);
      await assert.rejects(withFileLock(lock, async () => 'never', { waitMs: 100, staleMs: 30_000 }), FileLockTimeoutError, name);
      assert.equal(readFileSync(lock, 'utf8'), text, `${name}: the lock is left alone`);
      // Past the stale age it is taken over all the same.
      const old = new Date(Date.now() - 60_000);
      utimesSync(lock, old, old);
      assert.equal(await withFileLock(lock, async () => 'ran', { waitMs: 1_000, staleMs: 30_000 }), 'ran', name);
    }
  });

  it('many waiters taking over one abandoned lock at once: exactly one holds it at a time', async () => {
    for (let round = 0; round < 10; round++) {
      const lock = join(dir, `abandoned-${round}.json.lock`);
      writeFileSync(lock, await lockNaming(exitedPid()));
      const { holder, most } = holders(20);
      await Promise.all(Array.from({ length: 6 }, () => withFileLock(lock, holder, { waitMs: 5_000 })));
      assert.equal(most(), 1, `round ${round}`);
      assert.equal(existsSync(lock), false);
    }
  });

  it('takes over a lock older than the stale age, whoever holds it', async () => {
    const file = join(dir, 'stale.json');
    writeFileSync(`${file}.lock`, `${process.pid}\n`);
    const old = new Date(Date.now() - 60_000);
    utimesSync(`${file}.lock`, old, old);
    assert.equal(await withFileLock(`${file}.lock`, async () => 'ran', { waitMs: 1_000, staleMs: 30_000 }), 'ran');
  });
});
