// The three-server example of docs/gateway-servers.md is a working configuration: the file loads with the gateway's
// own loader (its policy files read, its paths resolved from the file's directory), passes the published JSON
// Schema, and its policies combine as the page says. Relative links on every page are checked by links.test.ts.
import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { parse as parseYaml } from 'yaml';
import type { AuthInfo } from '../../src/core/kernel/auth-info.js';
import { policyDefinitionOf } from '../../src/core/policy/compile-policy.js';
import { loadGatewayConfig, type GatewayConfig } from '../../src/gateway/config/gateway-config.js';
import { ServerSetPolicy } from '../../src/gateway/policy/server-set-policy.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const PAGE = readFileSync(join(ROOT, 'docs/gateway-servers.md'), 'utf8');

/** The page's fenced blocks of one language. */
function blocks(language: string): string[] {
  return [...PAGE.matchAll(new RegExp('```' + language + '\\n([\\s\\S]*?)```', 'g'))].map((match) => match[1]!);
}

const [configText] = blocks('yaml');
const policyText = blocks('json').find((text) => text.includes('"requiredScopes"'));

let dir: string;
let config: GatewayConfig;

describe('the three-server example of docs/gateway-servers.md', () => {
  before(() => {
    assert.ok(configText, 'the page shows a YAML configuration file');
    assert.ok(policyText, 'the page shows the gateway-wide policy file');
    // The file as a reader saves it at the root of a clone: examples/ beside it, the policy file it names too.
    dir = mkdtempSync(join(tmpdir(), 'gateway-servers-page-'));
    writeFileSync(join(dir, 'gateway.yaml'), configText);
    writeFileSync(join(dir, 'gateway-policy.json'), policyText);
    symlinkSync(join(ROOT, 'examples'), join(dir, 'examples'), 'dir');
    // The stdio server's program only has to be found on PATH: a stand-in, so the test needs no Python.
    mkdirSync(join(dir, 'bin'));
    writeFileSync(join(dir, 'bin', 'python3'), '#!/bin/sh\nexit 0\n');
    chmodSync(join(dir, 'bin', 'python3'), 0o755);
    config = loadGatewayConfig({ PATH: join(dir, 'bin'), MCP_AUTH_CONFIG: join(dir, 'gateway.yaml'), NOTES_CLIENT_SECRET: 'development-only-not-a-secret' });
  });

  after(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('loads: three servers of three kinds, in the file\'s order, each with what the page says', () => {
    const servers = config.servers ?? [];
    assert.deepEqual(
      servers.map((server) => [server.name, server.transport]),
      [
        ['everything', 'http'],
        ['py', 'stdio'],
        ['notes', 'http'],
      ],
    );
    const [everything, py, notes] = servers;
    assert.deepEqual(everything!.tools, { exclude: ['get-env', 'gzip-file-as-resource'] });
    assert.equal(everything!.policy, undefined);
    // Paths start from the file's directory: the policy file the stdio example ships with, its working directory.
    assert.equal(resolve(py!.policyFile!), join(dir, 'examples/stdio-gateway/policy.json'));
    const { $schema: _schema, $comment: _comment, ...ownPolicy } = JSON.parse(readFileSync(join(ROOT, 'examples/stdio-gateway/policy.json'), 'utf8')) as Record<string, unknown>;
    assert.deepEqual(py!.policy, ownPolicy);
    assert.equal(py!.stdio!.cwd, join(dir, 'examples/stdio-gateway'));
    assert.equal(notes!.upstreamAuth?.mode, 'client_credentials');
    assert.equal(notes!.required, true);
    assert.equal(everything!.required, false);
    assert.deepEqual(policyDefinitionOf(config.guard.policy)?.requiredScopes, ['mcp']);
  });

  it('passes the published JSON Schema, and its policy file passes the policy schema', () => {
    const policySchema = JSON.parse(readFileSync(join(ROOT, 'schema/policy.schema.json'), 'utf8')) as object;
    const ajv = new Ajv2020({ strict: true, allErrors: true }).addSchema(policySchema, 'policy.schema.json');
    const validate = ajv.compile(JSON.parse(readFileSync(join(ROOT, 'schema/gateway-config.schema.json'), 'utf8')) as object);
    assert.equal(validate(parseYaml(configText!)), true, JSON.stringify(validate.errors));
    const validatePolicy = ajv.getSchema('policy.schema.json')!;
    assert.equal(validatePolicy(JSON.parse(policyText!)), true, JSON.stringify(validatePolicy.errors));
  });

  it('combines the policies as the page says: the gateway-wide scopes and the server\'s own, by its own names', () => {
    const policy = new ServerSetPolicy(config.servers!, () => undefined).compile(policyDefinitionOf(config.guard.policy));
    const call = (name: string) => ({ jsonrpc: '2.0' as const, id: 1, method: 'tools/call', params: { name, arguments: {} } });
    const caller = (scopes: string[]): AuthInfo => ({ token: 't', clientId: 'c', scopes, extra: { sub: 'alice', claims: {} } }) as AuthInfo;
    // notes_add needs notes:write of the notes server's own policy, and mcp of the gateway-wide one.
    assert.deepEqual([...policy.authorize(call('notes__notes_add'), caller(['mcp', 'notes:write'])).requiredScopes].sort(), ['mcp', 'notes:write']);
    assert.equal(policy.authorize(call('notes__notes_add'), caller(['mcp', 'notes:read'])).allowed, false);
    assert.equal(policy.authorize(call('notes__notes_add'), caller(['notes:write'])).allowed, false);
    // everything has no policy of its own: mcp is enough.
    assert.equal(policy.authorize(call('everything__echo'), caller(['mcp'])).allowed, true);
    // py's policy file asks notes:read of every request routed to it, notes:write for remember.
    assert.equal(policy.authorize(call('py__add'), caller(['mcp'])).allowed, false);
    assert.equal(policy.authorize(call('py__add'), caller(['mcp', 'notes:read'])).allowed, true);
    assert.equal(policy.authorize(call('py__remember'), caller(['mcp', 'notes:read'])).allowed, false);
    // The metadata advertises every policy's scopes.
    assert.deepEqual([...policy.scopesSupported].sort(), ['mcp', 'notes:read', 'notes:write']);
  });
});
