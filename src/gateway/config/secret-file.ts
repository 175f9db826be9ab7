import { closeSync, openSync, readSync } from 'node:fs';
import { ConfigurationError } from '../../core/kernel/errors.js';

/** Largest secret file read, in bytes: a few keys or one token, never a large file by mistake. */
export const MAX_SECRET_FILE_BYTES = 65_536;

/**
 * Reads a secret from the file a `…_FILE` setting names (secrets mounted as files keep them out of the environment
 * and of process listings): its content with surrounding white space trimmed. The one reader of every such
 * setting (`MCP_AUTH_UPSTREAM_TOKEN_FILE`, `MCP_AUTH_UPSTREAM_CLIENT_SECRET_FILE`, `MCP_AUTH_SESSION_SECRET_FILE`),
 * so each is refused in the same words. At most {@link MAX_SECRET_FILE_BYTES} + 1 bytes are read, whatever the
 * file: a path to a device or a pipe that never ends fails at once instead of filling memory.
 *
 * @example
 * const secret = readSecretFile('/run/secrets/client-secret', 'MCP_AUTH_UPSTREAM_CLIENT_SECRET_FILE');
 * const token = readSecretFile(STANDARD_INPUT, '--token-file');
 *
 * @throws ConfigurationError naming `setting` when the file cannot be read, is larger than 64 KiB, or is empty.
 *   The message names the file, never its content.
 */
export function readSecretFile(file: string | typeof STANDARD_INPUT, setting: string): string {
  const bytes = Buffer.alloc(MAX_SECRET_FILE_BYTES + 1);
  const named = file === STANDARD_INPUT ? 'standard input' : `"${file}"`;
  let length = 0;
  try {
    // Standard input is read from its descriptor: opening /dev/stdin fails when it is a socket (ENXIO).
    const fd = file === STANDARD_INPUT ? 0 : openSync(file, 'r');
    try {
      for (let read = -1; read !== 0 && length < bytes.length; length += read) read = readSync(fd, bytes, length, bytes.length - length, null);
    } finally {
      if (fd !== 0) closeSync(fd);
    }
  } catch (error) {
    throw new ConfigurationError(setting, `cannot read ${named} (${(error as NodeJS.ErrnoException).code ?? 'error'})`);
  }
  if (length > MAX_SECRET_FILE_BYTES) throw new ConfigurationError(setting, `${named} is larger than ${MAX_SECRET_FILE_BYTES} bytes; it should hold only the secret`);
  const text = bytes.toString('utf8', 0, length).trim();
  if (text === '') throw new ConfigurationError(setting, `${named} is empty`);
  return text;
}

/** Pass as the file to {@link readSecretFile} to read the secret from standard input (`check --token-file -`). */
export const STANDARD_INPUT = 0;
