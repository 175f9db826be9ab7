// No function in src/ or examples/ runs over MAX_LINES lines: a longer one is a closure sharing too many variables,
// and reads better as named parts (a small type, a factory returning named methods). The examples are read and
// copied by users, and every test's authorization server is one of them. The exceptions are named below, each
// with why; one that is split comes off the list, and the list may not name a function that is short already.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { test } from 'node:test';
import ts from 'typescript';
import { fromSrc, SRC, sourceFiles } from './source-files.js';

/** The examples, checked as src/ is. */
const EXAMPLES = join(SRC, '..', 'examples');

/** Most lines a function, method or arrow function may span, its signature and closing brace included. */
const MAX_LINES = 120;

/**
 * The functions still over {@link MAX_LINES}, by `file: name` (from src/, or `examples/…`), and why each is. None
 * today: add one only with a reason.
 */
const LONG_FUNCTIONS: Readonly<Record<string, string>> = {};

/** A function's name as a reader finds it: its own, or that of the variable, property or method it is assigned to. */
function nameOf(node: ts.FunctionLikeDeclaration): string {
  if (node.name !== undefined) return node.name.getText();
  const parent = node.parent;
  if ((ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent) || ts.isPropertyDeclaration(parent)) && parent.name !== undefined) {
    return parent.name.getText();
  }
  if (ts.isBinaryExpression(parent) && parent.operatorToken.kind === ts.SyntaxKind.EqualsToken) return parent.left.getText();
  // An unnamed one (a callback, a promise executor) is named by the function it is written in.
  for (let outer: ts.Node | undefined = parent; outer !== undefined; outer = outer.parent) {
    if (ts.isFunctionLike(outer) && 'body' in outer) return `(anonymous) in ${nameOf(outer as ts.FunctionLikeDeclaration)}`;
  }
  return '(anonymous)';
}

/** Every file checked: its path as ids name it (from src/, or `examples/…`), and from the repository's root. */
function checkedFiles(): { file: string; path: string; fromRoot: string }[] {
  const fromSrcDir = sourceFiles(SRC).map((file) => ({ file, path: fromSrc(file), fromRoot: `src/${fromSrc(file)}` }));
  const fromExamples = sourceFiles(EXAMPLES).map((file) => {
    const path = `examples/${relative(EXAMPLES, file).split(/[\\/]/).join('/')}`;
    return { file, path, fromRoot: path };
  });
  return [...fromSrcDir, ...fromExamples];
}

/** Every function, method, accessor, constructor and arrow function of `src/` and `examples/` with its length in lines. */
function functionLengths(): { id: string; lines: number; at: string }[] {
  const found: { id: string; lines: number; at: string }[] = [];
  for (const { file, path, fromRoot } of checkedFiles()) {
    const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
    const visit = (node: ts.Node): void => {
      if (ts.isFunctionLike(node) && 'body' in node && node.body !== undefined) {
        const fn = node as ts.FunctionLikeDeclaration;
        const first = source.getLineAndCharacterOfPosition(fn.getStart(source)).line;
        const last = source.getLineAndCharacterOfPosition(fn.getEnd()).line;
        found.push({ id: `${path}: ${nameOf(fn)}`, lines: last - first + 1, at: `${fromRoot}:${first + 1}` });
      }
      ts.forEachChild(node, visit);
    };
    visit(source);
  }
  return found;
}

test(`no function in src/ or examples/ is over ${MAX_LINES} lines, but those named with a reason`, () => {
  const long = functionLengths().filter((fn) => fn.lines > MAX_LINES);
  const unlisted = long.filter((fn) => !(fn.id in LONG_FUNCTIONS)).map((fn) => `${fn.id} (${fn.lines} lines, ${fn.at})`);
  assert.deepEqual(unlisted, [], `split these into named parts (or, if one must stay, name it in LONG_FUNCTIONS with why)`);
});

test('the list of long functions names only functions still over the limit', () => {
  const long = new Set(functionLengths().filter((fn) => fn.lines > MAX_LINES).map((fn) => fn.id));
  const stale = Object.keys(LONG_FUNCTIONS).filter((id) => !long.has(id));
  assert.deepEqual(stale, [], 'these are short now (or gone): take them off LONG_FUNCTIONS');
  for (const [id, reason] of Object.entries(LONG_FUNCTIONS)) assert.ok(reason.trim().length > 0, `${id} needs a reason`);
});
