/**
 * Where each setting's value came from, for the start-up line and `check`: a flag, the environment, or the
 * configuration file. Names only, never values.
 */
import { readSetting } from '../../core/kernel/settings.js';
import type { GatewaySetting } from './gateway-setting.js';
import type { SettingTexts } from './upstream-settings.js';

/** Where a setting's value came from: flags win over the environment, which wins over the file. */
export type SettingSource = 'flag' | 'environment' | 'file';

/**
 * The source of every setting that is set, by variable name, in the order of the settings table.
 *
 * @param flags - The settings given by a flag (`parseGatewayArgs`'s `flagSettings`); without it, every value not from
 *   the file counts as the environment's.
 * @param fromFile - The settings the configuration file gave.
 */
export function settingSources(rows: readonly GatewaySetting[], settings: SettingTexts, flags: Iterable<string> | undefined, fromFile: ReadonlyMap<string, string>): Record<string, SettingSource> {
  const flagged = new Set(flags ?? []);
  const sources: Record<string, SettingSource> = {};
  for (const { env } of rows) {
    if (readSetting(settings, env) === undefined) continue;
    sources[env] = fromFile.has(env) ? 'file' : flagged.has(env) ? 'flag' : 'environment';
  }
  return sources;
}
