import { closestName } from './closest-name.js';
import { ConfigurationError } from './errors.js';
import { isGatewaySettingName } from './setting-names.js';

/** An environment variable that looks like a setting but is none. */
export interface UnknownSetting {
  /** The variable, e.g. `MCP_AUTH_POLICIES`. */
  name: string;
  /** The known setting closest to it, e.g. `MCP_AUTH_POLICY`, when one is close enough to be the one meant. */
  suggestion?: string;
  /** True when it is a setting of the gateway, which the program that found it does not read. */
  gatewaySetting?: true;
}

/** Prefix of every setting's variable. */
export const SETTING_PREFIX = 'MCP_AUTH_';

/**
 * The `MCP_AUTH_*` variables in `env` that are not known settings (see {@link refuseUnknownSettings}). Sorted by
 * name; set but empty counts too.
 *
 * @param known - Every variable the program reads, e.g. `GUARD_ENV_VARIABLES`.
 */
export function findUnknownSettings(env: Readonly<Record<string, string | undefined>>, known: Iterable<string>): UnknownSetting[] {
  const knownNames = new Set(known);
  const unknown: UnknownSetting[] = [];
  for (const name of Object.keys(env).sort()) {
    if (!name.startsWith(SETTING_PREFIX) || knownNames.has(name) || env[name] === undefined) continue;
    if (isGatewaySettingName(name)) {
      unknown.push({ name, gatewaySetting: true });
      continue;
    }
    const suggestion = closestName(name, knownNames);
    unknown.push(suggestion === undefined ? { name } : { name, suggestion });
  }
  return unknown;
}

/**
 * What is wrong with an unknown setting and how to fix it, without its name, e.g. `is not a setting; did you mean
 * MCP_AUTH_POLICY?`.
 */
export function unknownSettingDetail(setting: UnknownSetting): string {
  // Still refused: whoever set it expects it to do something here (a metrics port, a policy watch) and it would not.
  if (setting.gatewaySetting) return 'is a setting of the gateway (npx mcp-oauth-guard), which this program does not read; unset it here';
  return setting.suggestion ? `is not a setting; did you mean ${setting.suggestion}?` : 'is not a setting; correct its name, or unset it';
}

/** One sentence for an unknown setting, e.g. `MCP_AUTH_POLICIES is not a setting; did you mean MCP_AUTH_POLICY?`. */
export function describeUnknownSetting(setting: UnknownSetting): string {
  return `${setting.name} ${unknownSettingDetail(setting)}`;
}

/**
 * Refuses every `MCP_AUTH_*` variable in `env` that is not a known setting, with the one likely meant: ignored, a
 * misspelt `MCP_AUTH_POLICIES` would leave every tool open. The one check of unknown variables; `loadOptionsFromEnv`
 * runs it (the gateway through it, with its own settings added to `known`).
 *
 * @example
 * refuseUnknownSettings(process.env, GUARD_ENV_VARIABLES);
 * @throws ConfigurationError naming each unknown variable (see its `problems`).
 */
export function refuseUnknownSettings(env: Readonly<Record<string, string | undefined>>, known: Iterable<string>): void {
  const unknown = findUnknownSettings(env, known);
  if (unknown.length > 0) throw ConfigurationError.of(unknown.map((setting) => ({ setting: setting.name, detail: unknownSettingDetail(setting) })));
}
