// Every `npm run auth-server -- …` the README and the docs/ pages show is one the command accepts: each is run
// (on a free port, given last, instead of the one written) and must start and print its ready line, not exit with a usage error.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { REPOSITORY_ROOT } from '../helpers/run-cli.js';

const PAGES = ['README.md', ...readdirSync(join(REPOSITORY_ROOT, 'docs')).filter((name) => name.endsWith('.md')).map((name) => join('docs', name))];
const AUTH_SERVER = join(REPOSITORY_ROOT, 'examples', 'dev', 'auth-server.ts');

/** Each shown command's flags, as written up to the end of its inline code or line; a sketch with "…" or a <placeholder> aside. */
const shown = PAGES.flatMap((page) =>
  [...readFileSync(join(REPOSITORY_ROOT, page), 'utf8').matchAll(/npm run auth-server -- ([^`\n]+)/g)]
    .map((match) => ({ page, args: match[1]!.trim().split(/\s+/) }))
    .filter(({ args }) => !args.some((arg) => arg.includes('…') || arg.startsWith('<'))),
);

/** Starts the command and resolves with its output once it is ready; rejects with its output if it exits first. */
async function startsWith(args: readonly string[]): Promise<string> {
  const child = spawn(process.execPath, ['--import', 'tsx', AUTH_SERVER, ...args], { cwd: REPOSITORY_ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  try {
    return await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`not ready within 30 s: ${output}`)), 30_000);
      const collect = (chunk: Buffer): void => {
        output += chunk.toString();
        if (output.includes('Ctrl-C stops it.')) {
          clearTimeout(timer);
          resolve(output);
        }
      };
      child.stdout.on('data', collect);
      child.stderr.on('data', collect);
      child.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`exited with code ${code}: ${output}`));
      });
    });
  } finally {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      await once(child, 'exit');
    }
  }
}

test('the README and docs/ show npm run auth-server with flags', () => {
  assert.ok(shown.length >= 3, `found ${shown.length}`);
});

for (const { page, args } of shown) {
  test(`${page}: npm run auth-server -- ${args.join(' ')} starts`, { timeout: 60_000 }, async () => {
    // The last --port wins: a free one, as 9400 may be taken where the tests run.
    await startsWith([...args, '--port', '0']);
  });
}
