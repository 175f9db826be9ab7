/**
 * Policy conditions: the `when` of a rule, a CEL expression over the caller's verified claims, granted scopes and
 * the MCP request, compiled once (parsed, checked, planned) and evaluated with a cost limit, failing closed. CEL is
 * `@bufbuild/cel`, which is tested against the CEL conformance suite; nothing here interprets CEL itself.
 */
import { createRequire } from 'node:module';
import type { CelInput, CelList, CelMap, CelResult } from '@bufbuild/cel';
import type { AuthInfo } from '../kernel/auth-info.js';
import { estimateStringBytes } from '../kernel/identity-size.js';
import { asRecord } from '../wire/as-record.js';
import { analyzeCondition, type ConditionAnalysis, type ConditionFunctions } from './condition-analysis.js';

/** Longest condition source, in characters. */
export const MAX_CONDITION_LENGTH = 4096;
/** Most nodes a condition's (macro-expanded) syntax tree may have. */
export const MAX_CONDITION_NODES = 1000;
/** How deeply a condition's comprehensions (`all`, `exists`, `map`, `filter`…) may nest. */
export const MAX_CONDITION_DEPTH = 2;
/**
 * The evaluation cost limit of a condition with comprehensions: its nodes × (1 + the elements of what it may
 * iterate: claims, granted scopes and, when read, arguments) to the power of its comprehension depth × (1 + the
 * characters of the strings in them / {@link CONDITION_COST_STRING_UNIT}), since a string function (`contains`,
 * `matches`…) inside a comprehension runs once per element over a whole string. Over it, the condition is not
 * evaluated and the request is denied.
 */
export const MAX_CONDITION_COST = 100_000;
/** The characters of claim, scope and argument strings that weigh as one more unit of work per element visited. */
export const CONDITION_COST_STRING_UNIT = 1024;

/** The request a condition is evaluated for (the `mcp` and `server` variables). */
export interface ConditionRequest {
  /** The JSON-RPC method deciding the rule (for list items, the method that uses the item, e.g. `tools/call`). */
  readonly method: string;
  /** Tool or prompt name; `""` when none. */
  readonly name: string;
  /** Resource URI; `""` when none. */
  readonly uri: string;
  /** `tools/call` arguments; absent at list time. */
  readonly arguments?: unknown;
  /** The values the resource template of the rule captured from `uri`, made only when the condition reads them. */
  readonly params?: () => Readonly<Record<string, string>>;
  /** The server the request goes to, when several are served; `""` otherwise. A function is asked only if read. */
  readonly server: string | (() => string);
}

/**
 * What deciding a condition for a listed item needs (see {@link CompiledCondition.listTimeNeed}):
 * - `caller`: the caller alone (claims, scopes): one outcome per token, for every item and every list;
 * - `request`: the item too (`mcp.name`, `mcp.uri`, `server`…): decided per item at list time;
 * - `call`: what only the call brings (its arguments; for a resource template, the URI read and what it captures):
 *   the item stays listed and the call decides.
 */
export type ConditionNeed = 'caller' | 'request' | 'call';

/** A condition compiled once; see {@link compileCondition}. */
export interface CompiledCondition {
  /** The CEL source, as written. */
  readonly source: string;
  /** Whether it reads `mcp.arguments`, so can be decided only at call time (a listed item stays listed). */
  readonly readsArguments: boolean;
  /** Whether it reads `mcp.params` (the values a resource template captured). */
  readonly readsParams: boolean;
  /** Whether it reads `mcp.uri` (for a listed resource template, the template text, not a URI). */
  readonly readsUri: boolean;
  /** Whether it reads `mcp` or `server` at all; if not, its outcome is the same for every request of one caller. */
  readonly readsRequest: boolean;
  /**
   * Whether what it reads of the request is at most `mcp.method`, `mcp.name` and `server`: its outcome is then the
   * same for one caller and one listed item.
   */
  readonly readsNamesOnly: boolean;
  /**
   * What deciding it for a listed item needs; `template` when the item is a resource template (whose URI and
   * captured values are known only when a URI is read). The one place lists ask what a condition depends on.
   */
  listTimeNeed(template: boolean): ConditionNeed;
  /** `true`, `false`, or why it could not be decided (an evaluation error, a non-boolean result, the cost limit). */
  evaluate(auth: AuthInfo, request: ConditionRequest): boolean | ConditionFailure;
}

/**
 * Why a condition could not be decided, as a fixed category: CEL's own messages can quote claim and argument values
 * (`Cannot convert <value> to a BigInt`), so none of their text is kept.
 */
export type ConditionFailureCategory = 'no such key' | 'type mismatch' | 'cost limit' | 'not a boolean' | 'evaluation error';

/** A condition that could not be decided: the request is denied (fail closed). */
export class ConditionFailure {
  /** What went wrong, for logs and decisions: its category and fixed text, never a claim or argument value. */
  readonly message: string;
  constructor(
    /** The category of the failure. */
    readonly category: ConditionFailureCategory,
    detail?: string,
  ) {
    this.message = category === 'cost limit' ? `over the cost limit${detail ?? ''}` : category === 'not a boolean' ? 'the result is not a boolean' : `evaluation failed: ${category}`;
  }
}

/** What the policy's `onRuleError` hook is given for a condition that could not be decided. */
export class ConditionEvaluationError extends Error {
  /** The category of the failure. */
  readonly category: ConditionFailureCategory;
  /**
   * @param rule - The rule, as decisions name it (`tools.payments__pay`, `servers.vault.tools.open`): the name a
   *   refusal's `data.rule`, the decision hook and the audit record give it, so that the warning can be found by it.
   */
  constructor(
    failure: ConditionFailure,
    readonly rule?: string,
  ) {
    super(`condition ${failure.message}`);
    this.category = failure.category;
  }
}

/**
 * A condition that does not compile. `problem` says what is wrong, as words that follow "the condition"; `at` says
 * where (`line 1, column 9`), when a place can be named. The message puts the place first: `line 1, column 9: uses …`.
 */
export class ConditionSyntaxError extends Error {
  constructor(
    readonly problem: string,
    readonly at?: string,
  ) {
    super(at === undefined ? problem : `${at}: ${problem}`);
  }
}

/** CEL and what is built from it once: its environment, the functions of that environment, the empty values. */
interface CelRuntime {
  readonly cel: typeof import('@bufbuild/cel');
  readonly env: ReturnType<typeof import('@bufbuild/cel').celEnv>;
  /** The functions of `env`, by name: whether some overload may give a boolean (or a value of any type). */
  readonly functions: ConditionFunctions;
  readonly emptyObject: CelMap;
  readonly emptyList: CelList;
}

let runtime: CelRuntime | undefined;

/**
 * CEL, loaded synchronously on first use only (a condition compiled): its modules are the largest part of the
 * library's, and a guard, a gateway or a command whose policy has no condition never needs them.
 */
function celRuntime(): CelRuntime {
  if (runtime !== undefined) return runtime;
  const cel = createRequire(import.meta.url)('@bufbuild/cel') as typeof import('@bufbuild/cel');
  const env = cel.celEnv();
  const functions = new Map<string, boolean>();
  for (const func of env.funcs) {
    const result = (func.result as { name?: unknown }).name;
    functions.set(func.name, functions.get(func.name) === true || result === 'bool' || result === 'dyn');
  }
  runtime = { cel, env, functions, emptyObject: cel.celMap(new Map()), emptyList: cel.celList([]) };
  return runtime;
}

/**
 * Parses, checks and plans `source`. Checked at compile time: syntax, size, comprehension depth, every name
 * being a declared variable (`claims`, `scopes`, `mcp`, `server`, or a comprehension's own) and every field of
 * `mcp` existing.
 *
 * @throws ConditionSyntaxError naming the line and column of the first problem, first.
 */
export function compileCondition(source: string): CompiledCondition {
  // Rules often share a condition: one compiled copy each, so that lists evaluate it once per caller.
  const known = compiled.get(source);
  if (known !== undefined) {
    // Most recently used last: what the policies in force keep compiling stays, what old ones used goes first.
    compiled.delete(source);
    compiled.set(source, known);
    return known;
  }
  const condition = compileNew(source);
  const bytes = estimateStringBytes(source) + condition.estimatedBytes;
  for (const [oldest, entry] of compiled) {
    if (compiled.size < MAX_COMPILED_CONDITIONS && compiledBytes + bytes <= MAX_COMPILED_CONDITION_BYTES) break;
    compiled.delete(oldest);
    compiledBytes -= estimateStringBytes(oldest) + entry.estimatedBytes;
  }
  // Never over the bound, even for a condition larger than all of it (none within the limits above is).
  if (compiledBytes + bytes <= MAX_COMPILED_CONDITION_BYTES) {
    compiled.set(source, condition);
    compiledBytes += bytes;
  }
  return condition;
}

/** Most compiled conditions kept for sharing between rules and policies. */
export const MAX_COMPILED_CONDITIONS = 10_000;
/**
 * Most estimated memory of the compiled conditions kept, in bytes: 32 MiB, about 100 conditions at the node and
 * length limits, thousands of usual ones. Past either bound the least recently compiled go first; a policy keeps
 * the conditions it uses whatever the cache holds, so an evicted one costs only another compilation.
 */
export const MAX_COMPILED_CONDITION_BYTES = 32 * 1_048_576;
/**
 * Estimated memory of a compiled condition per node of its syntax tree, in bytes (the parsed tree and the planned
 * program). Measured against `heapUsed` for comparisons, boolean chains, lists, arithmetic and comprehensions:
 * 70 to 280 bytes a node; the estimate stays above them.
 */
export const COMPILED_CONDITION_NODE_BYTES = 320;
/** Estimated memory of a compiled condition besides its nodes and source, in bytes: measured about 3 500. */
export const COMPILED_CONDITION_OVERHEAD_BYTES = 4096;

/** Compiled conditions by source, least recently compiled first; they hold no state, so any policy may share them. */
const compiled = new Map<string, PlannedCondition>();
let compiledBytes = 0;

/**
 * What the cache of compiled conditions holds: entries and estimated bytes (source plus program), for tests and
 * metrics. Never above {@link MAX_COMPILED_CONDITIONS} and {@link MAX_COMPILED_CONDITION_BYTES}.
 */
export function compiledConditionCache(): { readonly size: number; readonly bytes: number } {
  return { size: compiled.size, bytes: compiledBytes };
}

function compileNew(source: string): PlannedCondition {
  if (source.length > MAX_CONDITION_LENGTH) throw new ConditionSyntaxError(`is ${source.length} characters long, over the limit of ${MAX_CONDITION_LENGTH}`);
  if (source.trim() === '') throw new ConditionSyntaxError('is empty; write a CEL expression such as "\'finance\' in claims.groups"');
  const { cel, env, functions } = celRuntime();
  let parsed: ReturnType<typeof cel.parse>;
  try {
    parsed = cel.parse(source);
  } catch (error) {
    const { location, rawMessage } = error as { location?: { start?: { line?: number; column?: number } }; rawMessage?: string };
    const at = location?.start?.line === undefined ? undefined : `line ${location.start.line}, column ${location.start.column}`;
    throw new ConditionSyntaxError(`is not valid CEL: ${rawMessage ?? (error as Error).message}`, at);
  }
  const analysis = analyzeCondition(parsed, functions);
  if (analysis.problem !== undefined) throw new ConditionSyntaxError(analysis.problem.message, lineAndColumn(source, analysis.problem.offset));
  if (analysis.nodes > MAX_CONDITION_NODES) throw new ConditionSyntaxError(`has ${analysis.nodes} nodes, over the limit of ${MAX_CONDITION_NODES}`);
  if (analysis.depth > MAX_CONDITION_DEPTH) throw new ConditionSyntaxError(`nests comprehensions ${analysis.depth} deep, over the limit of ${MAX_CONDITION_DEPTH}`);
  let program: (bindings: Record<string, CelInput>) => CelResult;
  try {
    program = cel.plan(env, parsed) as (bindings: Record<string, CelInput>) => CelResult;
  } catch (error) {
    throw new ConditionSyntaxError(`cannot be planned: ${(error as Error).message}`);
  }
  return new PlannedCondition(source, analysis, program);
}

class PlannedCondition implements CompiledCondition {
  readonly readsArguments: boolean;
  readonly readsParams: boolean;
  readonly readsUri: boolean;
  readonly readsRequest: boolean;
  readonly readsNamesOnly: boolean;
  /** Estimated memory of the parsed and planned program, in bytes, its source excluded. */
  readonly estimatedBytes: number;

  constructor(
    readonly source: string,
    private readonly analysis: ConditionAnalysis,
    private readonly program: (bindings: Record<string, CelInput>) => CelResult,
  ) {
    this.estimatedBytes = COMPILED_CONDITION_OVERHEAD_BYTES + analysis.nodes * COMPILED_CONDITION_NODE_BYTES;
    this.readsArguments = analysis.readsArguments;
    this.readsParams = analysis.readsParams;
    this.readsUri = analysis.readsUri;
    this.readsRequest = analysis.readsRequest;
    this.readsNamesOnly = analysis.readsRequest && !analysis.readsArguments && !analysis.readsParams && !analysis.readsUri;
  }

  listTimeNeed(template: boolean): ConditionNeed {
    if (this.readsArguments || (template && (this.readsParams || this.readsUri))) return 'call';
    return this.readsRequest ? 'request' : 'caller';
  }

  evaluate(auth: AuthInfo, request: ConditionRequest): boolean | ConditionFailure {
    const { nodes, depth } = this.analysis;
    // Only a comprehension can iterate: its cost grows with the size of what it may iterate over.
    if (depth > 0 && !withinCost(nodes, depth, auth, this.readsArguments ? request.arguments : undefined)) {
      return new ConditionFailure('cost limit', ` of ${MAX_CONDITION_COST} for a condition of ${nodes} nodes nested ${depth} deep`);
    }
    let result: CelResult;
    try {
      result = this.program(new ConditionBindings(auth, request, this.analysis) as unknown as Record<string, CelInput>);
    } catch (error) {
      return new ConditionFailure(failureCategory(error));
    }
    if (result === true || result === false) return result;
    return new ConditionFailure(celRuntime().cel.isCelError(result) ? failureCategory(result) : 'not a boolean');
  }
}

/** The variables of one evaluation, each made only when the expression reads it. */
class ConditionBindings {
  constructor(
    private readonly auth: AuthInfo,
    private readonly request: ConditionRequest,
    private readonly reads: Pick<ConditionAnalysis, 'readsArguments' | 'readsParams'>,
  ) {}

  get claims(): CelMap {
    return claimsOf(this.auth);
  }

  get scopes(): CelList {
    return scopesOf(this.auth);
  }

  get server(): string {
    const server = this.request.server;
    return typeof server === 'function' ? server() : server;
  }

  get mcp(): CelMap {
    const { method, name, uri, params } = this.request;
    const fields = new Map<string, CelInput>([
      ['method', method],
      ['name', name],
      ['uri', uri],
    ]);
    // Only what the condition reads (the analysis says so, `mcp` used whole reading all): a list decides each item
    // with a fresh map, and the arguments' check and the template's captures cost more than the rest together.
    if (this.reads.readsArguments) {
      const args = this.request.arguments;
      fields.set('arguments', asRecord(args) === undefined ? celRuntime().emptyObject : (args as CelInput));
    }
    const { cel, emptyObject } = celRuntime();
    if (this.reads.readsParams) fields.set('params', params === undefined ? emptyObject : cel.celMap(new Map(Object.entries(params()))));
    return cel.celMap(fields);
  }
}

// A token's claims and scopes are the same objects for every request the token makes (the verifier caches them):
// converted once, not per evaluation. The claims' map is kept with the client id it was made for, since
// `client_id` may come from `auth.clientId`: a verifier sharing one claims object between clients gets a fresh map.
const claimsCache = new WeakMap<object, { readonly clientId: unknown; readonly map: CelMap }>();
const scopesCache = new WeakMap<readonly string[], CelList>();

function claimsOf(auth: AuthInfo): CelMap {
  const claims = auth.extra?.claims;
  const { cel, emptyObject } = celRuntime();
  if (typeof claims !== 'object' || claims === null) return emptyObject;
  const known = claimsCache.get(claims);
  if (known !== undefined && known.clientId === auth.clientId) return known.map;
  const entries = new Map<string, unknown>(Object.entries(claims));
  // `client_id` is what a policy names the client by, whichever claim carried it (`client_id`, `azp`).
  if (!entries.has('client_id') && typeof auth.clientId === 'string' && auth.clientId !== '') entries.set('client_id', auth.clientId);
  const map = cel.celMap(entries as Map<string, CelInput>);
  claimsCache.set(claims, { clientId: auth.clientId, map });
  return map;
}

function scopesOf(auth: AuthInfo): CelList {
  const scopes = auth.scopes;
  const { cel, emptyList } = celRuntime();
  if (!Array.isArray(scopes)) return emptyList;
  let list = scopesCache.get(scopes);
  if (list === undefined) scopesCache.set(scopes, (list = cel.celList(scopes.filter((s) => typeof s === 'string'))));
  return list;
}

/**
 * Whether a condition of `nodes` nodes nesting comprehensions `depth` deep stays within {@link MAX_CONDITION_COST}
 * over the caller's claims and scopes and the call's `args`. The walk stops as soon as the limit is passed, so an
 * oversized token or body costs no more to refuse than the limit allows.
 */
function withinCost(nodes: number, depth: number, auth: AuthInfo, args: unknown): boolean {
  const perNode = MAX_CONDITION_COST / nodes;
  const size = { elements: 0, characters: 0 };
  const over = (): boolean => Math.pow(1 + size.elements, depth) * (1 + size.characters / CONDITION_COST_STRING_UNIT) > perNode;
  for (const value of [auth.extra?.claims, auth.scopes, args]) {
    measure(value, size, over);
    if (over()) return false;
  }
  return true;
}

/** Adds the array elements, object members and string characters of `value` to `size`, until `over()`. */
function measure(value: unknown, size: { elements: number; characters: number }, over: () => boolean): void {
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const next = stack.pop();
    if (typeof next === 'string') {
      size.characters += next.length;
      continue;
    }
    if (typeof next !== 'object' || next === null) continue;
    const children = Array.isArray(next) ? next : Object.values(next);
    size.elements += children.length;
    if (over()) return;
    for (const child of children) if ((typeof child === 'object' && child !== null) || typeof child === 'string') stack.push(child);
  }
}

/** The category of a CEL evaluation error, read from its message, which is then dropped (it may quote values). */
function failureCategory(error: unknown): ConditionFailureCategory {
  const message = String((error as { message?: unknown } | null)?.message ?? '');
  if (/no such key|not found|out of bounds/i.test(message)) return 'no such key';
  if (/overload|convert|type|bigint/i.test(message)) return 'type mismatch';
  return 'evaluation error';
}

/** `line L, column C` (both from 1) of `offset` in `source`. */
function lineAndColumn(source: string, offset: number): string {
  const before = source.slice(0, offset);
  const line = before.split('\n').length;
  return `line ${line}, column ${offset - before.lastIndexOf('\n')}`;
}
