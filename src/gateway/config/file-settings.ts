/**
 * Where each setting may be written in a configuration file, and the file's `gateway` section merged under the
 * variables and flags: flags win over the environment, which wins over the file, which wins over the defaults.
 * File values become the same setting text a variable holds (`8080`, `on`, `a,b`), read afterwards by the setting's
 * one parser, so a value means the same wherever it is written.
 */
import { resolve as resolvePath } from 'node:path';
import { closestName } from '../../core/kernel/closest-name.js';
import { ConfigurationError } from '../../core/kernel/errors.js';
import type { ConfigurationProblems } from '../../core/kernel/configuration-problems.js';
import { readSetting } from '../../core/kernel/settings.js';
import type { SettingName } from '../../core/kernel/setting-names.js';
import { CONFIG_FILE_SETTING, describeJson, type GatewayConfigFile } from './config-file.js';
import type { GatewaySetting } from './gateway-setting.js';
import type { SettingTexts } from './upstream-settings.js';

/**
 * Where a setting may be given: `gateway`, in the file's `gateway` section (besides its variable and flag);
 * `server`, per server (`servers.<name>.<key>`, see {@link SERVER_SETTING_KEYS}), or, without a file, by its variable;
 * `environment`, by its variable only (secrets, and the file's own name).
 */
export type SettingPlace = 'gateway' | 'server' | 'environment';

/**
 * Each per-server setting's key in a `servers.<name>` entry, by the setting it stands for. Secrets are named by the
 * variable that holds them (`auth.tokenEnv`) or a file (`auth.tokenFile`), never written inline.
 */
export const SERVER_SETTING_KEYS = {
  MCP_AUTH_UPSTREAM: 'url',
  MCP_AUTH_UPSTREAM_COMMAND: 'command',
  MCP_AUTH_UPSTREAM_CWD: 'cwd',
  MCP_AUTH_UPSTREAM_ENV: 'env',
  MCP_AUTH_IDENTITY_HEADERS: 'identityHeaders',
  MCP_AUTH_IDENTITY_ENV: 'identityEnv',
  MCP_AUTH_UPSTREAM_AUTH: 'auth.mode',
  MCP_AUTH_UPSTREAM_TOKEN: 'auth.tokenEnv',
  MCP_AUTH_UPSTREAM_TOKEN_FILE: 'auth.tokenFile',
  MCP_AUTH_UPSTREAM_CLIENT_ID: 'auth.clientId',
  MCP_AUTH_UPSTREAM_CLIENT_SECRET: 'auth.clientSecretEnv',
  MCP_AUTH_UPSTREAM_CLIENT_SECRET_FILE: 'auth.clientSecretFile',
  MCP_AUTH_UPSTREAM_SCOPE: 'auth.scope',
  MCP_AUTH_UPSTREAM_ISSUER: 'auth.issuer',
  MCP_AUTH_UPSTREAM_RESOURCE: 'auth.resource',
  MCP_AUTH_UPSTREAM_CONNECT_TIMEOUT_MS: 'timeouts.connectMs',
  MCP_AUTH_UPSTREAM_IDLE_TIMEOUT_MS: 'timeouts.idleMs',
  MCP_AUTH_MAX_SESSIONS: 'limits.maxSessions',
  MCP_AUTH_MAX_SESSIONS_PER_CALLER: 'limits.maxSessionsPerCaller',
  MCP_AUTH_MAX_UPSTREAM_PROCESSES: 'limits.maxProcesses',
  MCP_AUTH_MAX_UPSTREAM_PROCESSES_PER_CALLER: 'limits.maxProcessesPerCaller',
  MCP_AUTH_UPSTREAM_PROCESS_IDLE_TIMEOUT_MS: 'limits.processIdleTimeoutMs',
  MCP_AUTH_UPSTREAM_STOP_TIMEOUT_MS: 'limits.stopTimeoutMs',
  MCP_AUTH_UPSTREAM_MAX_LINE_BYTES: 'limits.maxLineBytes',
  MCP_AUTH_UPSTREAM_MAX_STDIN_BYTES: 'limits.maxStdinBytes',
  MCP_AUTH_UPSTREAM_REPLAY_BYTES: 'limits.replayBytes',
  MCP_AUTH_UPSTREAM_REPLAY_WINDOW_MS: 'limits.replayWindowMs',
  MCP_AUTH_LIST_TIMEOUT_MS: 'listTimeoutMs',
} as const satisfies Partial<Record<SettingName, string>>;

/** The groups of the settings table whose settings describe one upstream. */
const SERVER_GROUPS: ReadonlySet<string> = new Set(['upstream', 'upstream-auth', 'stdio', 'any-upstream']);

/**
 * Where `setting` may be written (see {@link SettingPlace}). `MCP_AUTH_MAX_SESSIONS`, `…_PER_CALLER` and
 * `MCP_AUTH_LIST_TIMEOUT_MS` are gateway-wide and also per server: a server's own value wins over the gateway's.
 */
export function placeOf(setting: GatewaySetting): SettingPlace {
  if (setting.flag === undefined || setting.env === CONFIG_FILE_SETTING) return 'environment';
  return SERVER_GROUPS.has(setting.group) ? 'server' : 'gateway';
}

/** A setting's key in the file's `gateway` section: its variable in camelCase, without `MCP_AUTH_` (`PORT` → `port`). */
export function fileKeyOf(env: string): string {
  return env
    .replace(/^MCP_AUTH_/, '')
    .toLowerCase()
    .replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());
}

/**
 * Whether a setting's value is a path (`<file>`, `<dir>`; `<file|redis>` unless it is `redis`), which a file gives
 * relative to its own directory.
 */
function isPathSetting(setting: GatewaySetting, text: string): boolean {
  if (setting.value === '<file|redis>') return text.trim().toLowerCase() !== 'redis';
  return setting.value === '<file>' || setting.value === '<dir>';
}

/**
 * A JSON value as the text of a setting: a string as it is, a number in decimal, `true`/`false` as `on`/`off`, a list
 * of strings or numbers joined by commas (an item holding a comma or a blank is refused, as it would be split).
 *
 * @throws ConfigurationError naming `path` for anything else (an object, null, a list of objects).
 */
export function settingText(value: unknown, path: string): string {
  if (typeof value === 'string') return value;
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  if (typeof value === 'boolean') return value ? 'on' : 'off';
  if (Array.isArray(value) && value.every((item) => typeof item === 'string' || (typeof item === 'number' && Number.isFinite(item)))) {
    // A list setting's text is split at commas and blanks: an item holding one would become two.
    const split = value.findIndex((item) => /[\s,]/.test(String(item)));
    if (split !== -1) throw new ConfigurationError(`${path}[${split}]`, `must be one item, without commas or blanks (got ${JSON.stringify(value[split])}); give each item on its own`);
    return value.join(',');
  }
  throw new ConfigurationError(path, `must be a string, a number, true or false, or a list of strings (got ${describeJson(value)})`);
}

/** The settings with the file's `gateway` section merged in, and which settings the file gave (by variable, with its JSON path). */
export interface MergedSettings {
  readonly settings: SettingTexts;
  readonly fromFile: ReadonlyMap<string, string>;
}

/**
 * Merges the file's `gateway` section under `settings` (the environment overlaid by flags): a file value is used
 * only where the setting is unset. Records a problem for every key that is no gateway setting (with the one likely
 * meant), a per-server or environment-only setting under `gateway`, a value of the wrong type, and every per-server
 * variable or flag set beside the file (each server says its own in `servers`).
 */
export function mergeFileSettings(rows: readonly GatewaySetting[], settings: SettingTexts, config: GatewayConfigFile, problems: ConfigurationProblems): MergedSettings {
  const merged: Record<string, string | undefined> = { ...settings };
  const fromFile = new Map<string, string>();
  const byKey = new Map(rows.map((row) => [fileKeyOf(row.env), row]));
  for (const [key, value] of Object.entries(config.gateway)) {
    const path = `gateway.${key}`;
    const row = byKey.get(key);
    if (row === undefined || placeOf(row) !== 'gateway') {
      problems.add(path, misplacedKey(key, row, byKey));
      continue;
    }
    const text = problems.check(() => settingText(value, path));
    if (text === undefined || readSetting(settings, row.env) !== undefined) continue;
    merged[row.env] = isPathSetting(row, text) && text.trim() !== '' ? resolvePath(config.dir, text.trim()) : text;
    fromFile.set(row.env, path);
  }
  for (const row of rows) {
    if (placeOf(row) === 'gateway' || readSetting(settings, row.env) === undefined) continue;
    const key = serverKeyOf(row.env);
    if (key === undefined) continue;
    problems.add(
      row.env,
      row.env === 'MCP_AUTH_UPSTREAM' || row.env === 'MCP_AUTH_UPSTREAM_COMMAND'
        ? `and ${CONFIG_FILE_SETTING} are both set: naming both is an error; move this upstream into the file as a server (servers.<name>.${key}), or unset ${CONFIG_FILE_SETTING}`
        : `is set for each server in the configuration file (${CONFIG_FILE_SETTING}): write it as servers.<name>.${key}, and unset it here`,
    );
  }
  return { settings: merged, fromFile };
}

/** The per-server key of a setting, or undefined for a gateway-wide one. */
export function serverKeyOf(env: string): string | undefined {
  return (SERVER_SETTING_KEYS as Readonly<Record<string, string>>)[env];
}

/** Why `key` cannot be under `gateway`, with what to write instead. */
function misplacedKey(key: string, row: GatewaySetting | undefined, byKey: ReadonlyMap<string, GatewaySetting>): string {
  if (row === undefined) {
    const meant = closestName(key, [...byKey].filter(([, candidate]) => placeOf(candidate) === 'gateway').map(([name]) => name));
    const serverKey = Object.values(SERVER_SETTING_KEYS).find((path) => path === key || path.split('.')[0] === key);
    if (serverKey !== undefined) return `belongs to a server: write it as servers.<name>.${serverKey.split('.')[0]}`;
    return `is not a gateway setting${meant ? `; did you mean ${meant}?` : ' (see docs/configuration.md)'}`;
  }
  if (row.env === CONFIG_FILE_SETTING) return 'cannot name another configuration file';
  const serverKey = serverKeyOf(row.env);
  if (placeOf(row) === 'server' && serverKey !== undefined) return `is set for each server: write it as servers.<name>.${serverKey}`;
  return `is read from the environment only (${row.env}), so that a secret is never written in a file: set that variable${byKey.has(`${key}File`) ? `, or write ${key}File with the path of a file holding it` : ''}`;
}
