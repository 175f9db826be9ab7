import { readFileSync } from 'node:fs';
import { ConfigurationError } from '../core/errors.js';

/** Largest secret file read, in bytes: a few keys or one client secret, never a large file by mistake. */
const MAX_SECRET_FILE_BYTES = 65_536;

/**
 * Reads a secret from the file a `…_FILE` setting names, once, at start-up (secrets mounted as files keep them
 * out of the environment and of process listings): its content with surrounding white space trimmed.
 *
 * @example
 * const secret = readSecretFile('/run/secrets/client-secret', 'MCP_AUTH_UPSTREAM_CLIENT_SECRET_FILE');
 *
 * @throws ConfigurationError naming `setting` when the file cannot be read, is larger than 64 KiB, or is empty.
 *   The message names the file, never its content.
 */
export function readSecretFile(file: string, setting: string): string {
  let text: string;
  try {
    const bytes = readFileSync(file);
    if (bytes.length > MAX_SECRET_FILE_BYTES) throw new ConfigurationError(setting, `"${file}" is larger than ${MAX_SECRET_FILE_BYTES} bytes; it should hold only the secret`);
    text = bytes.toString('utf8').trim();
  } catch (error) {
    if (error instanceof ConfigurationError) throw error;
    throw new ConfigurationError(setting, `cannot read "${file}" (${(error as NodeJS.ErrnoException).code ?? 'error'})`);
  }
  if (text === '') throw new ConfigurationError(setting, `"${file}" is empty`);
  return text;
}
