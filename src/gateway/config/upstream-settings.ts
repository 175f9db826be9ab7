/**
 * The one reader of an upstream's settings (`MCP_AUTH_UPSTREAM` or `MCP_AUTH_UPSTREAM_COMMAND`, and the settings
 * of the `upstream`, `stdio`, `upstream-auth` and `any-upstream` groups): the single upstream of a gateway set by
 * variables and flags, and each `servers.<name>` entry of a configuration file, which is turned into the same
 * settings first (`server-entry.ts`), so that a value is checked by the same parser wherever it is written.
 */
import { statSync } from 'node:fs';
import { resolve as resolvePath } from 'node:path';
import { ConfigurationError } from '../../core/kernel/errors.js';
import type { ConfigurationProblems } from '../../core/kernel/configuration-problems.js';
import type { GuardOptions } from '../../core/guard/guard-options.js';
import { MAX_TIMER_MS, parseIntegerOrOff, parseIntegerSetting, parseListSetting, parseSwitchSetting, readSetting, switchWord } from '../../core/kernel/settings.js';
import { checkIdentityHeaders, DEFAULT_IDENTITY_HEADERS, isHeaderName, type IdentityHeaderNames } from '../upstream/http/identity-headers.js';

export { DEFAULT_IDENTITY_HEADERS } from '../upstream/http/identity-headers.js';
import type { UpstreamProxyOptions } from '../upstream/http/upstream-proxy.js';
import { parseUpstreamUrl } from '../upstream/http/upstream-url.js';
import { checkChildEnvNames, childEnvironment } from '../upstream/stdio/child-environment.js';
import { STDIO_INTEGER_SETTINGS, type StdioIntegerOption } from '../upstream/stdio/stdio-integer-settings.js';
import type { StdioUpstreamOptions } from '../upstream/stdio/stdio-upstream.js';
import { loadUpstreamAuth, UPSTREAM_AUTH_SETTINGS, type UpstreamAuthConfig } from '../upstream-auth/upstream-auth-config.js';
import { checkProgram, splitCommandLine } from './command-line.js';

/** Settings as text, by variable name: the environment overlaid with flags, or one server's entry as settings. */
export type SettingTexts = Readonly<Record<string, string | undefined>>;

/** One upstream, read: an HTTP one (`proxy`, with `upstreamAuth` unless `none`), a stdio one, or none. */
export interface UpstreamSettings {
  readonly proxy?: UpstreamProxyOptions;
  readonly stdio?: StdioUpstreamOptions;
  readonly upstreamAuth?: UpstreamAuthConfig;
}

/** What {@link loadUpstreamSettings} needs besides the settings. */
export interface UpstreamSettingsContext {
  /** The guard's options, for the upstream credential's issuer fallback and timeout; absent when they were refused. */
  readonly guard: GuardOptions | undefined;
  /** False to accept no upstream at all (`check` of an application that guards itself). Default true. */
  readonly upstreamRequired?: boolean;
  /** The settings of a stdio upstream alone (the `stdio` group but the command), refused with an HTTP one. */
  readonly stdioOnlySettings: readonly string[];
  /** The command already split (a configuration file's `command` array); else `MCP_AUTH_UPSTREAM_COMMAND` is split. */
  readonly commandWords?: readonly string[];
  /**
   * Where the variables a stdio upstream is passed (`MCP_AUTH_UPSTREAM_ENV`) are found first, then in the gateway's own
   * environment; default `settings` (the environment overlaid by flags).
   */
  readonly environment?: SettingTexts;
}

/** The bounds of sessions (`MCP_AUTH_MAX_SESSIONS`, `_PER_CALLER`, `MCP_AUTH_SESSION_IDLE_TIMEOUT_MS`), those set. */
export interface SessionLimits {
  maxSessions?: number;
  maxSessionsPerCaller?: number;
  sessionIdleTimeoutMs?: number;
}

/** Reads the bounds of sessions, recording each problem in `problems`: one reader for an upstream's and a server set's. */
export function readSessionLimits(settings: SettingTexts, problems: ConfigurationProblems): SessionLimits {
  const maxSessions = problems.check(() => readInteger(settings, 'MCP_AUTH_MAX_SESSIONS', 1, 10_000_000));
  const maxSessionsPerCaller = problems.check(() => readInteger(settings, 'MCP_AUTH_MAX_SESSIONS_PER_CALLER', 1, 10_000_000));
  const sessionIdleTimeoutMs = problems.check(() => readInteger(settings, 'MCP_AUTH_SESSION_IDLE_TIMEOUT_MS', 1, MAX_TIMER_MS));
  return {
    ...(maxSessions !== undefined ? { maxSessions } : {}),
    ...(maxSessionsPerCaller !== undefined ? { maxSessionsPerCaller } : {}),
    ...(sessionIdleTimeoutMs !== undefined ? { sessionIdleTimeoutMs } : {}),
  };
}

/**
 * Reads one upstream from its settings, recording each problem in `problems` under the variable at fault.
 * Nothing is returned for a part that has a problem; the caller throws once every part was read.
 */
export function loadUpstreamSettings(settings: SettingTexts, problems: ConfigurationProblems, context: UpstreamSettingsContext): UpstreamSettings {
  checkUpstreamChoice(settings, problems, context);
  const upstream = readSetting(settings, 'MCP_AUTH_UPSTREAM');
  const upstreamCommand = readSetting(settings, 'MCP_AUTH_UPSTREAM_COMMAND');
  const stdio = upstreamCommand === undefined ? undefined : loadStdioUpstream(settings, context.commandWords ?? upstreamCommand, problems, context.environment ?? settings);
  const connectTimeoutMs = problems.check(() => readInteger(settings, 'MCP_AUTH_UPSTREAM_CONNECT_TIMEOUT_MS', 1, 600_000));
  const { env: idleEnv, min: idleMin, max: idleMax } = STDIO_INTEGER_SETTINGS.idleTimeoutMs;
  const idleTimeoutMs = problems.check(() => readInteger(settings, idleEnv, idleMin, idleMax));
  const { maxSessions, maxSessionsPerCaller, sessionIdleTimeoutMs } = readSessionLimits(settings, problems);
  const identityHeaders = problems.check(() => parseIdentityHeaders(readSetting(settings, 'MCP_AUTH_IDENTITY_HEADERS')));
  if (upstreamCommand !== undefined) {
    for (const name of UPSTREAM_AUTH_SETTINGS) {
      const value = readSetting(settings, name);
      if (value !== undefined && !(name === 'MCP_AUTH_UPSTREAM_AUTH' && value === 'none')) {
        problems.add(name, 'applies to an HTTP upstream (MCP_AUTH_UPSTREAM) only, not to the stdio upstream MCP_AUTH_UPSTREAM_COMMAND starts; unset it');
      }
    }
    if (identityHeaders) problems.add('MCP_AUTH_IDENTITY_HEADERS', 'applies to an HTTP upstream only; a stdio upstream learns its caller from MCP_AUTH_IDENTITY_ENV=on');
  }
  // The upstream credential's settings are checked even when the guard's were refused; its issuer fallback is then unused.
  const upstreamAuth = upstream === undefined || upstreamCommand !== undefined ? undefined : problems.check(() => loadUpstreamAuth(settings, context.guard ?? { resource: '' }));
  if (stdio) return { stdio: { ...stdio, ...(idleTimeoutMs !== undefined ? { idleTimeoutMs } : {}) } };
  if (upstream === undefined) return {};
  const proxy: UpstreamProxyOptions = {
    upstream,
    ...(connectTimeoutMs !== undefined ? { connectTimeoutMs } : {}),
    ...(idleTimeoutMs !== undefined ? { idleTimeoutMs } : {}),
    ...(identityHeaders ? { identityHeaders } : {}),
    ...(maxSessions !== undefined ? { maxSessions } : {}),
    ...(maxSessionsPerCaller !== undefined ? { maxSessionsPerCaller } : {}),
    ...(sessionIdleTimeoutMs !== undefined ? { sessionIdleTimeoutMs } : {}),
  };
  return { proxy, ...(upstreamAuth ? { upstreamAuth } : {}) };
}

/**
 * Checks which upstream the settings name: exactly one of `MCP_AUTH_UPSTREAM` (a valid URL, without the settings of
 * a stdio upstream) and `MCP_AUTH_UPSTREAM_COMMAND`, or none when none is required. Part of
 * {@link loadUpstreamSettings}; the gateway calls it first as well, so that these problems are listed first (a
 * problem is recorded once).
 */
export function checkUpstreamChoice(settings: SettingTexts, problems: ConfigurationProblems, context: Pick<UpstreamSettingsContext, 'upstreamRequired' | 'stdioOnlySettings'>): void {
  const upstream = readSetting(settings, 'MCP_AUTH_UPSTREAM');
  const upstreamCommand = readSetting(settings, 'MCP_AUTH_UPSTREAM_COMMAND');
  if (upstream !== undefined && upstreamCommand !== undefined) {
    problems.add('MCP_AUTH_UPSTREAM_COMMAND', 'and MCP_AUTH_UPSTREAM are both set: the gateway fronts one upstream, either a stdio command or an HTTP URL; unset one of them');
  }
  if (upstream === undefined && upstreamCommand === undefined && context.upstreamRequired !== false) {
    problems.add('MCP_AUTH_UPSTREAM', 'is required: set it to the URL of the upstream MCP endpoint, e.g. http://127.0.0.1:3001/mcp, or set MCP_AUTH_UPSTREAM_COMMAND to run a stdio MCP server');
  }
  if (upstream === undefined) return;
  problems.check(() => parseUpstreamUrl(upstream, 'MCP_AUTH_UPSTREAM'));
  // Settings of a stdio upstream would silently do nothing here.
  for (const name of context.stdioOnlySettings) {
    if (readSetting(settings, name) !== undefined) problems.add(name, 'applies to a stdio upstream (MCP_AUTH_UPSTREAM_COMMAND) only; unset it, since MCP_AUTH_UPSTREAM is an HTTP upstream');
  }
}

/**
 * Reads `MCP_AUTH_IDENTITY_HEADERS`: `off` (default), `on` (the default names), or a list of
 * `subject=Header`, `clientId=Header`, `scopes=Header`.
 */
export function parseIdentityHeaders(value: string | undefined): IdentityHeaderNames | undefined {
  const setting = 'MCP_AUTH_IDENTITY_HEADERS';
  if (value === undefined) return undefined;
  const on = switchWord(value);
  if (on === false) return undefined;
  if (on === true) return { ...DEFAULT_IDENTITY_HEADERS };
  const names: IdentityHeaderNames = {};
  for (const part of parseListSetting(value) ?? []) {
    const eq = part.indexOf('=');
    const key = eq === -1 ? part : part.slice(0, eq);
    const header = eq === -1 ? '' : part.slice(eq + 1);
    if (key !== 'subject' && key !== 'clientId' && key !== 'scopes' && key !== 'issuer') {
      throw new ConfigurationError(setting, `"${part}" is not understood; use on, off, or a list such as subject=X-MCP-Subject,clientId=X-MCP-Client-Id,scopes=X-MCP-Scopes,issuer=X-MCP-Issuer`);
    }
    if (!isHeaderName(header)) {
      throw new ConfigurationError(setting, `"${part}" needs a header name after "=", e.g. ${key}=${DEFAULT_IDENTITY_HEADERS[key]}`);
    }
    names[key] = header;
  }
  checkIdentityHeaders(names, setting);
  return names;
}

/**
 * The stdio upstream's settings: the command split (unless given as words) and its program found, the working
 * directory checked, the environment built (from `environment`, then the gateway's own environment for names
 * `environment` lacks). Each problem is recorded in `problems`; undefined when the command line itself cannot be used.
 */
function loadStdioUpstream(settings: SettingTexts, commandLine: string | readonly string[], problems: ConfigurationProblems, environment: SettingTexts): StdioUpstreamOptions | undefined {
  const [command, ...args] = typeof commandLine === 'string' ? (problems.check(() => splitCommandLine(commandLine, 'MCP_AUTH_UPSTREAM_COMMAND')) ?? []) : commandLine;
  const cwdSetting = readSetting(settings, 'MCP_AUTH_UPSTREAM_CWD');
  const cwd = cwdSetting === undefined ? undefined : resolvePath(cwdSetting);
  if (cwd !== undefined && !isDirectory(cwd)) {
    problems.add('MCP_AUTH_UPSTREAM_CWD', `is "${cwdSetting}", which is not a directory`);
  }
  const names = problems.check(() => checkChildEnvNames(parseListSetting(readSetting(settings, 'MCP_AUTH_UPSTREAM_ENV')) ?? [], 'MCP_AUTH_UPSTREAM_ENV')) ?? [];
  const env = childEnvironment(names, { ...process.env, ...environment });
  // Looked for only in a working directory that exists: elsewhere the cwd problem is the one to fix.
  if (command !== undefined && (cwd === undefined || isDirectory(cwd))) problems.check(() => checkProgram(command, 'MCP_AUTH_UPSTREAM_COMMAND', { cwd: cwd ?? process.cwd(), path: env.PATH }));
  // Each integer setting as the stdio upstream's own table bounds it (idleTimeoutMs is read with the HTTP upstream's).
  const integers: Partial<Record<StdioIntegerOption, number>> = {};
  for (const [option, setting] of Object.entries(STDIO_INTEGER_SETTINGS)) {
    if (option === 'idleTimeoutMs') continue;
    const { env, min, max } = setting;
    const value = problems.check(() => ('zeroIsOff' in setting ? readIntegerOrOff(settings, env, max) : readInteger(settings, env, min, max)));
    if (value !== undefined) integers[option as StdioIntegerOption] = value;
  }
  const identityEnv = problems.check(() => parseSwitchSetting(readSetting(settings, 'MCP_AUTH_IDENTITY_ENV'), 'MCP_AUTH_IDENTITY_ENV') ?? false);
  if (command === undefined) return undefined;
  return {
    command,
    args: [...args],
    ...(cwd !== undefined ? { cwd } : {}),
    env,
    identityEnv: identityEnv ?? false,
    ...integers,
  };
}

function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

/** An integer setting within `min`..`max`, by the one integer parser of settings. */
export function readInteger(settings: SettingTexts, name: string, min: number, max: number): number | undefined {
  return parseIntegerSetting(readSetting(settings, name), name, min, max);
}

/** An integer setting from 0 to `max` where zero means none, and `off` the same (0), by the one rule of `off`. */
export function readIntegerOrOff(settings: SettingTexts, name: string, max: number): number | undefined {
  return parseIntegerOrOff(readSetting(settings, name), name, max);
}
