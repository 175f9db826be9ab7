/**
 * What a parsed policy condition (a CEL expression) reads and how costly it can be, found by walking its syntax
 * tree once at compile time: the names it uses that no variable declares, the fields of `mcp` it reads (so that a
 * condition on `mcp.arguments` is known to need the call, whatever its spelling), its size and how deeply its
 * comprehensions (`all`, `exists`, `map`, `filter`…) nest.
 */
import type { parse } from '@bufbuild/cel';

/** A parsed CEL expression, as `parse` from `@bufbuild/cel` returns it. */
export type ParsedCondition = ReturnType<typeof parse>;
type Expr = ParsedCondition['expr'];

/** The variables a condition may use. */
export const CONDITION_VARIABLES: ReadonlySet<string> = new Set(['claims', 'scopes', 'mcp', 'server']);
/** The fields of `mcp`. */
export const MCP_FIELDS: ReadonlySet<string> = new Set(['method', 'name', 'arguments', 'uri', 'params']);
// CEL type names are identifiers too (`type(x) == string`).
const TYPE_NAMES: ReadonlySet<string> = new Set(['bool', 'int', 'uint', 'double', 'string', 'bytes', 'list', 'map', 'null_type', 'type', 'dyn']);

/** What {@link analyzeCondition} found. */
export interface ConditionAnalysis {
  /** Number of nodes of the expanded syntax tree. */
  readonly nodes: number;
  /** How deeply comprehensions nest (0: none). */
  readonly depth: number;
  /** Whether the value of `mcp.arguments` can reach the result (also when `mcp` is used whole). */
  readonly readsArguments: boolean;
  /** Whether `mcp.params` can reach the result (also when `mcp` is used whole). */
  readonly readsParams: boolean;
  /** Whether `mcp.uri` can reach the result (also when `mcp` is used whole): for a resource template, the template. */
  readonly readsUri: boolean;
  /** Whether it reads `mcp` or `server` at all: if not, its outcome depends on the caller alone. */
  readonly readsRequest: boolean;
  /** The first name no variable declares, or field `mcp` lacks, with the offset of its use. */
  readonly problem?: { readonly message: string; readonly offset: number };
}

/**
 * The functions a condition may call, by name (operators by their CEL names, `_+_`, `@in`…): whether some overload
 * of each may give a boolean. The operators the evaluator handles itself (`&&`, `||`, `?:`, indexing) are known
 * without being listed.
 */
export type ConditionFunctions = ReadonlyMap<string, boolean>;

/** Operators the evaluator decides itself, and whether they give a boolean (`undefined`: it depends). */
const BUILT_IN_OPERATORS: ReadonlyMap<string, boolean | undefined> = new Map<string, boolean | undefined>([
  ['_&&_', true],
  ['_||_', true],
  ['@not_strictly_false', true],
  ['__not_strictly_false__', true],
  ['_?_:_', undefined],
  ['_[_]', undefined],
  ['_[?_]', undefined],
  ['_?._', undefined],
]);

/**
 * Walks `parsed` once; see {@link ConditionAnalysis}. With `functions`, a call of a function CEL does not know, and
 * an expression that can never be a boolean (`1 + 2`, a list), are problems too: found when the policy loads rather
 * than denying every request later.
 */
export function analyzeCondition(parsed: ParsedCondition, functions?: ConditionFunctions): ConditionAnalysis {
  const walk = new ConditionWalk(parsed.sourceInfo?.positions ?? {}, functions);
  walk.visit(parsed.expr, new Set(), 0);
  if (functions !== undefined && walk.problem === undefined) {
    // The whole condition is reported from its first character: the parser places an operator's node at the operator.
    if (neverBoolean(parsed.expr, functions)) walk.problem = { message: 'is not a boolean and can never be one (its value is a number, a string, a list or a map); a condition must evaluate to true or false', offset: 0 };
    const operand = nonBooleanOperand(parsed.expr, functions);
    if (operand !== undefined) walk.report('combines with &&, || or ! a part that can never be a boolean (a number, a string, a list or a map)', operand);
  }
  return {
    nodes: walk.nodes,
    depth: walk.depth,
    readsArguments: walk.readsArguments,
    readsParams: walk.readsParams,
    readsUri: walk.readsUri,
    readsRequest: walk.readsRequest,
    ...(walk.problem === undefined ? {} : { problem: walk.problem }),
  };
}

class ConditionWalk {
  nodes = 0;
  depth = 0;
  readsArguments = false;
  readsParams = false;
  readsUri = false;
  readsRequest = false;
  problem: { message: string; offset: number } | undefined;

  constructor(
    private readonly positions: Readonly<Record<string, number>>,
    private readonly functions: ConditionFunctions | undefined,
  ) {}

  visit(expr: Expr | undefined, bound: ReadonlySet<string>, depth: number): void {
    if (expr === undefined) return;
    this.nodes++;
    const kind = expr.exprKind;
    switch (kind.case) {
      case 'identExpr':
        this.ident(kind.value.name, expr, bound);
        return;
      case 'selectExpr': {
        const operand = kind.value.operand;
        if (operand?.exprKind.case === 'identExpr' && operand.exprKind.value.name === 'mcp' && !bound.has('mcp')) {
          this.nodes++;
          this.readsRequest = true;
          this.mcpField(kind.value.field, expr);
          return;
        }
        this.visit(operand, bound, depth);
        return;
      }
      case 'callExpr':
        this.call(kind.value, expr, bound, depth);
        return;
      case 'listExpr':
        for (const element of kind.value.elements) this.visit(element, bound, depth);
        return;
      case 'structExpr':
        for (const entry of kind.value.entries) {
          if (entry.keyKind.case === 'mapKey') this.visit(entry.keyKind.value, bound, depth);
          this.visit(entry.value, bound, depth);
        }
        return;
      case 'comprehensionExpr': {
        const c = kind.value;
        this.depth = Math.max(this.depth, depth + 1);
        this.visit(c.iterRange, bound, depth);
        this.visit(c.accuInit, bound, depth);
        const inner = new Set(bound).add(c.iterVar).add(c.accuVar);
        if (c.iterVar2 !== '') inner.add(c.iterVar2);
        this.visit(c.loopCondition, inner, depth + 1);
        this.visit(c.loopStep, inner, depth + 1);
        this.visit(c.result, new Set(bound).add(c.accuVar), depth);
        return;
      }
      default:
        return;
    }
  }

  private call(call: Extract<Expr['exprKind'], { case: 'callExpr' }>['value'], expr: Expr, bound: ReadonlySet<string>, depth: number): void {
    // `mcp["arguments"]`: the index operator with a constant key reads that one field.
    const [operand, key] = call.args;
    if (call.function === '_[_]' && operand?.exprKind.case === 'identExpr' && operand.exprKind.value.name === 'mcp' && !bound.has('mcp') && key?.exprKind.case === 'constExpr' && key.exprKind.value.constantKind.case === 'stringValue') {
      this.nodes += 2;
      this.readsRequest = true;
      this.mcpField(key.exprKind.value.constantKind.value, expr);
      return;
    }
    if (this.functions !== undefined && !this.functions.has(call.function) && !BUILT_IN_OPERATORS.has(call.function)) {
      this.report(`calls ${call.function}(), which is no function of CEL's standard library (size, contains, startsWith, endsWith, matches, int, string, timestamp…)`, expr);
    }
    this.visit(call.target, bound, depth);
    for (const arg of call.args) this.visit(arg, bound, depth);
  }

  private ident(name: string, expr: Expr, bound: ReadonlySet<string>): void {
    if (bound.has(name)) return;
    if (name === 'mcp') {
      // `mcp` used whole (passed on, iterated, compared): any of its fields may matter.
      this.readsArguments = true;
      this.readsParams = true;
      this.readsUri = true;
      this.readsRequest = true;
      return;
    }
    if (name === 'server') this.readsRequest = true;
    if (CONDITION_VARIABLES.has(name) || TYPE_NAMES.has(name)) return;
    this.report(`uses '${name}', which is no variable (the variables are ${[...CONDITION_VARIABLES].join(', ')})`, expr);
  }

  private mcpField(field: string, expr: Expr): void {
    if (field === 'arguments') this.readsArguments = true;
    else if (field === 'params') this.readsParams = true;
    else if (field === 'uri') this.readsUri = true;
    else if (!MCP_FIELDS.has(field)) this.report(`reads mcp.${field}, a field mcp lacks (its fields are ${[...MCP_FIELDS].join(', ')})`, expr);
  }

  report(message: string, expr: Expr): void {
    this.problem ??= { message, offset: this.positions[String(expr.id)] ?? 0 };
  }
}

/** The variables and `mcp` fields that are never booleans: lists, strings and maps. */
const NON_BOOLEAN_VARIABLES: ReadonlySet<string> = new Set(['scopes', 'server', 'mcp']);
const NON_BOOLEAN_MCP_FIELDS: ReadonlySet<string> = new Set(['method', 'name', 'uri', 'arguments', 'params']);

/**
 * Whether `expr` is sure never to give a boolean: a literal other than a boolean, a list or map (also one a `map` or
 * `filter` makes), a variable or `mcp` field that is a list, string or map, or a call no overload of which gives
 * one. `bound` holds the names a comprehension binds, which may shadow the variables.
 */
function neverBoolean(expr: Expr | undefined, functions: ConditionFunctions, bound: ReadonlySet<string> = new Set()): boolean {
  const kind = expr?.exprKind;
  if (kind === undefined) return false;
  switch (kind.case) {
    case 'listExpr':
      return true;
    case 'structExpr':
      return kind.value.messageName === '';
    case 'constExpr':
      return kind.value.constantKind.case !== 'boolValue';
    case 'identExpr':
      return !bound.has(kind.value.name) && NON_BOOLEAN_VARIABLES.has(kind.value.name);
    case 'selectExpr': {
      // `has(mcp.name)` is a boolean; `mcp.name` is not.
      const operand = kind.value.operand?.exprKind;
      return !kind.value.testOnly && operand?.case === 'identExpr' && operand.value.name === 'mcp' && !bound.has('mcp') && NON_BOOLEAN_MCP_FIELDS.has(kind.value.field);
    }
    case 'comprehensionExpr': {
      // `map` and `filter` give their accumulator, a list; `all` and `exists` a boolean.
      const c = kind.value;
      return c.result?.exprKind.case === 'identExpr' && c.result.exprKind.value.name === c.accuVar && c.accuInit?.exprKind.case === 'listExpr';
    }
    case 'callExpr':
      return neverBooleanCall(kind.value, functions, bound);
    default:
      return false;
  }
}

function neverBooleanCall(call: Extract<Expr['exprKind'], { case: 'callExpr' }>['value'], functions: ConditionFunctions, bound: ReadonlySet<string>): boolean {
  const name = call.function;
  // A choice is never a boolean when neither branch is.
  if (name === '_?_:_') return neverBoolean(call.args[1], functions, bound) && neverBoolean(call.args[2], functions, bound);
  if (BUILT_IN_OPERATORS.has(name)) return false;
  return functions.get(name) === false;
}

/**
 * The first operand of `&&`, `||` or `!` in `expr` that can never be a boolean (CEL refuses it at run time, or only
 * a short-circuit hides it), looked for through those operators only.
 */
function nonBooleanOperand(expr: Expr | undefined, functions: ConditionFunctions): Expr | undefined {
  const kind = expr?.exprKind;
  if (kind?.case !== 'callExpr' || !['_&&_', '_||_', '!_'].includes(kind.value.function)) return undefined;
  for (const arg of kind.value.args) {
    if (neverBoolean(arg, functions)) return arg;
    const inner = nonBooleanOperand(arg, functions);
    if (inner !== undefined) return inner;
  }
  return undefined;
}
