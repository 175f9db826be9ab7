// `npm run test:quick`: the unit layer, for a first check in well under a minute. It is every test file under
// test/core and test/package that starts no program (none imports test/helpers/child-process.ts): no child process,
// no authorization server (test/core verifies tokens against an in-process loopback issuer at most). They run in this
// one process, imported one after the other: a process per file would cost more than the tests themselves. `npm test`
// runs them again, each in a process of its own, with everything else.
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const TEST = dirname(fileURLToPath(import.meta.url));
/** The folders of the unit layer. */
const UNIT_FOLDERS = ['core', 'package'];

function testFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return testFiles(path);
    return entry.name.endsWith('.test.ts') ? [path] : [];
  });
}

/** The unit layer's files, in a stable order. */
const QUICK_TEST_FILES = UNIT_FOLDERS.flatMap((folder) => testFiles(join(TEST, folder)))
  .filter((file) => !readFileSync(file, 'utf8').includes('helpers/child-process'))
  .sort((a, b) => relative(TEST, a).localeCompare(relative(TEST, b)));

for (const file of QUICK_TEST_FILES) await import(pathToFileURL(file).href);
