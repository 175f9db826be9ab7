/**
 * Reading a gateway configuration file (`--config`, `MCP_AUTH_CONFIG`): JSON, or YAML when its name ends in `.yaml`
 * or `.yml`. Both go through the `yaml` package's parser with unique keys, so that a key written twice is refused
 * with its line (`JSON.parse` would keep the last one silently). The parser is loaded only here, when a file is
 * named: a gateway configured by variables and flags never loads it.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, extname, resolve as resolvePath } from 'node:path';
import { closestName } from '../../core/kernel/closest-name.js';
import { ConfigurationError } from '../../core/kernel/errors.js';
import type { ConfigurationProblems } from '../../core/kernel/configuration-problems.js';

/** The setting that names the file, under which problems with the file as a whole are reported. */
export const CONFIG_FILE_SETTING = 'MCP_AUTH_CONFIG';

/** The keys the top level of a configuration file may have. */
export const CONFIG_FILE_KEYS = ['$schema', 'gateway', 'servers'] as const;

/** A configuration file, parsed, its top level checked; its sections are read by `file-settings.ts` and `server-entry.ts`. */
export interface GatewayConfigFile {
  /** The file's absolute path. */
  readonly file: string;
  /** Its directory: relative paths in the file start here. */
  readonly dir: string;
  /** `gateway`: gateway-wide settings by their key (the variable's name in camelCase, without `MCP_AUTH_`). */
  readonly gateway: Readonly<Record<string, unknown>>;
  /** `servers`: each upstream by its name; absent when the file has none. */
  readonly servers?: Readonly<Record<string, unknown>>;
}

/** The subset of the `yaml` package used here (its `parseDocument`), typed locally so the package loads lazily. */
interface YamlParser {
  parseDocument(text: string, options: { uniqueKeys: boolean; prettyErrors: boolean }): {
    readonly errors: readonly { readonly code: string; readonly message: string; readonly pos: readonly [number, number]; readonly linePos?: readonly [{ line: number; col: number }, ...unknown[]] }[];
    toJS(options: { maxAliasCount: number }): unknown;
  };
}

/** Aliases a YAML file may expand, at most: a configuration file has no use for a "billion laughs". */
const MAX_YAML_ALIASES = 100;

/**
 * Reads and parses the configuration file at `path` (relative to the working directory), and checks its top level:
 * an object with only `$schema` (a string), `gateway` and `servers` (objects). Each problem is recorded in
 * `problems`, by the JSON path at fault (`gateway`, `prot`) or, for the file as a whole (missing, unreadable,
 * not JSON or YAML, a duplicate key), by {@link CONFIG_FILE_SETTING} with the file, line and column.
 *
 * @returns undefined when the file cannot be used at all.
 */
export function readGatewayConfigFile(path: string, problems: ConfigurationProblems): GatewayConfigFile | undefined {
  const file = resolvePath(path);
  const root = problems.check(() => parseConfigText(readConfigText(file), file));
  if (root === undefined) return undefined;
  if (!isObject(root)) {
    problems.add(CONFIG_FILE_SETTING, `${file} must hold an object with "servers" (and optionally "gateway" and "$schema"), not ${describeJson(root)}`);
    return undefined;
  }
  for (const key of Object.keys(root)) {
    if ((CONFIG_FILE_KEYS as readonly string[]).includes(key)) continue;
    const meant = closestName(key, CONFIG_FILE_KEYS);
    problems.add(key, `is not a key of a configuration file${meant ? `; did you mean ${meant}?` : `; the top level has only ${CONFIG_FILE_KEYS.join(', ')}`}`);
  }
  if (root.$schema !== undefined && typeof root.$schema !== 'string') {
    problems.add('$schema', 'must be the schema\'s path or URL as a string, e.g. "./node_modules/mcp-oauth-guard/schema/gateway-config.schema.json"');
  }
  const gateway = root.gateway === undefined ? {} : root.gateway;
  if (!isObject(gateway)) problems.add('gateway', `must be an object of gateway-wide settings, e.g. {"issuer": "https://auth.example.com"}, not ${describeJson(gateway)}`);
  const servers = root.servers;
  if (servers !== undefined && !isObject(servers)) problems.add('servers', `must be an object mapping each server's name to its settings, e.g. {"notes": {"url": "http://127.0.0.1:3001/mcp"}}, not ${describeJson(servers)}`);
  return { file, dir: dirname(file), gateway: isObject(gateway) ? gateway : {}, ...(isObject(servers) ? { servers } : {}) };
}

function readConfigText(file: string): string {
  try {
    const text = readFileSync(file, 'utf8');
    // Editors on Windows may save a byte-order mark.
    return text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const why = code === 'ENOENT' ? 'does not exist' : code === 'EISDIR' ? 'is a directory' : code === 'EACCES' || code === 'EPERM' ? 'cannot be read (permission denied)' : `cannot be read (${code ?? (error as Error).message})`;
    throw new ConfigurationError(CONFIG_FILE_SETTING, `the configuration file ${file} ${why}; set ${CONFIG_FILE_SETTING} (--config) to a JSON or YAML file`);
  }
}

/** The file's value, through the YAML parser (JSON is YAML), every syntax error and duplicate key reported with its line. */
function parseConfigText(text: string, file: string): unknown {
  const yaml = loadYamlParser();
  const format = /^\.ya?ml$/i.test(extname(file)) ? 'YAML' : 'JSON';
  const document = yaml.parseDocument(text, { uniqueKeys: true, prettyErrors: true });
  const first = document.errors[0];
  if (first !== undefined) {
    const at = first.linePos?.[0];
    const where = at ? ` at line ${at.line}, column ${at.col}` : '';
    const what = first.code === 'DUPLICATE_KEY' ? `the key ${quoteKeyAt(text, first.pos[0])} appears twice in the same object; keep one` : first.message.replace(/ at line \d+, column \d+:[\s\S]*$/, '').replace(/\s+$/, '');
    throw new ConfigurationError(CONFIG_FILE_SETTING, `the configuration file ${file} is not valid ${format}${where}: ${what}`);
  }
  return document.toJS({ maxAliasCount: MAX_YAML_ALIASES });
}

/** The `yaml` package, loaded synchronously on first use only. */
function loadYamlParser(): YamlParser {
  return createRequire(import.meta.url)('yaml') as YamlParser;
}

/** The key written at `offset`, quoted, for the duplicate-key message. */
function quoteKeyAt(text: string, offset: number): string {
  const match = /^(?:"((?:[^"\\]|\\.)*)"|'([^']*)'|([^\s:,{}[\]]+))/.exec(text.slice(offset, offset + 200));
  const key = match?.[1] ?? match?.[2] ?? match?.[3];
  return key === undefined ? 'at that place' : JSON.stringify(key);
}

/** Whether `value` is a plain object (not an array, not null). */
export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A short description of a JSON value's type, for messages: `an array`, `a number (5)`, `null`. */
export function describeJson(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'object') return 'an object';
  if (typeof value === 'string') return `a string (${JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value)})`;
  return `${typeof value === 'number' ? 'a number' : typeof value === 'boolean' ? 'a boolean' : typeof value} (${String(value)})`;
}
