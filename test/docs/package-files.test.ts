// What `npm pack` puts in the package: the README links to the pages under docs/ and the policy's JSON Schema,
// so they ship with it; the generated API reference (docs/api/, built by `npm run docs`) and the docs' generator do not.
import assert from 'node:assert/strict';
import { execFileSync } from '../helpers/child-process.js';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { REPOSITORY_ROOT } from '../helpers/run-cli.js';

test('npm pack lists every docs/*.md page and the schema, and neither docs/api/ nor docs/generate.ts', { timeout: 60_000 }, () => {
  // --ignore-scripts: the listing only, without building dist/ first.
  const output = execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: REPOSITORY_ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  const [packed] = JSON.parse(output) as [{ files: { path: string }[] }];
  const files = new Set(packed.files.map((file) => file.path));
  const pages = readdirSync(join(REPOSITORY_ROOT, 'docs')).filter((name) => name.endsWith('.md'));
  assert.ok(pages.length > 5, `found ${pages.length} pages`);
  for (const page of pages) assert.ok(files.has(`docs/${page}`), `docs/${page} is in the package`);
  assert.ok(files.has('schema/policy.schema.json'));
  assert.ok(files.has('README.md') && files.has('LICENSE'));
  assert.deepEqual([...files].filter((path) => path.startsWith('docs/api/') || path === 'docs/generate.ts'), []);
});
