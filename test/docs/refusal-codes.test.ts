// The JSON-RPC codes the README's refusal table gives are the ones the code sends, under the names it exports,
// and the request-lifecycle page uses no other guard code: a code changed in the code cannot stay in the docs.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import * as entry from '../../src/index.js';

const read = (file: string): string => readFileSync(new URL(`../../${file}`, import.meta.url), 'utf8');

test("the README's refusal codes are the exported constants, and the lifecycle page's codes are among them", () => {
  const readme = read('README.md');
  const table = readme.slice(readme.indexOf('<!-- refusal-codes -->'));
  const rows = [...table.matchAll(/^\| (\d{3}) \|[^|]*\| (-\d+)[^|]*\| `([A-Z_]+)` \|$/gm)];
  assert.equal(rows.length, 4, 'four rows name an exported constant');
  const guardCodes = new Set<number>();
  for (const [, status, code, name] of rows) {
    assert.equal((entry as unknown as Record<string, unknown>)[name!], Number(code), `${name} is exported from the main entry with the code the README gives`);
    assert.ok(code!.endsWith(status!), `${name}: the last three digits are the status ${status}`);
    guardCodes.add(Number(code));
  }
  const lifecycle = read('docs/request-lifecycle.md');
  const used = new Set([...lifecycle.matchAll(/-31\d{3}/g)].map(([code]) => Number(code)));
  assert.ok(used.size >= 3, 'the lifecycle page gives the codes');
  for (const code of used) assert.ok(guardCodes.has(code), `docs/request-lifecycle.md uses ${code}, which the README's table does not give`);
});
