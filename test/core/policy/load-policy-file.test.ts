import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import type { AuthInfo } from '../../../src/core/kernel/auth-info.js';
import { compilePolicy } from '../../../src/core/policy/compile-policy.js';
import { ConfigurationError } from '../../../src/core/kernel/errors.js';
import { loadPolicyFile } from '../../../src/core/policy/load-policy-file.js';

const dir = mkdtempSync(join(tmpdir(), 'policy-file-'));
after(() => rmSync(dir, { recursive: true, force: true }));

function writePolicy(name: string, text: string): string {
  const file = join(dir, name);
  writeFileSync(file, text);
  return file;
}

function isConfigError(setting: string, pattern: RegExp) {
  return (e: unknown): boolean => {
    assert.ok(e instanceof ConfigurationError, String(e));
    assert.equal(e.setting, setting);
    assert.match(e.message, pattern);
    return true;
  };
}

const auth: AuthInfo = { token: 't', clientId: 'c', scopes: ['a'], extra: { claims: {}, tokenType: 'jwt' } };

test('a valid policy file loads, with methods, scopeHierarchy and a "__proto__" tool', () => {
  const file = writePolicy(
    'ok.json',
    '\ufeff{"$comment": "demo", "requiredScopes": ["mcp"], "methods": {"tools/call": ["mcp"]},' +
      ' "tools": {"__proto__": ["admin"], "*": ["read"]}, "scopeHierarchy": {"admin": ["read"]}}',
  );
  const definition = loadPolicyFile(file);
  assert.equal(Object.hasOwn(definition, '$comment'), false);
  const policy = compilePolicy(definition);
  const message = { jsonrpc: '2.0' as const, id: 1, method: 'tools/call', params: { name: '__proto__' } };
  assert.deepEqual(policy.requiredScopesFor(message, auth), ['mcp', 'admin']);
  assert.equal(policy.authorize(message, { ...auth, scopes: ['mcp', 'admin'] }).allowed, true);
});

test('a missing file names the setting and the path', () => {
  const file = join(dir, 'absent.json');
  assert.throws(() => loadPolicyFile(file), isConfigError('MCP_AUTH_POLICY', new RegExp(`${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} does not exist`)));
});

test('a directory instead of a file is explained', () => {
  const sub = join(dir, 'a-directory');
  mkdirSync(sub);
  assert.throws(() => loadPolicyFile(sub, 'POLICY'), isConfigError('POLICY', /is a directory/));
});

test('invalid JSON names the setting and gives line and column', () => {
  const trailingComma = writePolicy('comma.json', '{\n  "tools": {\n    "x": ["a",]\n  }\n}');
  assert.throws(() => loadPolicyFile(trailingComma), isConfigError('MCP_AUTH_POLICY', /not valid JSON at line 3, column 15/));
  const truncated = writePolicy('truncated.json', '{"tools": {');
  assert.throws(() => loadPolicyFile(truncated), isConfigError('MCP_AUTH_POLICY', /not valid JSON at line 1, column 12/));
  const badProperty = writePolicy('property.json', '{\n "tools": {,}}');
  assert.throws(() => loadPolicyFile(badProperty), isConfigError('MCP_AUTH_POLICY', /not valid JSON at line 2, column 12/));
});

test('a wrong shape names the setting, the path inside the policy and the file', () => {
  const file = writePolicy('shape.json', '{"tools": {"delete_note": "admin"}}');
  assert.throws(
    () => loadPolicyFile(file),
    isConfigError('MCP_AUTH_POLICY.tools.delete_note', /expected an array of scope strings.*shape\.json/),
  );
  const notObject = writePolicy('array.json', '[]');
  assert.throws(() => loadPolicyFile(notObject), isConfigError('MCP_AUTH_POLICY', /expected a policy object/));
});

test('an unknown top-level key is refused', () => {
  const file = writePolicy('typo.json', '{"tool": {"delete_note": ["admin"]}}');
  assert.throws(() => loadPolicyFile(file), isConfigError('MCP_AUTH_POLICY', /unknown key "tool"/));
  const proto = writePolicy('proto.json', '{"__proto__": {"tools": {}}}');
  assert.throws(() => loadPolicyFile(proto), isConfigError('MCP_AUTH_POLICY', /unknown key "__proto__"/));
});

test('an invalid scope in the file is refused', () => {
  const file = writePolicy('scope.json', '{"requiredScopes": ["two words"]}');
  assert.throws(() => loadPolicyFile(file), isConfigError('MCP_AUTH_POLICY.requiredScopes[0]', /RFC 6749/));
});
