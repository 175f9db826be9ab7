import { ConfigurationError } from '../../core/kernel/errors.js';
import { readSetting } from '../../core/kernel/settings.js';
import { parseSessionSecret, type SessionSealKey } from '../../core/session/session-seal-keys.js';
import { readSecretFile } from './secret-file.js';

/**
 * A list of sealing keys given by a variable or by a file (keys separated by commas, or lines in the file): the first
 * seals, every one opens, so that keys rotate. The one reader of `MCP_AUTH_SESSION_SECRET` and
 * `MCP_AUTH_TOKEN_STORE_SECRET` and their `_FILE` variables.
 *
 * @returns undefined when neither is set.
 * @throws ConfigurationError naming the setting: both set, an unreadable file, or a key that is not enough random
 *   bytes (saying how to make one).
 * @example
 * readSealKeys(process.env, 'MCP_AUTH_TOKEN_STORE_SECRET', 'MCP_AUTH_TOKEN_STORE_SECRET_FILE');
 */
export function readSealKeys(settings: Readonly<Record<string, string | undefined>>, secretSetting: string, fileSetting: string): SessionSealKey[] | undefined {
  const secret = readSetting(settings, secretSetting);
  const file = readSetting(settings, fileSetting);
  if (secret !== undefined && file !== undefined) throw new ConfigurationError(fileSetting, `and ${secretSetting} are both set; set one of them`);
  if (secret !== undefined) return parseSessionSecret(secret, secretSetting);
  if (file === undefined) return undefined;
  return parseSessionSecret(readSecretFile(file, fileSetting).replace(/\s*[\r\n]+\s*/g, ','), fileSetting);
}
