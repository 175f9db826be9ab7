// No module of src/ reaches itself through its imports, type-only ones included: a circle means two files share
// one concept, or a type sits in the wrong one of them, and it hides which of the two is the lower layer.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { test } from 'node:test';
import ts from 'typescript';
import { fromSrc, SRC, sourceFiles } from './source-files.js';

/** The relative modules `file` imports or re-exports, as absolute `.ts` paths. */
function importsOf(file: string, text: string): string[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, false);
  const found: string[] = [];
  for (const statement of source.statements) {
    const specifier = (ts.isImportDeclaration(statement) || ts.isExportDeclaration(statement)) ? statement.moduleSpecifier : undefined;
    if (specifier && ts.isStringLiteral(specifier) && specifier.text.startsWith('.')) {
      found.push(resolve(dirname(file), specifier.text.replace(/\.js$/, '.ts')));
    }
  }
  return found;
}

/** Every circle of the import graph (its strongly connected parts of more than one module, or a module importing itself). */
function circles(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  // Tarjan's algorithm (recursive: import chains are short).
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (node: string): void => {
    index.set(node, next);
    low.set(node, next);
    next += 1;
    stack.push(node);
    onStack.add(node);
    for (const target of graph.get(node) ?? []) {
      if (!graph.has(target)) continue;
      if (!index.has(target)) {
        visit(target);
        low.set(node, Math.min(low.get(node)!, low.get(target)!));
      } else if (onStack.has(target)) low.set(node, Math.min(low.get(node)!, index.get(target)!));
    }
    if (low.get(node) !== index.get(node)) return;
    const part: string[] = [];
    let member: string;
    do {
      member = stack.pop()!;
      onStack.delete(member);
      part.push(member);
    } while (member !== node);
    if (part.length > 1 || (graph.get(node) ?? []).includes(node)) found.push(part.sort());
  };
  for (const node of graph.keys()) if (!index.has(node)) visit(node);
  return found;
}

test('no module of src/ imports itself back, even through types', () => {
  const graph = new Map(sourceFiles(SRC).map((file) => [file, importsOf(file, readFileSync(file, 'utf8'))] as const));
  const named = circles(graph).map((part) => `circle: ${part.map((file) => fromSrc(file)).join(', ')}`);
  assert.deepEqual(named, [], 'move the shared type or constant into a module both can import');
});

test('the detector finds a circle through three modules, and none in a chain', () => {
  const ring = new Map([['a', ['b']], ['b', ['c']], ['c', ['a']], ['d', ['a']]]);
  assert.deepEqual(circles(ring), [['a', 'b', 'c']]);
  assert.deepEqual(circles(new Map([['a', ['b']], ['b', ['c']], ['c', []]])), []);
});
