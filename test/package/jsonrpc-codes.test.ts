// JSON-RPC error codes have one table, JsonRpcErrorCode in src/core/wire/jsonrpc.ts: a code written as a number
// anywhere else in src/ is a second copy of it, which can drift (-32001 was once defined twice). Comments may name
// codes; code may not. The guard's own codes (-31xxx) and the reserved range (-32xxx) are both covered.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import ts from 'typescript';
import { JSON_RPC_RESERVED_CODES, JsonRpcErrorCode } from '../../src/core/wire/jsonrpc.js';
import { fromSrc, SRC, sourceFiles } from './source-files.js';

/** The table itself. */
const TABLE = 'core/wire/jsonrpc.ts';

/** `-31ddd` and `-32ddd` written as numbers in `file`'s code (comments and strings are not code), as `line: text`. */
function rawCodes(file: string, text = readFileSync(file, 'utf8')): string[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const found: string[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isPrefixUnaryExpression(node) && node.operator === ts.SyntaxKind.MinusToken && ts.isNumericLiteral(node.operand)) {
      const value = Number(node.operand.text);
      if (value >= 31_000 && value <= 32_999) {
        const line = source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1;
        found.push(`${line}: -${node.operand.text}`);
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

test('src/ writes no JSON-RPC error code as a number outside JsonRpcErrorCode', () => {
  const problems: string[] = [];
  for (const file of sourceFiles(SRC)) {
    const path = fromSrc(file);
    if (path === TABLE) continue;
    for (const hit of rawCodes(file)) problems.push(`src/${path}:${hit} (use JsonRpcErrorCode)`);
  }
  assert.deepEqual(problems, []);
});

test('the detector sees a code written as a number, and not one in a comment or a string', () => {
  const probe = [
    '// -32600 in a comment',
    "const message = 'code -32601';",
    'const code = -32602;',
    'f(x, -31401);',
    'const fine = -33000 + 32600;',
  ].join('\n');
  assert.deepEqual(rawCodes('probe.ts', probe), ['3: -32602', '4: -31401']);
});

test('the table has one name per code, each an integer', () => {
  const codes = Object.values(JsonRpcErrorCode);
  assert.equal(new Set(codes).size, codes.length);
  for (const code of codes) assert.ok(Number.isInteger(code), String(code));
});

test("the guard's own codes sit outside the range JSON-RPC reserves", () => {
  const { min, max } = JSON_RPC_RESERVED_CODES.reserved;
  for (const code of [JsonRpcErrorCode.Unauthorized, JsonRpcErrorCode.Forbidden, JsonRpcErrorCode.RateLimited, JsonRpcErrorCode.Unavailable]) {
    assert.ok(code < min || code > max, String(code));
  }
});
