import { closestName } from './closest-name.js';

/** An environment variable that looks like a setting but is none. */
export interface UnknownSetting {
  /** The variable, e.g. `MCP_AUTH_POLICIES`. */
  name: string;
  /** The known setting closest to it, e.g. `MCP_AUTH_POLICY`, when one is close enough to be the one meant. */
  suggestion?: string;
}

/** Prefix of every setting's variable. */
export const SETTING_PREFIX = 'MCP_AUTH_';

/**
 * The `MCP_AUTH_*` variables in `env` that are not known settings. Such a variable is otherwise ignored without a
 * word, so a misspelt `MCP_AUTH_POLICIES` would leave every tool open. Sorted by name; set but empty counts too.
 *
 * @param known - Every variable the program reads, e.g. `GUARD_ENV_VARIABLES`.
 */
export function findUnknownSettings(env: Readonly<Record<string, string | undefined>>, known: Iterable<string>): UnknownSetting[] {
  const knownNames = new Set(known);
  const unknown: UnknownSetting[] = [];
  for (const name of Object.keys(env).sort()) {
    if (!name.startsWith(SETTING_PREFIX) || knownNames.has(name) || env[name] === undefined) continue;
    const suggestion = closestName(name, knownNames);
    unknown.push(suggestion === undefined ? { name } : { name, suggestion });
  }
  return unknown;
}

/** One warning sentence for an unknown setting, e.g. `MCP_AUTH_POLICIES is not a setting and is ignored; did you mean MCP_AUTH_POLICY?`. */
export function describeUnknownSetting(setting: UnknownSetting): string {
  return `${setting.name} is not a setting and is ignored${setting.suggestion ? `; did you mean ${setting.suggestion}?` : ' (see the settings table)'}`;
}
