import { statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { ConfigurationError } from '../../core/kernel/errors.js';
import { readSetting } from '../../core/kernel/settings.js';
import type { PinsMode } from '../pins/tool-pins.js';
import type { GatewaySetting } from './gateway-setting.js';

/** Pinned tool definitions (`MCP_AUTH_PINS`, `MCP_AUTH_PIN_FILE`): the mode, and where the pins are kept. */
export interface PinsConfig {
  /** What the gateway does with a tool that differs from its pin; `off` digests nothing. */
  readonly mode: PinsMode;
  /** The pin file, as an absolute path; absent with the shared store. */
  readonly file?: string;
  /** Whether the pins are kept in the shared store (`MCP_AUTH_PIN_FILE=redis`, with `MCP_AUTH_REDIS_URL`). */
  readonly redis?: true;
}

/** The pins settings, listed by `--help` with the gateway's others. */
export const PINS_SETTINGS = Object.freeze([
  {
    env: 'MCP_AUTH_PINS',
    group: 'gateway',
    flag: '--pins',
    value: '<off|warn|enforce>',
    description:
      'Pinned tool definitions (see tool-pins.md): each tool\'s name, title, description, schemas and annotations are digested and compared with their pin. "warn" logs and counts a tool that changed or is new; "enforce" also hides it from tools/list and refuses its calls as an unknown tool until an operator accepts it (mcp-oauth-guard pins accept <server> <tool>). A server with no pins is pinned on first sight. Needs MCP_AUTH_PIN_FILE.',
    defaultValue: 'off',
  },
  {
    env: 'MCP_AUTH_PIN_FILE',
    group: 'gateway',
    flag: '--pin-file',
    value: '<file|redis>',
    description: 'Where the pins are kept: a JSON file (written atomically, re-read within 2 s of a change and on SIGHUP), or "redis" for the shared store every replica reads (MCP_AUTH_REDIS_URL, under MCP_AUTH_REDIS_KEY_PREFIX). The pins commands read and write the same.',
    defaultValue: 'none',
  },
] satisfies GatewaySetting[]);

const MODES: readonly PinsMode[] = ['off', 'warn', 'enforce'];

/**
 * Reads `MCP_AUTH_PINS` and `MCP_AUTH_PIN_FILE`.
 *
 * @returns undefined when neither is set (pins off).
 * @throws ConfigurationError naming the setting: a mode other than off, warn or enforce; warn or enforce without a
 *   pin file; with warn or enforce, a pin file in a directory that does not exist, or `redis` without
 *   `MCP_AUTH_REDIS_URL` (with pins off the file is not checked).
 * @example
 * loadPinsConfig({ MCP_AUTH_PINS: 'enforce', MCP_AUTH_PIN_FILE: '/var/lib/mcp-oauth-guard/pins.json' });
 * // { mode: 'enforce', file: '/var/lib/mcp-oauth-guard/pins.json' }
 */
export function loadPinsConfig(settings: Readonly<Record<string, string | undefined>>): PinsConfig | undefined {
  const given = readSetting(settings, 'MCP_AUTH_PINS')?.toLowerCase();
  const file = readSetting(settings, 'MCP_AUTH_PIN_FILE');
  if (given !== undefined && !MODES.includes(given as PinsMode)) throw new ConfigurationError('MCP_AUTH_PINS', `is "${given.slice(0, 40)}"; use off, warn or enforce`);
  const mode = (given ?? 'off') as PinsMode;
  if (file === undefined) {
    if (mode !== 'off') throw new ConfigurationError('MCP_AUTH_PINS', `is ${mode} but MCP_AUTH_PIN_FILE is not set: set it to a file the gateway may write (e.g. /var/lib/mcp-oauth-guard/pins.json), or to redis for a fleet`);
    return undefined;
  }
  // Pins off: the file is kept for when they are back on, and not checked (the pins commands check it themselves).
  if (mode !== 'off') checkPinFile(settings);
  return file.toLowerCase() === 'redis' ? { mode, redis: true } : { mode, file: resolve(file) };
}

/**
 * Checks where `MCP_AUTH_PIN_FILE` points, when set: `redis` needs `MCP_AUTH_REDIS_URL`, and a file's directory must
 * exist (pins could never be written there). Start-up checks it with the other settings while pins are on, and the
 * pins commands always, so that either names it in the same one message as the other settings.
 *
 * @throws ConfigurationError naming the setting.
 * @example
 * checkPinFile({ MCP_AUTH_PIN_FILE: '/var/lib/mcp-oauth-guard/pins.json' });
 */
export function checkPinFile(settings: Readonly<Record<string, string | undefined>>): void {
  const file = readSetting(settings, 'MCP_AUTH_PIN_FILE');
  if (file === undefined) return;
  if (file.toLowerCase() === 'redis') {
    if (readSetting(settings, 'MCP_AUTH_REDIS_URL') === undefined) throw new ConfigurationError('MCP_AUTH_PIN_FILE', 'is "redis" but MCP_AUTH_REDIS_URL is not set: set it to the Redis every replica shares, e.g. redis://redis:6379');
    return;
  }
  const path = resolve(file);
  if (!statSync(dirname(path), { throwIfNoEntry: false })?.isDirectory()) throw missingPinDirectory(dirname(path));
}

/** The error of a pin file whose directory does not exist (pins could never be written there). */
export function missingPinDirectory(directory: string): ConfigurationError {
  return new ConfigurationError('MCP_AUTH_PIN_FILE', `is in a directory that does not exist (${directory}): create it, or choose another file`);
}
