// The groups of src/core, bottom to top: each file imports only from its own group and the groups below it, so
// the framework-free core reads as layers (formats, then the kernel, then tokens, then MCP and policy, then the
// guard that puts them together).
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const CORE = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'src', 'core');

/** Bottom first. Keep in step with the table in docs/development.md. */
const CORE_GROUPS = ['wire', 'kernel', 'limits', 'jwt', 'token', 'dpop', 'mcp', 'policy', 'session', 'audit', 'guard'] as const;

const importsOf = (file: string): string[] =>
  [...readFileSync(file, 'utf8').matchAll(/^\s*(?:import|export)[^'"]*?from\s+'(\.[^']+)'/gm)].map((m) => m[1]!);

test('src/core holds only its groups (and index.ts), each a folder', () => {
  const entries = readdirSync(CORE, { withFileTypes: true });
  assert.deepEqual(entries.filter((e) => e.isFile()).map((e) => e.name), ['index.ts']);
  assert.deepEqual(entries.filter((e) => e.isDirectory()).map((e) => e.name).sort(), [...CORE_GROUPS].sort());
});

test('each group of src/core imports only from itself and the groups below it', () => {
  const problems: string[] = [];
  for (const [level, group] of CORE_GROUPS.entries()) {
    for (const name of readdirSync(join(CORE, group))) {
      const file = join(CORE, group, name);
      for (const spec of importsOf(file)) {
        const target = relative(CORE, join(dirname(file), spec)).split(/[\\/]/)[0]!;
        const reached = CORE_GROUPS.indexOf(target as (typeof CORE_GROUPS)[number]);
        if (reached === -1 || reached > level) problems.push(`core/${group}/${name} imports ${spec}`);
      }
    }
  }
  assert.deepEqual(problems, []);
});

test('the table in docs/development.md lists the groups of src/core in this order', () => {
  const page = readFileSync(join(CORE, '..', '..', 'docs', 'development.md'), 'utf8');
  const listed = [...page.matchAll(/^\s*\| `core\/([a-z]+)\/` \|/gm)].map((m) => m[1]);
  assert.deepEqual(listed, [...CORE_GROUPS]);
});
