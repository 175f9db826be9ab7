// Which test files `npm test` and `npm run test:quick` run, decided in one place.
//
// The unit layer is every test file under test/core and test/package that starts no program (none imports
// test/helpers/child-process.ts): no child process, no authorization server (test/core verifies tokens against an
// in-process loopback issuer at most). Its files run in one process, imported one after the other: a process per
// file costs more than the tests themselves. Every other file runs in a process of its own.
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The test folder. */
export const TEST_DIR = dirname(fileURLToPath(import.meta.url));
/** The folders of the unit layer. */
const UNIT_FOLDERS = ['core', 'package'];

function testFilesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return testFilesUnder(path);
    return entry.name.endsWith('.test.ts') ? [path] : [];
  });
}

function inStableOrder(files: string[]): string[] {
  return files.sort((a, b) => relative(TEST_DIR, a).localeCompare(relative(TEST_DIR, b)));
}

function startsNoProgram(file: string): boolean {
  return !readFileSync(file, 'utf8').includes('helpers/child-process');
}

/** The unit layer's files (absolute paths), in a stable order. */
export function unitLayerFiles(): string[] {
  return inStableOrder(UNIT_FOLDERS.flatMap((folder) => testFilesUnder(join(TEST_DIR, folder))).filter(startsNoProgram));
}

/** Every other test file (absolute paths), each run in a process of its own, in a stable order. */
export function processPerFileTests(): string[] {
  const unit = new Set(unitLayerFiles());
  return inStableOrder(testFilesUnder(TEST_DIR).filter((file) => !unit.has(file)));
}
