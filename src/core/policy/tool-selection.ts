/**
 * Which of a server's tools an endpoint serving several servers exposes: `include` and `exclude` patterns with
 * `*` globs, compiled once into a test of the server's own tool names. Selection is not authorization: a tool it
 * leaves out is absent for every caller, and calling it gets the answer an unknown tool gets.
 */
import { ConfigurationError } from '../kernel/errors.js';
import { closestName } from '../kernel/closest-name.js';
import { escapeRegExp } from '../wire/uri-template.js';
import { describeValue } from './policy-rules.js';

/**
 * Which of a server's tools are exposed, by the server's own tool names. `*` matches any run of characters (none
 * included); no other character is special. A tool is exposed when it matches an `include` pattern (or there is
 * no `include`) and no `exclude` pattern; an empty `include` exposes none.
 *
 * @example
 * const selection: ToolSelectionDefinition = { include: ['notes_*'], exclude: ['notes_delete*'] };
 */
export interface ToolSelectionDefinition {
  /** Patterns of the tools exposed; absent: every tool, except those `exclude` names. */
  readonly include?: readonly string[];
  /** Patterns of the tools left out, even when `include` names them. */
  readonly exclude?: readonly string[];
}

/** Whether a tool, by the server's own name for it, is exposed. */
export type ToolSelection = (name: string) => boolean;

const SELECTION_KEYS: readonly string[] = ['include', 'exclude'];

/** Selects every tool: what no selection means. */
const ALL: ToolSelection = () => true;

/**
 * Compiles a {@link ToolSelectionDefinition} (a JSON-parsed object is fine) into a test of tool names. Absent:
 * every tool is selected.
 *
 * @param path Where the definition is configured, for error messages, e.g. `servers.py.tools`.
 * @throws ConfigurationError naming the exact path at fault (e.g. `servers.py.tools.include[2]`) when the
 *   definition is not an object, has a key other than `include` and `exclude`, or a list that is not an array
 *   of non-empty strings.
 * @example
 * const selected = compileToolSelection({ include: ['notes_*'], exclude: ['notes_delete*'] }, 'servers.notes.tools');
 * selected('notes_add'); // true
 * selected('notes_delete_all'); // false
 * selected('search'); // false
 */
export function compileToolSelection(definition: ToolSelectionDefinition | undefined, path: string): ToolSelection {
  if (definition === undefined) return ALL;
  if (typeof definition !== 'object' || definition === null || Array.isArray(definition)) {
    throw new ConfigurationError(path, `expected an object with "include" and/or "exclude", got ${describeValue(definition)}`);
  }
  for (const key of Object.keys(definition)) {
    if (!SELECTION_KEYS.includes(key)) {
      throw new ConfigurationError(path, `unknown key ${JSON.stringify(key)}; expected only include, exclude`);
    }
  }
  const include = compilePatterns(definition.include, `${path}.include`);
  const exclude = compilePatterns(definition.exclude, `${path}.exclude`);
  if (include === undefined && exclude === undefined) return ALL;
  return (name) => (include === undefined || include.test(name)) && (exclude === undefined || !exclude.test(name));
}

/** One expression matching a whole name against any of `patterns`; undefined when the list is absent. */
function compilePatterns(patterns: unknown, path: string): RegExp | undefined {
  if (patterns === undefined) return undefined;
  if (!Array.isArray(patterns)) throw new ConfigurationError(path, `expected an array of name patterns, got ${describeValue(patterns)}`);
  const sources = patterns.map((pattern: unknown, i: number) => {
    if (typeof pattern !== 'string' || pattern === '') {
      throw new ConfigurationError(`${path}[${i}]`, `expected a non-empty tool name pattern (\`*\` matches any run of characters), got ${describeValue(pattern)}`);
    }
    return pattern.split('*').map(escapeRegExp).join('[^]*');
  });
  // No pattern matches nothing: an empty include selects no tool, an empty exclude leaves every tool in.
  return new RegExp(sources.length === 0 ? '^(?!)' : `^(?:${sources.join('|')})$`);
}

/** A pattern of a tool selection that matches no tool the server lists: most likely a typo. */
export interface UnmatchedToolPattern {
  /** Where it is, e.g. `servers.py.tools.exclude[0]`. */
  readonly path: string;
  readonly pattern: string;
  /** The listed tool name closest to it, when one is close. */
  readonly closest?: string;
}

/**
 * The patterns of a (valid) selection that match none of `names`: an `exclude` pattern with a typo leaves the tool
 * it meant exposed, so the gateway reports these at start-up, as it reports policy rules that match nothing.
 *
 * @example
 * unmatchedToolPatterns({ exclude: ['get_env'] }, ['get-env', 'echo'], 'servers.x.tools');
 * // [{ path: 'servers.x.tools.exclude[0]', pattern: 'get_env', closest: 'get-env' }]
 */
export function unmatchedToolPatterns(definition: ToolSelectionDefinition | undefined, names: readonly string[], path: string): UnmatchedToolPattern[] {
  const unmatched: UnmatchedToolPattern[] = [];
  for (const list of ['include', 'exclude'] as const) {
    definition?.[list]?.forEach((pattern, index) => {
      const matches = compileToolSelection({ include: [pattern] }, path);
      if (names.some(matches)) return;
      const closest = pattern.includes('*') ? undefined : closestName(pattern, names);
      unmatched.push({ path: `${path}.${list}[${index}]`, pattern, ...(closest !== undefined ? { closest } : {}) });
    });
  }
  return unmatched;
}
