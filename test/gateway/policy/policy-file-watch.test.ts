// The policy file watch on real files in a temporary directory: a burst of writes is one change, a file replaced
// by rename is seen, so is a swapped symbolic link (Kubernetes), bytes that did not change and other files of the directory are no change, close() ends it,
// and a watch never keeps the process alive.
import assert from 'node:assert/strict';
import { spawn } from '../../helpers/child-process.js';
import { once } from 'node:events';
import { mkdirSync, mkdtempSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { after, before, describe, it } from 'node:test';
import { ConfigurationError } from '../../../src/core/kernel/errors.js';
import { watchPolicyFile, type PolicyFileWatch } from '../../../src/gateway/policy/policy-file-watch.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
// Long enough that a burst of synchronous writes falls in one quiet period even on a loaded machine.
const DEBOUNCE_MS = 400;

let dir: string;
let file: string;
let watch: PolicyFileWatch | undefined;
let changes: number;
let changed: (() => void) | undefined;

/** Resolves at the next change the watch reports (bounded). */
function nextChange(): Promise<void> {
  return new Promise<void>((resolveChange, reject) => {
    const timer = setTimeout(() => reject(new Error('no change reported within 10 s')), 10_000);
    changed = () => {
      clearTimeout(timer);
      changed = undefined;
      resolveChange();
    };
  });
}

describe('watchPolicyFile', () => {
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'policy-watch-'));
    file = join(dir, 'policy.json');
    writeFileSync(file, '{"tools":{}}');
    changes = 0;
    watch = watchPolicyFile({ file, debounceMs: DEBOUNCE_MS, onChange: () => ((changes += 1), changed?.()) });
  });
  after(() => {
    watch?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('a burst of writes is one change', async () => {
    const seen = nextChange();
    for (let i = 0; i < 5; i++) writeFileSync(file, JSON.stringify({ tools: { [`tool_${i}`]: [] } }));
    await seen;
    assert.equal(changes, 1);
  });

  it('a file replaced by rename, as editors save, is a change', async () => {
    const seen = nextChange();
    writeFileSync(join(dir, 'policy.json.tmp'), '{"tools":{"renamed":[]}}');
    renameSync(join(dir, 'policy.json.tmp'), file);
    await seen;
    assert.equal(changes, 2);
  });

  it('the same bytes written again, and other files of the directory, are no change', async () => {
    writeFileSync(file, '{"tools":{"renamed":[]}}');
    writeFileSync(join(dir, 'other.txt'), 'unrelated');
    // Past their quiet period, a real change is reported as the third: the writes above counted for nothing.
    await new Promise((r) => setTimeout(r, DEBOUNCE_MS * 3));
    const seen = nextChange();
    writeFileSync(file, '{"tools":{"third":[]}}');
    await seen;
    assert.equal(changes, 3);
  });

  it('a symbolic link swapped to a new target, as Kubernetes updates a mounted ConfigMap, is a change', async () => {
    // The layout of a ConfigMap volume: policy.json -> ..data/policy.json, ..data -> a directory per version.
    const mount = mkdtempSync(join(tmpdir(), 'policy-watch-configmap-'));
    try {
      const version = (name: string, content: string): void => {
        mkdirSync(join(mount, name));
        writeFileSync(join(mount, name, 'policy.json'), content);
      };
      version('..v1', '{"tools":{"v1":[]}}');
      symlinkSync('..v1', join(mount, '..data'));
      symlinkSync(join('..data', 'policy.json'), join(mount, 'policy.json'));
      let seen = 0;
      let reported: (() => void) | undefined;
      const mounted = watchPolicyFile({ file: join(mount, 'policy.json'), debounceMs: DEBOUNCE_MS, onChange: () => ((seen += 1), reported?.()) });
      try {
        // Bounded, and the timer keeps this process alive meanwhile: the watch itself never does.
        let timer: NodeJS.Timeout | undefined;
        const swapped = new Promise<void>((resolveSwap, reject) => {
          timer = setTimeout(() => reject(new Error('no change reported within 10 s')), 10_000);
          reported = () => (clearTimeout(timer), resolveSwap());
        });
        version('..v2', '{"tools":{"v2":[]}}');
        symlinkSync('..v2', join(mount, '..data_tmp'));
        renameSync(join(mount, '..data_tmp'), join(mount, '..data'));
        await swapped;
        assert.equal(seen, 1);
      } finally {
        mounted.close();
      }
    } finally {
      rmSync(mount, { recursive: true, force: true });
    }
  });

  it('after close() nothing is reported', async () => {
    watch!.close();
    writeFileSync(file, '{"tools":{"after_close":[]}}');
    await new Promise((r) => setTimeout(r, DEBOUNCE_MS * 3));
    assert.equal(changes, 3);
  });

  it('a directory that cannot be watched is a configuration error naming the setting', () => {
    assert.throws(
      () => watchPolicyFile({ file: join(dir, 'missing-dir', 'policy.json'), onChange: () => {} }),
      (error: unknown) => error instanceof ConfigurationError && error.setting === 'MCP_AUTH_POLICY_WATCH' && /cannot be watched \(ENOENT\)/.test(error.message),
    );
  });

  it('a process whose only work left is a watch exits by itself', { timeout: 30_000 }, async () => {
    const script = `import { watchPolicyFile } from ${JSON.stringify(pathToFileURL(resolve(ROOT, 'src/gateway/policy/policy-file-watch.ts')).href)};
watchPolicyFile({ file: ${JSON.stringify(file)}, onChange() {} });
console.log('watching');`;
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout!.on('data', (c: Buffer) => (out += c.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
    const [code, signal] = (await once(child, 'exit')) as [number | null, NodeJS.Signals | null];
    clearTimeout(timer);
    assert.equal(out.trim(), 'watching');
    assert.deepEqual([code, signal], [0, null], 'it exited on its own, not killed after 20 s');
  });
});
