/**
 * Loading the JSON policy file named by `MCP_AUTH_POLICY`.
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { compilePolicy } from './compile-policy.js';
import { ConfigurationError } from '../kernel/errors.js';
import type { PolicyDefinition } from './policy-definition.js';

/**
 * Reads and validates a JSON policy file at start-up (synchronously: it runs once, before serving).
 *
 * The file has the shape of {@link PolicyDefinition} without functions: `scopesSupported`,
 * `requiredScopes`, `methods`, `tools`, `prompts`, `resources`, `scopeHierarchy` and `rateLimits`, as the JSON Schema
 * `schema/policy.schema.json` (package export `mcp-oauth-guard/policy.schema.json`) describes. `$schema` (the schema,
 * for editors) and `$comment` (JSON has no comments) are also allowed at the top level, as strings, and are dropped. Any other key is
 * refused, so a misspelt key cannot silently weaken the policy. Names such as `"__proto__"` or
 * `"constructor"` are ordinary tool names.
 *
 * Every problem throws a {@link ConfigurationError} naming `settingName` and the file, and saying how to
 * fix it: file missing or unreadable, invalid JSON (with line and column), or wrong shape (the full
 * {@link compilePolicy} validation runs here, so errors surface at start-up).
 *
 * @param path Path to the file, relative to the working directory or absolute.
 * @param settingName The setting that named the file, for error messages. Default `MCP_AUTH_POLICY`.
 * @returns The parsed definition, ready for `compilePolicy`.
 */
export function loadPolicyFile(path: string, settingName = 'MCP_AUTH_POLICY'): PolicyDefinition {
  const file = resolve(path);
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new ConfigurationError(settingName, describeReadError(error, file, settingName));
  }
  // Editors on Windows may save JSON with a byte-order mark, which JSON.parse refuses.
  if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);

  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    const at = locateJsonError(text, (error as Error).message);
    throw new ConfigurationError(
      settingName,
      `policy file ${file} is not valid JSON${at}: ${(error as Error).message}. Fix the syntax (no comments or trailing commas)`,
    );
  }

  if (typeof value === 'object' && value !== null && !Array.isArray(value)) {
    const record = value as Record<string, unknown>;
    // Object.hasOwn, not `in`: a parsed object may have an own "__proto__" key but inherits nothing we want.
    if (Object.hasOwn(record, '$schema') || Object.hasOwn(record, '$comment')) {
      const { $schema: schema, $comment: comment, ...rest } = record;
      // As the published schema (schema/policy.schema.json) says: both are text, or an editor would not read them.
      if (schema !== undefined && typeof schema !== 'string') {
        throw new ConfigurationError(`${settingName}.$schema`, `must be the schema's path or URL as a string, e.g. "./node_modules/mcp-oauth-guard/schema/policy.schema.json" (in policy file ${file})`);
      }
      if (comment !== undefined && typeof comment !== 'string') {
        throw new ConfigurationError(`${settingName}.$comment`, `must be a string (in policy file ${file})`);
      }
      value = rest;
    }
  }
  compilePolicy(value as PolicyDefinition, settingName, { source: `policy file ${file}` });
  return value as PolicyDefinition;
}

function describeReadError(error: unknown, file: string, settingName: string): string {
  const code = (error as NodeJS.ErrnoException).code;
  switch (code) {
    case 'ENOENT':
      return `policy file ${file} does not exist. Create it, or set ${settingName} to the path of an existing JSON policy file`;
    case 'EACCES':
    case 'EPERM':
      return `policy file ${file} cannot be read (permission denied). Make it readable by the user running the server`;
    case 'EISDIR':
      return `${file} is a directory. Set ${settingName} to the path of a JSON policy file`;
    default:
      return `policy file ${file} cannot be read (${code ?? (error as Error).message})`;
  }
}

/**
 * Finds where JSON.parse stopped, as ` at line L, column C`. V8 reports `position N` for most errors but
 * not for "Unexpected token"; then the shortest failing prefix is found by bisection (start-up only).
 */
function locateJsonError(text: string, message: string): string {
  let offset: number | undefined;
  const reported = /at position (\d+)/.exec(message);
  if (reported !== null) offset = Number(reported[1]);
  else if (/^Unexpected end/.test(message)) offset = text.length;
  else {
    let lo = 1;
    let hi = text.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (failsBefore(text.slice(0, mid))) hi = mid;
      else lo = mid + 1;
    }
    if (failsBefore(text.slice(0, lo))) offset = lo - 1;
  }
  if (offset === undefined) return '';
  const before = text.slice(0, offset);
  const line = before.split('\n').length;
  const column = offset - before.lastIndexOf('\n');
  return ` at line ${line}, column ${column}`;
}

/** Whether a prefix already contains an error, as opposed to merely ending early. */
function failsBefore(prefix: string): boolean {
  try {
    JSON.parse(prefix);
    return false;
  } catch (error) {
    const message = (error as Error).message;
    if (/^Unexpected end/.test(message)) return false;
    const at = /at position (\d+)/.exec(message);
    return at === null || Number(at[1]) < prefix.length;
  }
}
