// Every gateway setting `--help` lists is a row of the README's gateway table, with its flag.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { GATEWAY_SETTINGS } from '../../src/gateway/gateway-config.js';

test("the README's gateway table lists every setting with its flag", () => {
  const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
  // The environment variables table has rows of the same names, without flags: any row may carry it.
  const rows = readme.split('\n').filter((line) => line.startsWith('| `'));
  for (const setting of GATEWAY_SETTINGS) {
    const named = rows.filter((line) => line.startsWith(`| \`${setting.env}\` |`));
    assert.ok(named.length > 0, `${setting.env} has no row in the README's gateway table`);
    const flag = setting.flag === undefined ? 'environment only' : `\`${setting.flag}`;
    assert.ok(named.some((row) => row.includes(flag)), `${setting.env}: no row names ${flag}`);
  }
});
