/**
 * A file replaced whole or not at all: the text is written to a temporary file in the same directory, flushed to
 * the disk, renamed over the file, then the directory is flushed so that the rename itself survives a power loss.
 * A crash leaves the old file or the new one, never a torn one, and a reader never sees half of it.
 */
import { randomBytes } from 'node:crypto';
import { open, rename, unlink } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';

/**
 * Names of temporary files start with this, then the name of the file they replace (`.tmp-pins.json-…`): a
 * directory's readers skip names that start with a dot, and an operator sees which file one left by a crash was for.
 */
export const TEMPORARY_FILE_PREFIX = '.tmp-';

/**
 * Writes `text` (UTF-8) to `path` atomically, as the module describes.
 *
 * @param mode - The new file's permissions. Default `0o600` (the owner only).
 * @throws the file system's error; the temporary file is removed then, and `path` is left as it was.
 * @example
 * await writeFileAtomically('/var/lib/mcp-oauth-guard/pins.json', text, 0o644);
 */
export async function writeFileAtomically(path: string, text: string, mode = 0o600): Promise<void> {
  const directory = dirname(path);
  const temporary = join(directory, `${TEMPORARY_FILE_PREFIX}${basename(path).slice(0, 100)}-${randomBytes(12).toString('base64url')}`);
  try {
    const file = await open(temporary, 'wx', mode);
    try {
      await file.writeFile(text, 'utf8');
      await file.sync();
    } finally {
      await file.close();
    }
    await rename(temporary, path);
  } catch (error) {
    await unlink(temporary).catch(() => undefined);
    throw error;
  }
  const folder = await open(directory, 'r');
  try {
    await folder.sync();
  } finally {
    await folder.close();
  }
}
