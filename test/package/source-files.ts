// What the package tests read: every TypeScript source file of src/, by absolute path and by its path from src/.
import { readdirSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The src/ folder. */
export const SRC = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'src');

/** Every `.ts` file below `dir` (declaration files left out), as absolute paths. */
export function sourceFiles(dir: string = SRC): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return sourceFiles(path);
    return e.name.endsWith('.ts') && !e.name.endsWith('.d.ts') ? [path] : [];
  });
}

/** `file`'s path from src/, with `/` separators, e.g. `core/wire/jsonrpc.ts`. */
export function fromSrc(file: string): string {
  return relative(SRC, file).split(/[\\/]/).join('/');
}
