// V8's heap growing factor for a proxy: tuneHeapForProxying sets it, V8 then uses it for the old generation's
// limit (read back from V8's own --trace-gc-verbose lines, in child processes, since the flag changes the whole
// process), and a --heap-growing-percent given to node stays in force.
import assert from 'node:assert/strict';
import { execFileSync } from '../../helpers/child-process.js';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, it } from 'node:test';
import { PROXY_HEAP_GROWING_PERCENT, tuneHeapForProxying } from '../../../src/gateway/config/heap-growing-factor.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
const MODULE = resolve(ROOT, 'src/gateway/config/heap-growing-factor.ts');

/**
 * Runs node with `nodeArgs`, calls `tuneHeapForProxying(process.execArgv, percent)`, fills the old generation a
 * little and collects it; returns what the call returned and the growing factor V8 printed for the new limit.
 */
function factorAfterTuning(nodeArgs: string[], percent?: number): { returned: unknown; factor: number } {
  const script = `
    const { tuneHeapForProxying } = await import(${JSON.stringify(MODULE)});
    const returned = tuneHeapForProxying(process.execArgv${percent === undefined ? '' : `, ${percent}`});
    const kept = [];
    for (let i = 0; i < 100000; i += 1) kept.push({ i, text: 'item ' + i });
    globalThis.gc();
    console.log('RETURNED ' + JSON.stringify(returned ?? null) + ' ' + kept.length);
  `;
  const out = execFileSync(process.execPath, ['--import', 'tsx', '--expose-gc', '--trace-gc-verbose', ...nodeArgs, '--input-type=module', '-e', script], { cwd: ROOT, encoding: 'utf8', timeout: 30_000 });
  const limits = [...out.matchAll(/\[HeapController\] Limit: old size: \d+ KB, new limit: \d+ KB \((\d+\.\d)\)/g)];
  assert.ok(limits.length > 0, `V8 printed no limit:\n${out.slice(0, 2000)}`);
  const returned = /RETURNED (\S+) 100000/.exec(out);
  assert.ok(returned, 'the script ran to its end');
  return { returned: JSON.parse(returned[1]!), factor: Number(limits.at(-1)![1]) };
}

describe('tuneHeapForProxying', () => {
  it('sets the growing factor V8 uses for the next limit: 1 + percent / 100', () => {
    // 150 rather than the default 300: V8 picks 4.0 by itself when it has no speeds yet, so 2.5 shows the flag.
    assert.deepEqual(factorAfterTuning([], 150), { returned: 150, factor: 2.5 });
  });

  it('leaves a --heap-growing-percent given to node in force, and says which', () => {
    assert.deepEqual(factorAfterTuning(['--heap-growing-percent=50'], 150), { returned: 50, factor: 1.5 });
    assert.deepEqual(factorAfterTuning(['--heap_growing_percent=60'], 150), { returned: 60, factor: 1.6 });
  });

  it('reads node\'s flag in either spelling, the last one winning, and refuses a percent out of range', () => {
    assert.equal(PROXY_HEAP_GROWING_PERCENT, 300);
    assert.equal(tuneHeapForProxying(['--heap-growing-percent=0']), 0);
    assert.equal(tuneHeapForProxying(['--max-old-space-size=64', '--heap_growing_percent=25', '--trace-gc']), 25);
    assert.equal(tuneHeapForProxying(['--heap-growing-percent=40', '--heap-growing-percent=45']), 45);
    assert.equal(tuneHeapForProxying(['--heap-growing-percent=lots']), undefined);
    // Beyond V8's int, or absurdly large: V8 may read it as something else, so the percent in force is unknown.
    assert.equal(tuneHeapForProxying(['--heap-growing-percent=99999999999']), undefined);
    assert.equal(tuneHeapForProxying(['--heap-growing-percent=1001']), undefined);
    assert.equal(tuneHeapForProxying(['--heap-growing-percent=1000']), 1000);
    for (const bad of [-1, 2.5, 1001, 1e21, Number.NaN]) {
      assert.throws(() => tuneHeapForProxying([], bad), { name: 'ConfigurationError', message: /^percent: must be a whole number from 0 to 1000/ }, String(bad));
    }
  });
});
