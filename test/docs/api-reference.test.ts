// The API reference (`npm run docs`, TypeDoc) covers every entry point the package exports, and fails on a warning.
// Building it is CI's job (.ci/run); this checks its configuration, so that a new entry point cannot be left out.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';

const readJson = (file: string): Record<string, unknown> => JSON.parse(readFileSync(new URL(`../../${file}`, import.meta.url), 'utf8')) as Record<string, unknown>;

test('typedoc.json documents each entry point of package.json, with warnings as errors', () => {
  const typedoc = readJson('typedoc.json');
  const exports = readJson('package.json').exports as Record<string, string | { import?: string }>;
  // "./core": { import: "./dist/core/index.js" } is built from src/core/index.ts.
  const sources = Object.values(exports)
    .flatMap((target) => (typeof target === 'object' && target.import !== undefined ? [target.import] : []))
    .map((file) => file.replace(/^\.\/dist\//, 'src/').replace(/\.js$/, '.ts'))
    .sort();
  assert.ok(sources.length >= 7, 'the package has its entry points');
  assert.deepEqual([...(typedoc.entryPoints as string[])].sort(), sources, 'typedoc.json entryPoints: the sources of package.json exports');
  assert.equal(typedoc.treatWarningsAsErrors, true);
  assert.equal(typedoc.out, 'docs/api');
  assert.match(readFileSync(new URL('../../.gitignore', import.meta.url), 'utf8'), /^docs\/api\/$/m, 'the built reference is not committed');
  assert.match(readFileSync(new URL('../../.ci/run', import.meta.url), 'utf8'), /^npm run docs$/m, 'CI builds it');
});
