// The audit trail's settings and record parts: options validated at start-up with one message naming every bad
// setting, the environment variables read into options, JSON Pointer redaction, bounded arguments, and the JSON-RPC
// error code read from an answer.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { resolveAuditOptions, DEFAULT_AUDIT_FILES, DEFAULT_AUDIT_MAX_FILE_BYTES } from '../../../src/core/audit/audit-options.js';
import { readAuditSettings } from '../../../src/core/audit/audit-settings.js';
import { parseJsonPointer, redactJsonPointers, REDACTED_MARKER } from '../../../src/core/audit/json-pointer.js';
import { jsonRpcErrorCodeIn, recordedArguments, TRUNCATED_MARKER, usableRequestId } from '../../../src/core/audit/audit-record.js';
import { loadOptionsFromEnv } from '../../../src/core/guard/load-options-from-env.js';
import { problemsOf } from '../../helpers/configuration-problems.js';

const dir = mkdtempSync(join(tmpdir(), 'audit-options-'));
after(() => rmSync(dir, { recursive: true, force: true }));
const BASE = { MCP_AUTH_ISSUER: 'https://as.example.com', MCP_AUTH_RESOURCE: 'https://mcp.example.com/mcp' };

describe('audit settings', () => {
  test('off by default; stdout, otel and an absolute file resolve with the defaults', () => {
    assert.equal(loadOptionsFromEnv(BASE).audit, undefined);
    assert.equal(readAuditSettings({ MCP_AUTH_AUDIT: 'off' }), undefined);
    assert.deepEqual(resolveAuditOptions({ to: 'stdout' })?.destination, { kind: 'stdout' });
    assert.deepEqual(resolveAuditOptions({ to: 'otel' })?.destination, { kind: 'otel' });
    const file = join(dir, 'audit.jsonl');
    const resolved = resolveAuditOptions(readAuditSettings({ MCP_AUTH_AUDIT: file }));
    assert.deepEqual(resolved?.destination, { kind: 'file', path: file });
    assert.equal(resolved?.maxFileBytes, DEFAULT_AUDIT_MAX_FILE_BYTES);
    assert.equal(resolved?.files, DEFAULT_AUDIT_FILES);
    assert.equal(resolved?.arguments, false);
  });

  test('the variables are read: arguments, pointers split on commas only, sizes', () => {
    const options = readAuditSettings({ MCP_AUTH_AUDIT: join(dir, 'a.jsonl'), MCP_AUTH_AUDIT_ARGUMENTS: 'on', MCP_AUTH_AUDIT_REDACT: '/password, /card/number,/a b', MCP_AUTH_AUDIT_MAX_BYTES: '65536', MCP_AUTH_AUDIT_FILES: '3' });
    assert.deepEqual(options, { to: join(dir, 'a.jsonl'), arguments: true, redact: ['/password', '/card/number', '/a b'], maxFileBytes: 65_536, files: 3 });
    assert.deepEqual(resolveAuditOptions(options)?.redact, [['password'], ['card', 'number'], ['a b']]);
  });

  test('MCP_AUTH_AUDIT_ARGUMENTS takes exactly the on/off words configuration.md lists, as every on/off setting does', () => {
    const text = readFileSync(new URL('../../../docs/configuration.md', import.meta.url), 'utf8').replace(/\s+/g, ' ');
    const stated = /An on\/off setting \([^)]*\) takes (.+?) and (.+?), in any case/.exec(text);
    assert.ok(stated, 'configuration.md says which words an on/off setting takes');
    const words = (list: string): string[] => [...list.matchAll(/`([^`]+)`/g)].map((m) => m[1]!);
    const read = (value: string) => readAuditSettings({ MCP_AUTH_AUDIT: 'stdout', MCP_AUTH_AUDIT_ARGUMENTS: value })?.arguments;
    for (const word of words(stated[1]!)) assert.equal(read(word.toUpperCase()), true, word);
    for (const word of words(stated[2]!)) assert.equal(read(word), false, word);
    assert.deepEqual([...words(stated[1]!), ...words(stated[2]!)].sort(), ['0', '1', 'false', 'no', 'off', 'on', 'true', 'yes']);
    assert.throws(() => read('enabled'), /MCP_AUTH_AUDIT_ARGUMENTS/);
  });

  test('every bad setting is named in one start-up error', () => {
    const lines = problemsOf(() =>
      loadOptionsFromEnv({ ...BASE, MCP_AUTH_AUDIT: 'audit.jsonl', MCP_AUTH_AUDIT_ARGUMENTS: 'maybe', MCP_AUTH_AUDIT_REDACT: 'password', MCP_AUTH_AUDIT_MAX_BYTES: '10', MCP_AUTH_AUDIT_FILES: '0' }),
    );
    const named = lines.map((line) => line.split(':')[0]).sort();
    assert.deepEqual(named, ['MCP_AUTH_AUDIT', 'MCP_AUTH_AUDIT_ARGUMENTS', 'MCP_AUTH_AUDIT_FILES', 'MCP_AUTH_AUDIT_MAX_BYTES', 'MCP_AUTH_AUDIT_REDACT']);
    assert.ok(lines.some((line) => line.startsWith('MCP_AUTH_AUDIT: "audit.jsonl" is neither off, stdout, otel nor an absolute file path')), lines.join('\n'));
  });

  test('settings that shape an audit trail that is off are refused, as are rotation settings without a file', () => {
    const off = problemsOf(() => loadOptionsFromEnv({ ...BASE, MCP_AUTH_AUDIT_ARGUMENTS: 'on', MCP_AUTH_AUDIT_FILES: '3' }));
    assert.deepEqual(off.map((line) => line.split(':')[0]).sort(), ['MCP_AUTH_AUDIT_ARGUMENTS', 'MCP_AUTH_AUDIT_FILES']);
    const stdout = problemsOf(() => loadOptionsFromEnv({ ...BASE, MCP_AUTH_AUDIT: 'stdout', MCP_AUTH_AUDIT_MAX_BYTES: '100000', MCP_AUTH_AUDIT_REDACT: '/password' }));
    assert.deepEqual(stdout.map((line) => line.split(':')[0]).sort(), ['MCP_AUTH_AUDIT_MAX_BYTES', 'MCP_AUTH_AUDIT_REDACT']);
  });

  test('a file in a folder that does not exist is refused at start-up', () => {
    const lines = problemsOf(() => resolveAuditOptions({ to: join(dir, 'missing', 'audit.jsonl') }));
    assert.equal(lines.length, 1);
    assert.match(lines[0]!, /^options\.audit\.to: the folder .*missing does not exist; create it, or give a file in a folder that does$/);
  });

  test('options given in code are named as options', () => {
    const lines = problemsOf(() => resolveAuditOptions({ to: 'stdout', arguments: 'yes' as unknown as boolean, bufferBytes: 5 }));
    assert.deepEqual(lines.map((line) => line.split(':')[0]).sort(), ['options.audit.arguments', 'options.audit.bufferBytes']);
  });
});

describe('redaction by JSON Pointer (RFC 6901)', () => {
  test('pointers parse with their escapes, and bad ones are refused', () => {
    assert.deepEqual(parseJsonPointer('/a~1b/c~0d/0', 'x'), ['a/b', 'c~d', '0']);
    assert.deepEqual(parseJsonPointer('', 'x'), []);
    assert.throws(() => parseJsonPointer('password', 'x'), /must start with "\/"/);
    assert.throws(() => parseJsonPointer('/a~2', 'x'), /"~" must be followed by 0 or 1/);
  });

  test('named values are replaced, the input is left alone, and pointers that name nothing change nothing', () => {
    const args = { user: 'ana', password: 'hunter2', card: { number: '4111111111111111', exp: '12/30' }, items: [{ secret: 's1' }, { secret: 's2' }] };
    const redacted = redactJsonPointers(args, [['password'], ['card', 'number'], ['items', '1', 'secret'], ['nothing', 'here'], ['items', '7']]);
    assert.deepEqual(redacted, { user: 'ana', password: REDACTED_MARKER, card: { number: REDACTED_MARKER, exp: '12/30' }, items: [{ secret: 's1' }, { secret: REDACTED_MARKER }] });
    assert.equal(args.password, 'hunter2');
    assert.equal(args.items[1]!.secret, 's2');
    assert.equal(redactJsonPointers(args, [[]]), REDACTED_MARKER);
  });

  test('arguments past the byte bound are cut with a marker, after redaction', () => {
    const big = { password: 'x'.repeat(200), note: 'é'.repeat(300) };
    const recorded = recordedArguments(big, [['password']], 100);
    assert.equal(recorded?.field, 'argumentsTruncated');
    const truncated = recorded!.value as string;
    assert.equal(recorded!.json, JSON.stringify(truncated), 'the JSON written is the value\'s');
    assert.ok(truncated.endsWith(TRUNCATED_MARKER));
    assert.ok(Buffer.byteLength(truncated) <= 100 + Buffer.byteLength(TRUNCATED_MARKER));
    assert.ok(!truncated.includes('xxxx'), 'the redacted value never shows');
    assert.ok(!truncated.includes('\uFFFD'), 'no split character');
    assert.deepEqual(recordedArguments({ q: 'small' }, [], 100), { field: 'arguments', value: { q: 'small' }, json: '{"q":"small"}' });
    assert.equal(recordedArguments(undefined, [], 100), undefined);
  });
});

describe('record parts', () => {
  test('the JSON-RPC error code of a JSON body or an event stream; none for a success', () => {
    assert.equal(jsonRpcErrorCodeIn('{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"Method not found"}}'), -32601);
    assert.equal(jsonRpcErrorCodeIn('event: message\ndata: {"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"bad"}}\n\n'), -32602);
    assert.equal(jsonRpcErrorCodeIn('{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"\\"error\\""}]}}'), undefined);
    assert.equal(jsonRpcErrorCodeIn('not json "error"'), undefined);
  });

  test('a request id is kept only when it is short visible ASCII, without quotes or control characters', () => {
    assert.equal(usableRequestId('req-1'), 'req-1');
    assert.equal(usableRequestId('has space'), undefined);
    assert.equal(usableRequestId('x'.repeat(129)), undefined);
    assert.equal(usableRequestId(undefined), undefined);
    assert.equal(usableRequestId('x'.repeat(128)), 'x'.repeat(128), '128 characters are kept');
    assert.equal(usableRequestId('0b7e6c2a-9f1d-4c3e-8a5b-2d4f6e8a0c1e'), '0b7e6c2a-9f1d-4c3e-8a5b-2d4f6e8a0c1e');
    for (const forged of ['', 'a\nb', 'a\r\n{"decision":"allow"}', 'a\tb', 'a\u0000b', 'a\u007fb', 'a\u001bb', 'é', 'a"b', "a'b", 'a`b', 'a\\b', '<script>']) {
      assert.equal(usableRequestId(forged), undefined, `${JSON.stringify(forged)} is refused`);
    }
  });
});
