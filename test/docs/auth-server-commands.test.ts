// Every `npm run auth-server -- …` the README and the docs/ pages show is one the command accepts: each is run
// (on a free port, given last, instead of the one written) and must start and print its ready line, not exit with a usage error.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { REPOSITORY_ROOT, startScript } from '../helpers/run-cli.js';

const PAGES = ['README.md', ...readdirSync(join(REPOSITORY_ROOT, 'docs')).filter((name) => name.endsWith('.md')).map((name) => join('docs', name))];
const AUTH_SERVER = join(REPOSITORY_ROOT, 'examples', 'dev', 'auth-server.ts');

/**
 * Each shown command's flags, as written up to the end of its inline code or line (a line ending in a backslash
 * goes on, as in a shell); a sketch with "…" or a <placeholder> aside.
 */
const shown = PAGES.flatMap((page) =>
  [...readFileSync(join(REPOSITORY_ROOT, page), 'utf8').replace(/\\\n\s*/g, ' ').matchAll(/npm run auth-server -- ([^`\n]+)/g)]
    // A shell's single quotes around an argument (a --claim holding JSON) are not part of it.
    .map((match) => ({ page, args: match[1]!.trim().split(/\s+/).map((arg) => arg.replace(/^'(.*)'$/, '$1')) }))
    .filter(({ args }) => !args.some((arg) => arg.includes('…') || arg.startsWith('<'))),
);

test('the README and docs/ show npm run auth-server with flags', () => {
  assert.ok(shown.length >= 3, `found ${shown.length}`);
});

for (const { page, args } of shown) {
  test(`${page}: npm run auth-server -- ${args.join(' ')} starts`, { timeout: 60_000 }, async () => {
    // The last --port wins: a free one, as 9400 may be taken where the tests run.
    const server = await startScript(AUTH_SERVER, [...args, '--port', '0'], 'Ctrl-C stops it.', { cwd: REPOSITORY_ROOT });
    await server.stop();
  });
}
