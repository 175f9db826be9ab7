// The published JSON Schema of the policy file (schema/policy.schema.json) and the loader agree: every policy below
// goes through both loadPolicyFile and a real draft 2020-12 validator, and each must accept or refuse it alike.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { after, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { ConfigurationError } from '../../../src/core/kernel/errors.js';
import { loadPolicyFile } from '../../../src/core/policy/load-policy-file.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
const SCHEMA_FILE = join(ROOT, 'schema/policy.schema.json');
const schema = JSON.parse(readFileSync(SCHEMA_FILE, 'utf8')) as { properties: Record<string, unknown> };
// Strict: an unknown keyword or a pattern the validator cannot compile is an error in the schema itself.
const validate = new Ajv2020({ strict: true, allErrors: true }).compile(schema);

const dir = mkdtempSync(join(tmpdir(), 'policy-schema-'));
after(() => rmSync(dir, { recursive: true, force: true }));

let files = 0;
/** Whether the loader accepts `text` as a policy file. */
function loaderAccepts(text: string): boolean {
  const file = join(dir, `policy-${files++}.json`);
  writeFileSync(file, text);
  try {
    loadPolicyFile(file);
    return true;
  } catch (error) {
    if (!(error instanceof ConfigurationError)) throw error;
    return false;
  }
}

// JSON text, not objects: a key such as "__proto__" must reach both as the file would.
const VALID: readonly string[] = [
  '{}',
  '{"$schema": "./node_modules/mcp-oauth-guard/schema/policy.schema.json", "$comment": "for editors"}',
  '{"requiredScopes": [], "scopesSupported": ["a", "b"]}',
  '{"requiredScopes": ["mcp", "mcp"], "methods": {"tools/call": ["mcp:tools"], "*": []}}',
  '{"tools": {"add": ["calc:use"], "*": ["calc:admin"], "": [], "__proto__": ["x"], "constructor": ["y"]}}',
  '{"prompts": {"summarise": ["p:use"], "*": []}}',
  '{"methods": {"tools/call": {"scopes": ["a"]}}}',
  '{"tools": {"refund": {"scopes": ["pay"], "when": "\'finance\' in claims.groups"}, "*": {"when": "true"}}}',
  '{"resources": {"crm://{tenant}/x": {"when": "mcp.params.tenant == claims.tenant"}}}',
  '{"resources": {"notes://a": [], "*": ["admin"], "notes://{user}/x": ["r"], "file:///{+path}": [], "https://x.example/{?q,page}": []}}',
  '{"resources": {"notes://{user:30}{/seg*}": [], "x{.a,b.c}": [], "x{#frag}{;p}{&more}": [], "x{%20x}": [], "notes://x}": []}}',
  '{"scopeHierarchy": {"notes:admin": ["notes:write"], "notes:write": ["notes:read"], "empty": []}}',
  '{"rateLimits": {}}',
  '{"rateLimits": {"tools": {"add": "10/min", "b": " 5 / Hour ", "c": "1000000000/s", "d": "0010/SEC", "e": "1/minute", "f": "2/h", "g": "3/second"}}}',
  '{"scopesSupported": ["~!#$%&\'()*+,-./:;<=>?@[]^_`{|}"]}',
];

const INVALID: readonly string[] = [
  '[]',
  'null',
  '"tools"',
  '5',
  '{"requiredScope": ["mcp"]}',
  '{"Tools": {}}',
  '{"$schema": 5}',
  '{"$schema": null}',
  '{"$comment": {"note": "x"}}',
  '{"scopesSupported": "a b"}',
  '{"requiredScopes": [""]}',
  '{"requiredScopes": ["has space"]}',
  '{"requiredScopes": ["quote\\""]}',
  '{"requiredScopes": ["back\\\\slash"]}',
  '{"requiredScopes": ["caf\u00e9"]}',
  '{"requiredScopes": [5]}',
  '{"tools": []}',
  '{"tools": null}',
  '{"tools": {"add": "calc:use"}}',
  '{"tools": {"add": null}}',
  '{"prompts": {"p": [["a"]]}}',
  '{"tools": {"a": {"when": 5}}}',
  '{"tools": {"a": {"scope": ["x"]}}}',
  '{"tools": {"a": {"scopes": "x"}}}',
  '{"tools": {"a": {"when": "  "}}}',
  '{"resources": {"x": {"when": null}}}',
  '{"resources": {"notes://{user": []}}',
  '{"resources": {"notes://{}": []}}',
  '{"resources": {"notes://{=x}": []}}',
  '{"resources": {"notes://{a}}": []}}',
  '{"resources": {"notes://{a b}": []}}',
  '{"resources": {"notes://{a,}": []}}',
  '{"resources": {"notes://{a:0}": []}}',
  '{"resources": {"notes://{a:10000}": []}}',
  '{"resources": {"notes://{.}": []}}',
  '{"resources": {"x": "r"}}',
  '{"scopeHierarchy": {"bad scope": ["x"]}}',
  '{"scopeHierarchy": {"a": "b"}}',
  '{"scopeHierarchy": []}',
  '{"rateLimits": []}',
  '{"rateLimits": {"prompts": {}}}',
  '{"rateLimits": {"tools": []}}',
  '{"rateLimits": {"tools": {"a": 10}}}',
  '{"rateLimits": {"tools": {"a": "0/min"}}}',
  '{"rateLimits": {"tools": {"a": "10/day"}}}',
  '{"rateLimits": {"tools": {"a": "1000000001/s"}}}',
  '{"rateLimits": {"tools": {"a": "00000000001/s"}}}',
  '{"rateLimits": {"tools": {"a": "10 per min"}}}',
  '{"rateLimits": {"tools": {"a": "-1/s"}}}',
];

describe('the policy file JSON Schema', () => {
  it('accepts every policy the loader accepts', () => {
    for (const text of VALID) {
      assert.equal(loaderAccepts(text), true, `the loader refuses ${text}`);
      assert.equal(validate(JSON.parse(text)), true, `the schema refuses ${text}: ${JSON.stringify(validate.errors)}`);
    }
  });

  it('refuses every policy the loader refuses', () => {
    for (const text of INVALID) {
      assert.equal(loaderAccepts(text), false, `the loader accepts ${text}`);
      assert.equal(validate(JSON.parse(text)), false, `the schema accepts ${text}`);
    }
  });

  it('names exactly the keys the loader knows, besides $schema and $comment', () => {
    // The loader lists its keys when it refuses an unknown one.
    let message = '';
    try {
      const file = join(dir, 'unknown-key.json');
      writeFileSync(file, '{"zzz": 1}');
      loadPolicyFile(file);
    } catch (error) {
      message = (error as Error).message;
    }
    const listed = /expected only ([^.]+)\./.exec(message)?.[1]?.split(', ');
    assert.ok(listed && listed.length > 0, message);
    assert.deepEqual(Object.keys(schema.properties).filter((key) => !key.startsWith('$')).sort(), [...listed].sort());
  });

  it('the examples\' policy files name it by a path that resolves, and pass it', () => {
    for (const example of ['examples/gateway/policy.json', 'examples/stdio-gateway/policy.json']) {
      const file = join(ROOT, example);
      const policy = JSON.parse(readFileSync(file, 'utf8')) as { $schema?: string };
      assert.equal(typeof policy.$schema, 'string', `${example} has no $schema`);
      assert.equal(resolve(dirname(file), policy.$schema!), SCHEMA_FILE, example);
      assert.equal(validate(policy), true, `${example}: ${JSON.stringify(validate.errors)}`);
      assert.equal(loaderAccepts(readFileSync(file, 'utf8')), true, example);
    }
  });

  it('is published: the package exports it as mcp-oauth-guard/policy.schema.json and ships its folder', () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { exports: Record<string, unknown>; files: string[] };
    assert.equal(pkg.exports['./policy.schema.json'], './schema/policy.schema.json');
    assert.ok(pkg.files.includes('schema'), 'package.json "files" lists schema');
    // Resolved the way a project that installed the package resolves it (a package may name itself).
    assert.equal(createRequire(import.meta.url).resolve('mcp-oauth-guard/policy.schema.json'), SCHEMA_FILE);
  });
});

describe('loadPolicyFile and $schema', () => {
  it('a policy file with $schema loads, without it in the definition', () => {
    const file = join(dir, 'with-schema.json');
    writeFileSync(file, JSON.stringify({ $schema: 'https://example.com/policy.schema.json', tools: { add: ['calc:use'] } }));
    const definition = loadPolicyFile(file);
    assert.deepEqual(definition, { tools: { add: ['calc:use'] } });
  });

  it('a $schema that is no string is named, with what to write', () => {
    const file = join(dir, 'schema-number.json');
    writeFileSync(file, '{"$schema": 2020}');
    assert.throws(
      () => loadPolicyFile(file),
      (error: unknown) => error instanceof ConfigurationError && error.setting === 'MCP_AUTH_POLICY.$schema' && /as a string, e\.g\. "\.\/node_modules\/mcp-oauth-guard\/schema\/policy\.schema\.json"/.test(error.message),
    );
  });
});
