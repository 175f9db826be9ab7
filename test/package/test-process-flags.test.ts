// Every test process of `npm test` gets a failing `assert.ok` without a message reported at once: Node 20 would
// otherwise spend minutes re-reading a long test file to make the message, with every timer stalled (see
// test/helpers/cheap-assert-messages.ts), so that the file is cancelled without saying what failed.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { after, test } from 'node:test';
import { execFile } from '../helpers/child-process.js';
import { TEST_DIR, testProcessFlags } from '../suite-files.js';

const dir = mkdtempSync(join(tmpdir(), 'test-process-flags-'));
after(() => rmSync(dir, { recursive: true, force: true }));

/** A test file of some 600 lines whose one test fails an `assert.ok` without a message near its end. */
function longFailingFile(): string {
  const lines = ["import assert from 'node:assert/strict';", "import { describe, test } from 'node:test';", "describe('a long file', () => {"];
  for (let i = 0; i < 600; i++) lines.push(`  const value${i} = [1, 2, 3].map((n) => ({ n, label: \`item \${n}\` })).filter((x) => x.n > ${i % 3});`);
  lines.push("  test('fails without a message', () => {", '    assert.ok(value1.length === 99);', '  });', '});');
  const file = join(dir, 'long-failing.test.ts');
  writeFileSync(file, `${lines.join('\n')}\n`);
  return file;
}

test("a failing assert.ok without a message in a long file is reported within seconds, naming the value and the line", { timeout: 60_000 }, async () => {
  const file = longFailingFile();
  // Not NODE_TEST_CONTEXT, which this file's runner sets: with it, the runner started here would report to this one.
  const { NODE_TEST_CONTEXT: _, ...env } = process.env;
  const started = Date.now();
  const failed = await promisify(execFile)(process.execPath, [...testProcessFlags(), join(TEST_DIR, 'run-in-order.ts'), file], { cwd: join(TEST_DIR, '..'), env, timeout: 45_000 }).then(
    () => assert.fail('the failing test file passed'),
    (error: { code?: unknown; killed?: boolean; stdout?: string }) => error,
  );
  assert.equal(failed.killed, false, 'the run ended by itself');
  assert.equal(failed.code, 1, 'the run failed');
  assert.match(failed.stdout ?? '', /expected a truthy value, got false \(at .*long-failing\.test\.ts:605:\d+\)/);
  assert.ok(Date.now() - started < 30_000, `reported in ${Date.now() - started} ms`);
});
