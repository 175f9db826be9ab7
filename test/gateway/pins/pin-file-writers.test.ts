import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import { join, resolve } from 'node:path';
import { after, describe, it } from 'node:test';
import { createFilePinStore } from '../../../src/gateway/pins/pin-store.js';
import { spawn } from '../../helpers/child-process.js';
import { REPOSITORY_ROOT } from '../../helpers/run-cli.js';

const WRITER = resolve(REPOSITORY_ROOT, 'test/fixtures/pins/pin-writer.ts');
const WRITES_EACH = 25;
const dir = mkdtempSync(join(os.tmpdir(), 'pin-writers-'));
after(() => rmSync(dir, { recursive: true, force: true }));

/** Runs the pin writer for `server` until it exits; rejects on a failure, with what it printed. */
function runWriter(file: string, server: string): Promise<void> {
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, ['--import', 'tsx', WRITER, file, server, String(WRITES_EACH)], { cwd: REPOSITORY_ROOT, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.once('exit', (code) => {
      clearTimeout(timer);
      if (code === 0) done();
      else fail(new Error(`the pin writer for ${server} exited with ${code}: ${stderr}`));
    });
  });
}

describe('a pin file written by several processes at once', () => {
  it('keeps every pin each process wrote', { timeout: 90_000 }, async () => {
    const file = join(dir, 'two-processes.json');
    await Promise.all([runWriter(file, 'alpha'), runWriter(file, 'beta')]);
    const pins = await createFilePinStore(file).load();
    assert.equal(pins.get('alpha')?.size, WRITES_EACH, 'every pin of the first process');
    assert.equal(pins.get('beta')?.size, WRITES_EACH, 'every pin of the second process');
    assert.equal(existsSync(`${file}.lock`), false, 'no lock is left behind');
  });

  it('keeps every pin of two stores of one file writing at once (each stands for a process)', async () => {
    const file = join(dir, 'two-stores.json');
    const [first, second] = [createFilePinStore(file), createFilePinStore(file)];
    const write = (store: typeof first, server: string, i: number): Promise<void> =>
      store.write([{ server, tool: `tool_${i}`, pin: { digest: `sha256:${createHash('sha256').update(`${server}-${i}`).digest('hex')}`, fields: {}, pinnedAt: new Date().toISOString(), by: 'accept' } }]);
    await Promise.all(Array.from({ length: WRITES_EACH }, (_, i) => [write(first, 'alpha', i), write(second, 'beta', i)]).flat());
    const pins = await first.load();
    assert.equal(pins.get('alpha')?.size, WRITES_EACH);
    assert.equal(pins.get('beta')?.size, WRITES_EACH);
  });
});
