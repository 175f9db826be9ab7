// Media types and event-stream frames each have one owner: `src/http/media-type.ts` names the media types the
// gateway writes, and `src/core/wire/event-stream-frame.ts` writes every event-stream frame. A literal elsewhere is a
// second copy that can drift (a missing `charset`, a frame without its blank line).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import ts from 'typescript';
import { fromSrc, SRC, sourceFiles } from './source-files.js';

/** Each kind of literal, how it is recognised in a string's text, and the one file that may write it. */
const OWNED: readonly { kind: string; pattern: RegExp; owner: string }[] = [
  { kind: 'media type', pattern: /\b(application\/json|text\/event-stream|text\/plain)\b/i, owner: 'http/media-type.ts' },
  { kind: 'event-stream frame', pattern: /(^|\n)(event|data|id): ?[^\n]*\n/, owner: 'core/wire/event-stream-frame.ts' },
];

/** The text of every string literal and template part in `text`'s code (comments are not code), with its line. */
function stringsIn(file: string, text: string): { line: number; text: string }[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const found: { line: number; text: string }[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node) || ts.isTemplateHead(node) || ts.isTemplateMiddle(node) || ts.isTemplateTail(node)) {
      found.push({ line: source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1, text: node.text });
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

/** Literals of an owned kind written outside their owner, as `file:line kind`. */
function strays(path: string, text: string): string[] {
  const problems: string[] = [];
  for (const literal of stringsIn(path, text)) {
    for (const { kind, pattern, owner } of OWNED) {
      // Import specifiers and the like never match these patterns; a JSDoc `@example` is a comment, not code.
      if (path !== owner && pattern.test(literal.text)) problems.push(`src/${path}:${literal.line} ${kind} (use ${owner})`);
    }
  }
  return problems;
}

test('media types and event-stream frames are written only by their owners', () => {
  const problems: string[] = [];
  for (const file of sourceFiles(SRC)) {
    const path = fromSrc(file);
    problems.push(...strays(path, readFileSync(file, 'utf8')));
  }
  assert.deepEqual(problems, []);
});

test('the detector sees a literal media type or frame, and not one in a comment', () => {
  const probe = [
    "// writes 'application/json'",
    "const a = { 'Content-Type': 'application/json; charset=utf-8' };",
    'const b = `event: message\\ndata: ${json}\\n\\n`;',
    "const c = 'text/event-stream';",
    "const d = 'data: plain text';",
  ].join('\n');
  assert.deepEqual(strays('probe.ts', probe), ['src/probe.ts:2 media type (use http/media-type.ts)', 'src/probe.ts:3 event-stream frame (use core/wire/event-stream-frame.ts)', 'src/probe.ts:4 media type (use http/media-type.ts)']);
});
