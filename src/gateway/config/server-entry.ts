/**
 * The `servers` section of a configuration file: each `servers.<name>` entry checked (its keys, with the one likely
 * meant for a misspelt one), turned into the settings a single upstream is read from, and read by the same reader
 * (`loadUpstreamSettings`, `loadUpstreamAuth`, the policy reader), its problems renamed to their JSON paths
 * (`servers.notes.auth.tokenFile`).
 */
import { compileToolSelection } from '../../core/policy/tool-selection.js';
import { resolve as resolvePath } from 'node:path';
import { closestName } from '../../core/kernel/closest-name.js';
import { ConfigurationError } from '../../core/kernel/errors.js';
import { collectConfigurationProblems, type ConfigurationProblems } from '../../core/kernel/configuration-problems.js';
import type { GuardOptions } from '../../core/guard/guard-options.js';
import { checkInteger, readSetting } from '../../core/kernel/settings.js';
import { compilePolicy } from '../../core/policy/compile-policy.js';
import { loadPolicyFile } from '../../core/policy/load-policy-file.js';
import type { PolicyDefinition } from '../../core/policy/policy-definition.js';
import { checkUpstreamName } from '../upstream/upstream.js';
import { callerReachOf } from './caller-reach.js';
import { describeJson, isObject, type GatewayConfigFile } from './config-file.js';
import { SERVER_SETTING_KEYS, serverKeyOf, settingText } from './file-settings.js';
import { renameSettingsIn, withProblemLabels } from './problem-labels.js';
import { MAX_PAGE_REUSE_MS, type ServerConfig, type ToolSelectionDefinition } from './server-config.js';
import { loadUpstreamSettings, readInteger, type SettingTexts } from './upstream-settings.js';

/** Most servers one configuration file may name: a bound on the processes, sessions and metric label values they bring. */
export const MAX_SERVERS = 32;

/** Longest a merged list may wait for one server (`MCP_AUTH_LIST_TIMEOUT_MS`, `listTimeoutMs`), in milliseconds. */
export const MAX_LIST_TIMEOUT_MS = 600_000;

/** The settings inherited by every server from the gateway's own unless the server sets them (`limits`). */
const INHERITED_SETTINGS = ['MCP_AUTH_MAX_SESSIONS', 'MCP_AUTH_MAX_SESSIONS_PER_CALLER', 'MCP_AUTH_SESSION_IDLE_TIMEOUT_MS'] as const;

/** Keys of a server that no setting stands for. */
const OWN_KEYS = ['policy', 'policyFile', 'tools', 'required', 'listReuseMs'] as const;
/** Limits of an HTTP server that no setting stands for (options of the HTTP upstream). */
const OWN_LIMIT_KEYS = ['maxResponseBytes'] as const;
/** Keys that only a server with `url` takes. */
const HTTP_ONLY_KEYS = ['timeouts.connectMs', 'limits.maxSessions', 'limits.maxSessionsPerCaller', 'limits.maxResponseBytes'];
/** Inline secrets, refused with the key to use instead. */
const INLINE_SECRETS: Readonly<Record<string, string>> = { token: 'tokenEnv or tokenFile', clientSecret: 'clientSecretEnv or clientSecretFile' };

/** The keys of an entry's object at `group` (`''` for the entry itself, `auth`, `limits`, …). */
function keysOf(group: string): string[] {
  const keys = new Set<string>(group === '' ? OWN_KEYS : group === 'limits' ? OWN_LIMIT_KEYS : group === 'tools' ? ['include', 'exclude'] : []);
  for (const path of Object.values(SERVER_SETTING_KEYS)) {
    const dot = path.indexOf('.');
    if (group === '' ? true : dot !== -1 && path.slice(0, dot) === group) keys.add(group === '' ? path.split('.')[0]! : path.slice(dot + 1));
  }
  return [...keys];
}

/** What reading the servers needs besides the file. */
export interface ServerReadContext {
  /** The gateway's merged settings (environment, flags, file): what servers inherit. */
  readonly settings: SettingTexts;
  /** The environment, where `auth.tokenEnv` and `auth.clientSecretEnv` name their variables. */
  readonly env: SettingTexts;
  /** The guard's options, for the upstream credentials' issuer fallback; absent when they were refused. */
  readonly guard: GuardOptions | undefined;
  /** The settings of a stdio upstream alone, refused for a server with `url`. */
  readonly stdioOnlySettings: readonly string[];
  /** How each gateway setting is named in problems (its JSON path when the file gave it). */
  readonly gatewayLabel: (setting: string) => string;
}

/**
 * Reads every server of `config.servers`, in the file's order. Problems (a bad or colliding name, too many or no
 * servers, each entry's) are recorded in `problems` by JSON path.
 */
export function readServers(config: GatewayConfigFile & { servers: Readonly<Record<string, unknown>> }, context: ServerReadContext, problems: ConfigurationProblems): ServerConfig[] {
  const names = Object.keys(config.servers);
  if (names.length === 0) problems.add('servers', 'names no server: add at least one, e.g. "servers": {"notes": {"url": "http://127.0.0.1:3001/mcp"}}');
  if (names.length > MAX_SERVERS) problems.add('servers', `names ${names.length} servers; at most ${MAX_SERVERS} are allowed`);
  const byLowerCase = new Map<string, string>();
  const servers: ServerConfig[] = [];
  for (const name of names) {
    const path = `servers.${name}`;
    const named = problems.check(() => checkUpstreamName(name, path)) !== undefined;
    const first = named ? byLowerCase.get(name.toLowerCase()) : undefined;
    if (first !== undefined) problems.add(path, `and servers.${first} differ only in case: names are compared ignoring case (tool prefixes, metric labels); rename one`);
    else if (named) byLowerCase.set(name.toLowerCase(), name);
    // The entry is read whatever its name, so that its own mistakes are named in the same message.
    const server = problems.check(() => readServerEntry(name, config.servers[name], config, context));
    if (server !== undefined && named && first === undefined) servers.push(server);
  }
  return servers;
}

/**
 * Reads one `servers.<name>` entry.
 *
 * @throws ConfigurationError naming every problem of the entry by its JSON path.
 */
export function readServerEntry(name: string, entry: unknown, config: GatewayConfigFile, context: ServerReadContext): ServerConfig {
  const path = `servers.${name}`;
  if (!isObject(entry)) throw withPath(path, `must be an object with "url" (Streamable HTTP) or "command" (stdio), not ${describeJson(entry)}`);
  return collectConfigurationProblems((problems) => {
    checkEntryKeys(entry, path, problems);
    const hasUrl = entry.url !== undefined;
    if (hasUrl === (entry.command !== undefined)) {
      problems.add(path, hasUrl ? 'has both "url" and "command": a server is either Streamable HTTP (url) or stdio (command); keep one' : 'needs "url" (a Streamable HTTP MCP endpoint) or "command" (a stdio MCP server to run)');
    }
    const inlineSecret = isObject(entry.auth) && Object.keys(INLINE_SECRETS).some((key) => (entry.auth as Record<string, unknown>)[key] !== undefined);
    const texts = entrySettings(entry, path, config, context, problems);
    if (!hasUrl) for (const key of HTTP_ONLY_KEYS) if (valueAt(entry, key) !== undefined) problems.add(`${path}.${key}`, 'applies to a server with "url" only');
    // Read only when the entry names exactly one upstream, usable: else that is the one problem to report (as is an
    // inline secret, whose absence the reader would report again).
    const named = hasUrl !== (entry.command !== undefined) && (texts.texts.MCP_AUTH_UPSTREAM ?? texts.texts.MCP_AUTH_UPSTREAM_COMMAND) !== undefined && !inlineSecret;
    const labels = {
      // A setting the entry does not give is named by its key too (a missing token), but one it inherits from the gateway.
      setting: (setting: string): string => texts.labels.get(setting) ?? (serverKeyOf(setting) !== undefined && !(INHERITED_SETTINGS as readonly string[]).includes(setting) ? `${path}.${serverKeyOf(setting)}` : context.gatewayLabel(setting)),
      detail: (text: string): string => renameSettingsIn(text, serverKeyOf),
    };
    const upstream = !named
      ? undefined
      : problems.check(() =>
          withProblemLabels(labels, () =>
            collectConfigurationProblems((own) =>
              loadUpstreamSettings({ ...inherited(context.settings), ...texts.texts }, own, { guard: context.guard, stdioOnlySettings: context.stdioOnlySettings, environment: context.env, ...(texts.commandWords ? { commandWords: texts.commandWords } : {}) }),
            ),
          ),
        );
    const listTimeoutMs = problems.check(() => withProblemLabels({ setting: () => `${path}.listTimeoutMs` }, () => readInteger(texts.texts, 'MCP_AUTH_LIST_TIMEOUT_MS', 1, MAX_LIST_TIMEOUT_MS)));
    const maxResponseBytes = hasUrl && isObject(entry.limits) && entry.limits.maxResponseBytes !== undefined ? problems.check(() => checkInteger((entry.limits as Record<string, unknown>).maxResponseBytes, `${path}.limits.maxResponseBytes`, 0, { min: 1, max: 1_073_741_824 })) : undefined;
    const policy = readServerPolicy(entry, path, config, problems);
    const tools = readToolSelection(entry.tools, `${path}.tools`, problems);
    if (entry.required !== undefined && typeof entry.required !== 'boolean') problems.add(`${path}.required`, `must be true or false (got ${describeJson(entry.required)})`);
    const listReuseMs = entry.listReuseMs === undefined ? undefined : problems.check(() => checkInteger(entry.listReuseMs, `${path}.listReuseMs`, 0, { min: 1, max: MAX_PAGE_REUSE_MS }));
    if (listReuseMs !== undefined) checkListReuse(entry, texts.texts, path, problems);
    problems.throwIfAny();
    // Set, since throwIfAny() threw otherwise.
    const { proxy: read, stdio, upstreamAuth } = upstream!;
    const proxy = read ? { ...read, ...(maxResponseBytes !== undefined ? { maxResponseBytes } : {}) } : undefined;
    return {
      name,
      transport: proxy ? 'http' : 'stdio',
      ...(proxy ? { proxy } : {}),
      ...(stdio ? { stdio } : {}),
      ...(upstreamAuth ? { upstreamAuth } : {}),
      ...policy,
      ...(tools ? { tools } : {}),
      required: entry.required === true,
      ...(listTimeoutMs !== undefined ? { listTimeoutMs } : {}),
      ...(listReuseMs !== undefined ? { listReuseMs } : {}),
    } satisfies ServerConfig;
  });
}

/**
 * `listReuseMs` says a server's lists are the same for every caller. A server that is told who asks (identity
 * headers or environment, a token exchanged for the caller) may answer each caller differently, so its pages must
 * not be served to others. A server in connected mode is allowed: the operator says its lists do not depend on whose
 * account asks, only its own pages (fetched with a connected user's token) are kept, never the connect flow's
 * answers, and users who have not connected it see its tools (`MCP_AUTH_CONNECT_LISTS=hide` hides them).
 */
function checkListReuse(entry: Record<string, unknown>, texts: SettingTexts, path: string, problems: ConfigurationProblems): void {
  const mode = texts.MCP_AUTH_UPSTREAM_AUTH;
  const why = callerReachOf({
    identityHeaders: texts.MCP_AUTH_IDENTITY_HEADERS !== undefined && texts.MCP_AUTH_IDENTITY_HEADERS !== 'off',
    identityEnv: entry.identityEnv !== undefined && entry.identityEnv !== false,
    // The operator may say a connected server lists alike for every account (see above), and that a stdio server's
    // processes list alike whoever they were started for: those carry nothing of the caller but its token or state.
    authMode: mode === 'connected' ? undefined : mode,
    processPerCaller: false,
  });
  if (why !== undefined) problems.add(`${path}.listReuseMs`, `cannot be used with ${why}: the server is told who asks, so its lists may differ per caller and must not be served to others; remove listReuseMs`);
}

/** The gateway's settings every server inherits unless it sets its own. */
function inherited(settings: SettingTexts): Record<string, string> {
  const texts: Record<string, string> = {};
  for (const name of INHERITED_SETTINGS) {
    const value = readSetting(settings, name);
    if (value !== undefined) texts[name] = value;
  }
  return texts;
}

/** An entry's settings as the single upstream's variables, each with the JSON path it was written at. */
interface EntrySettings {
  readonly texts: Record<string, string>;
  readonly labels: Map<string, string>;
  /** `command` given as a list: the program and its arguments, not split again. */
  readonly commandWords?: readonly string[];
}

/**
 * Turns an entry's values into setting texts: paths resolved from the file's directory, secrets read from the
 * variables named. A value that cannot be turned is recorded in `problems` and left out.
 */
function entrySettings(entry: Record<string, unknown>, path: string, config: GatewayConfigFile, context: ServerReadContext, problems: ConfigurationProblems): EntrySettings {
  const texts: Record<string, string> = {};
  const labels = new Map<string, string>();
  let commandWords: string[] | undefined;
  for (const [setting, key] of Object.entries(SERVER_SETTING_KEYS)) {
    const value = valueAt(entry, key);
    if (value === undefined) continue;
    const at = `${path}.${key}`;
    labels.set(setting, at);
    if (key === 'command' && Array.isArray(value)) {
      commandWords = problems.check(() => commandList(value, at));
      if (commandWords !== undefined) texts[setting] = commandWords[0]!;
      labels.set(setting, `${at}[0]`);
      continue;
    }
    const text = problems.check(() => (key === 'identityHeaders' && isObject(value) ? identityHeaderList(value, at) : settingText(value, at)));
    if (text === undefined) continue;
    if (key === 'url' && typeof value !== 'string') problems.add(at, `must be the MCP endpoint's URL as a string (got ${describeJson(value)})`);
    else if (key === 'cwd' || key === 'auth.tokenFile' || key === 'auth.clientSecretFile') texts[setting] = resolvePath(config.dir, text);
    else if (key === 'auth.tokenEnv' || key === 'auth.clientSecretEnv') {
      const secret = problems.check(() => secretFromEnvironment(text, at, context.env));
      if (secret !== undefined) texts[setting] = secret;
    } else texts[setting] = text;
  }
  return { texts, labels, ...(commandWords ? { commandWords } : {}) };
}

/** The value at a dotted key of an entry (`auth.mode`), or undefined. */
function valueAt(entry: Record<string, unknown>, key: string): unknown {
  const dot = key.indexOf('.');
  if (dot === -1) return entry[key];
  const group = entry[key.slice(0, dot)];
  return isObject(group) ? group[key.slice(dot + 1)] : undefined;
}

/** `command` as a list: the program, then its arguments, each a string (the program not empty). */
function commandList(value: readonly unknown[], path: string): string[] {
  if (value.length === 0) throw withPath(path, 'is an empty list: give the program and its arguments, e.g. ["python3", "server.py"]');
  return collectConfigurationProblems((problems) => {
    value.forEach((word, i) => {
      if (typeof word !== 'string' || (i === 0 && word.trim() === '')) problems.add(`${path}[${i}]`, i === 0 ? `must be the program to run, a non-empty string (got ${describeJson(word)})` : `must be a string (got ${describeJson(word)})`);
    });
    problems.throwIfAny();
    return value as string[];
  });
}

/** `identityHeaders` as an object of header names, as the setting's list (`subject=X-User,…`). */
function identityHeaderList(value: Record<string, unknown>, path: string): string {
  const keys = ['subject', 'clientId', 'scopes', 'issuer'];
  return collectConfigurationProblems((problems) => {
    const parts: string[] = [];
    for (const [key, header] of Object.entries(value)) {
      if (!keys.includes(key)) problems.add(`${path}.${key}`, unknownKey(keys, key));
      else if (typeof header !== 'string') problems.add(`${path}.${key}`, `must be a header name (got ${describeJson(header)})`);
      else parts.push(`${key}=${header}`);
    }
    problems.throwIfAny();
    if (parts.length === 0) throw withPath(path, 'names no header: use "on", "off", or an object such as {"subject": "X-MCP-Subject"}');
    return parts.join(',');
  });
}

/** A secret from the environment variable `name` names. */
function secretFromEnvironment(name: string, path: string, env: SettingTexts): string {
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) throw withPath(path, `must name an environment variable, e.g. NOTES_UPSTREAM_TOKEN (got ${JSON.stringify(name)})`);
  const value = readSetting(env, name);
  if (value === undefined) throw withPath(path, `names ${name}, which is not set in the gateway's environment; set it to the secret`);
  return value;
}

/** A server's `policy` (inline) or `policyFile`, read by the policy reader, with where it came from. */
function readServerPolicy(entry: Record<string, unknown>, path: string, config: GatewayConfigFile, problems: ConfigurationProblems): Pick<ServerConfig, 'policy' | 'policySource' | 'policyFile'> {
  if (entry.policy !== undefined && entry.policyFile !== undefined) {
    problems.add(`${path}.policyFile`, `and ${path}.policy are both set: keep the policy inline or in its file, not both`);
    return {};
  }
  if (entry.policy !== undefined) {
    const source = `${path}.policy`;
    const policy = (isObject(entry.policy) ? withoutEditorKeys(entry.policy) : entry.policy) as PolicyDefinition;
    return problems.check(() => compilePolicy(policy, source)) === undefined ? {} : { policy, policySource: source };
  }
  if (entry.policyFile === undefined) return {};
  if (typeof entry.policyFile !== 'string' || entry.policyFile.trim() === '') {
    problems.add(`${path}.policyFile`, `must be the policy file's path, relative to this file (got ${describeJson(entry.policyFile)})`);
    return {};
  }
  const file = resolvePath(config.dir, entry.policyFile);
  const policy = problems.check(() => loadPolicyFile(file, `${path}.policyFile`));
  return policy === undefined ? {} : { policy, policySource: `policy file ${file}`, policyFile: file };
}

/** A policy object without `$schema` and `$comment`, which are for editors and people, as in a policy file. */
function withoutEditorKeys(policy: Record<string, unknown>): Record<string, unknown> {
  const definition = { ...policy };
  if (typeof definition.$schema === 'string') delete definition.$schema;
  if (typeof definition.$comment === 'string') delete definition.$comment;
  return definition;
}

/**
 * `tools`: `include` and `exclude`, each a list of non-empty patterns, checked by the one selection compiler (its
 * other keys are reported with the entry's).
 */
function readToolSelection(value: unknown, path: string, problems: ConfigurationProblems): ToolSelectionDefinition | undefined {
  if (value === undefined) return undefined;
  if (!isObject(value)) {
    problems.add(path, `must be an object such as {"include": ["notes_*"], "exclude": ["notes_delete"]} (got ${describeJson(value)})`);
    return undefined;
  }
  // Each list checked on its own, so that both are reported when both are wrong.
  const include = value.include === undefined ? true : problems.check(() => compileToolSelection({ include: value.include } as ToolSelectionDefinition, path));
  const exclude = value.exclude === undefined ? true : problems.check(() => compileToolSelection({ exclude: value.exclude } as ToolSelectionDefinition, path));
  if (include === undefined || exclude === undefined) return undefined;
  return { ...(value.include !== undefined ? { include: value.include as string[] } : {}), ...(value.exclude !== undefined ? { exclude: value.exclude as string[] } : {}) };
}

/** Records a problem for every key of the entry and its objects that is not one, with the key likely meant. */
function checkEntryKeys(entry: Record<string, unknown>, path: string, problems: ConfigurationProblems): void {
  for (const group of ['', 'auth', 'timeouts', 'limits', 'tools']) {
    const object = group === '' ? entry : entry[group];
    if (object === undefined) continue;
    const at = group === '' ? path : `${path}.${group}`;
    if (!isObject(object)) {
      problems.add(at, `must be an object (got ${describeJson(object)})`);
      continue;
    }
    const keys = keysOf(group);
    for (const key of Object.keys(object)) {
      if (keys.includes(key)) continue;
      const secret = group === 'auth' ? INLINE_SECRETS[key] : undefined;
      problems.add(`${at}.${key}`, secret ? `is a secret written in the file: secrets are never inline; use ${secret} (an environment variable, or a file, holding it)` : unknownKey(keys, key));
    }
  }
}

function unknownKey(keys: readonly string[], key: string): string {
  const meant = closestName(key, keys);
  return `is not a key here${meant ? `; did you mean ${meant}?` : `; the keys are ${keys.join(', ')}`}`;
}

function withPath(path: string, detail: string): ConfigurationError {
  return new ConfigurationError(path, detail);
}
