import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { jsonRpcErrorCodeIn } from '../../../src/core/audit/audit-record.js';
import { mayHaveTopLevelError } from '../../../src/core/audit/error-member.js';

/** What a full parse of every answer gives: the code of its top-level `error` member, however its key is written. */
function parsedCode(text: string): number | undefined {
  const codeOf = (json: string): number | undefined => {
    try {
      const code = (JSON.parse(json) as { error?: { code?: unknown } } | null)?.error?.code;
      return typeof code === 'number' && Number.isInteger(code) ? code : undefined;
    } catch {
      return undefined;
    }
  };
  const start = text.trimStart();
  if (start.startsWith('{')) return codeOf(start);
  for (const line of text.split('\n')) {
    const code = line.startsWith('data:') ? codeOf(line.slice(5)) : undefined;
    if (code !== undefined) return code;
  }
  return undefined;
}

const TEXTS: readonly string[] = [
  '{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"Method not found"}}',
  '{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"{\\"error\\":\\"not found\\"}"}]}}',
  '{"jsonrpc":"2.0","id":1,"result":{"structuredContent":{"error":{"code":5}}}}',
  '{"jsonrpc":"2.0","id":1,"result":["error",{"error":1}],"error":{"code":11}}',
  '{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":7}}',
  '{"\\u0065rror":{"code":9},"x":"\\"error\\""}',
  '\uFEFF{"jsonrpc":"2.0","id":1,"error":{"code":3}}',
  ' {"error" :\n {"code":-1}}',
  '{"a":"\\\\","error":{"code":4}}',
  '{"a":"x\\\\\\"error\\":1","b":2}',
  '[{"error":{"code":1}}]',
  '{"error":{"code":1},"error":{"code":2}}',
  '{"error":{"code":1.5}}',
  '{"error":{"code":1}',
  'not json "error"',
  'event: message\ndata: {"jsonrpc":"2.0","id":1,"result":{"error":1}}\ndata: {"jsonrpc":"2.0","id":2,"error":{"code":-32602}}\n\n',
  'event: message\nid: {{{\ndata: {"jsonrpc":"2.0","id":2,"error":{"code":-32603}}\n\n',
];

describe('the error code of an answer, read without parsing a success', () => {
  test('the same code as a full parse, for errors, successes naming "error", odd and broken text', () => {
    for (const text of TEXTS) assert.equal(jsonRpcErrorCodeIn(text), parsedCode(text), text);
  });

  test('"error" in a result (its text, a nested member, a string value) is no top-level member', () => {
    assert.equal(mayHaveTopLevelError('{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"\\"error\\": true"}]}}'), false);
    assert.equal(mayHaveTopLevelError('{"jsonrpc":"2.0","id":1,"result":{"structuredContent":{"error":null,"status":"error"}}}'), false);
    assert.equal(mayHaveTopLevelError('{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"Method not found"}}'), true);
    assert.equal(mayHaveTopLevelError('{"jsonrpc":"2.0","result":{"error":1},"error":{"code":1}}'), true, 'a member after the result is found');
    assert.equal(mayHaveTopLevelError('{"e\\u0072ror":{"code":1},"result":{"error":1}}'), true, 'a key written with escapes may be error');
  });

  test('an error whose key is written with escapes still gives its code, in JSON and in an event stream', () => {
    const escaped = '{"jsonrpc":"2.0","id":1,"\\u0065rror":{"code":-32601,"message":"Method not found"}}';
    assert.equal(JSON.parse(escaped).error.code, -32601);
    assert.equal(jsonRpcErrorCodeIn(escaped), -32601);
    assert.equal(jsonRpcErrorCodeIn(`event: message\ndata: ${escaped}\n\n`), -32601);
    assert.equal(jsonRpcErrorCodeIn('{"jsonrpc":"2.0","id":1,"result":{"text":"caf\\u00e9"}}'), undefined, 'an escape in a success is no error');
  });

  test('generated messages: the same code as a full parse', () => {
    let seed = 7;
    // The high bits of a linear congruential generator: its low bits repeat too soon.
    const next = (n: number): number => Math.floor(((seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648) / 2_147_483_648) * n);
    let codes = 0;
    const pick = <T>(items: readonly T[]): T => items[next(items.length)]!;
    const value = (depth: number): unknown => {
      const kind = next(10);
      if (depth > 3 || kind < 3) return pick([1, -2, 'error', '"error"', '{"error":1}', 'a\\"error\\":', null, true, 'x\\', 'é"error"']);
      if (kind < 6) return Array.from({ length: next(3) }, () => value(depth + 1));
      const object: Record<string, unknown> = {};
      for (let i = next(4); i > 0; i--) object[pick(['error', 'result', 'code', 'error '])] = next(2) === 0 ? value(depth + 1) : { code: pick([1, -32_000, 'x', 2.5]) };
      return object;
    };
    for (let i = 0; i < 5_000; i++) {
      let text = JSON.stringify(value(0));
      if (next(5) === 0) text = text.replaceAll('"error"', () => pick(['"error"', '"\\u0065rror"', '"error" ']));
      if (next(10) === 0) text = `event: message\ndata: ${text}\n\n`;
      if (next(20) === 0) text = text.slice(0, next(text.length + 1));
      const code = parsedCode(text);
      if (code !== undefined) codes++;
      assert.equal(jsonRpcErrorCodeIn(text), code, text);
    }
    assert.ok(codes > 100, `errors with a code were generated (${codes})`);
  });
});
