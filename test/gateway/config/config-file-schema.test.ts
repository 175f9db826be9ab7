// The published JSON Schema of the gateway configuration file (schema/gateway-config.schema.json) is generated from
// the settings table, and agrees with the loader: files the loader accepts pass a real draft 2020-12 validator, files
// it refuses for their shape fail it, and every example on the reference page both validates and loads.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { after, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { parse as parseYaml } from 'yaml';
import { ConfigurationError } from '../../../src/core/kernel/errors.js';
import { GATEWAY_CONFIG_SCHEMA_FILE, gatewayConfigSchemaText } from '../../../src/gateway/config/config-file-schema.js';
import { fileKeyOf, placeOf } from '../../../src/gateway/config/file-settings.js';
import { DEFAULT_LIST_TIMEOUT_MS, GATEWAY_SETTINGS, loadGatewayConfig } from '../../../src/gateway/config/gateway-config.js';
import { problemLines } from '../../helpers/configuration-problems.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
const SCHEMA_FILE = join(ROOT, GATEWAY_CONFIG_SCHEMA_FILE);
const PAGE = join(ROOT, 'docs/gateway-config-file.md');
const schema = JSON.parse(readFileSync(SCHEMA_FILE, 'utf8')) as { properties: { gateway: { properties: Record<string, unknown> } }; $defs: { server: { properties: Record<string, { properties?: Record<string, unknown> }> } } };
const policySchema = JSON.parse(readFileSync(join(ROOT, 'schema/policy.schema.json'), 'utf8')) as object;
// Strict: an unknown keyword or a pattern the validator cannot compile is an error in the schema itself. The policy
// schema is found by the relative reference an editor resolves beside this one.
const validate = new Ajv2020({ strict: true, allErrors: true }).addSchema(policySchema, 'policy.schema.json').compile(schema);

const dir = mkdtempSync(join(tmpdir(), 'config-schema-'));
after(() => rmSync(dir, { recursive: true, force: true }));
let files = 0;

/** The environment the examples are loaded with: the variables they name for secrets and stdio servers. */
const EXAMPLE_ENV = { PATH: process.env.PATH, NOTES_CLIENT_SECRET: 'secret', NOTES_TOKEN: 'token', API_KEY: 'key' };

/** The loader's verdict on a file's text (`.json` or `.yaml`), or its problems. */
function loaderProblems(text: string, extension = 'json'): string[] {
  const file = join(dir, `config-${files++}.${extension}`);
  writeFileSync(file, text);
  try {
    loadGatewayConfig({ ...EXAMPLE_ENV, MCP_AUTH_CONFIG: file });
    return [];
  } catch (error) {
    if (!(error instanceof ConfigurationError)) throw error;
    return problemLines(error);
  }
}

const server = { url: 'http://127.0.0.1:3001/mcp' };
const gateway = { issuer: 'https://auth.example.com' };
/** The gateway-wide settings a server in connected mode needs: the token store and its key (a file beside the file), the sign-in client. */
writeFileSync(join(dir, 'store-key'), Buffer.from(Array.from({ length: 32 }, (_, i) => (i * 37 + 11) % 256)).toString('base64url'));
const connectedGateway = { ...gateway, tokenStore: join(dir, 'tokens'), tokenStoreSecretFile: 'store-key', loginClientId: 'gateway-login', connectLists: 'hide' };

const VALID: readonly object[] = [
  { gateway, servers: { a: server } },
  { $schema: './node_modules/mcp-oauth-guard/schema/gateway-config.schema.json', gateway: { ...gateway, port: 0, lists: 'all', strictJwt: true, audience: ['x', 'y'], logLevel: 'warn', listTimeoutMs: 100 }, servers: { a: server } },
  { gateway, servers: { a: { ...server, auth: { mode: 'static', tokenEnv: 'NOTES_TOKEN' }, identityHeaders: 'on', timeouts: { connectMs: 1, idleMs: 2 }, limits: { maxSessions: 3, maxResponseBytes: 4096 }, tools: { include: ['a*'], exclude: [] }, required: true, listTimeoutMs: 5 } } },
  { gateway, servers: { py: { command: ['node', 'x.mjs'], env: ['API_KEY'], identityEnv: false, limits: { maxProcesses: 2, replayBytes: 0 }, policy: { tools: { x: ['s'] } } }, 'b-2_c': { command: 'node y.mjs', identityHeaders: 'off' } } },
  // Where zero means none, off and false say the same.
  { gateway: { ...gateway, heapGrowingPercent: 'off', maxConnectionsPerAddress: false }, servers: { py: { command: ['node', 'x.mjs'], limits: { replayBytes: 'off' } }, js: { command: 'node y.mjs', limits: { replayBytes: false } } } },
  { gateway, servers: { a: { ...server, identityHeaders: { subject: 'X-User', scopes: 'X-Scopes' }, auth: { mode: 'client_credentials', clientId: 'gw', clientSecretEnv: 'NOTES_CLIENT_SECRET', scope: ['a', 'b'] } } } },
  { gateway: connectedGateway, servers: { crm: { ...server, auth: { mode: 'connected', clientId: 'gw', clientSecretEnv: 'NOTES_CLIENT_SECRET', scope: 'crm.read' } }, other: { url: 'http://127.0.0.1:3002/mcp', auth: { mode: 'connected' } } } },
];

const INVALID: readonly object[] = [
  { gateway },
  { gateway, servers: {} },
  { gateway, servers: { a: server }, extra: 1 },
  { gateway: { ...gateway, prot: 1 }, servers: { a: server } },
  { gateway: { ...gateway, sessionSecret: 'x' }, servers: { a: server } },
  { gateway: { ...gateway, upstream: 'http://x' }, servers: { a: server } },
  { gateway: { ...gateway, lists: 'some' }, servers: { a: server } },
  { gateway: { ...gateway, heapGrowingPercent: 'none' }, servers: { a: server } },
  { gateway: { ...gateway, port: 'off' }, servers: { a: server } },
  { gateway, servers: { py: { command: 'node x.mjs', limits: { replayBytes: 'none' } } } },
  { gateway, servers: { a__b: server } },
  { gateway, servers: { '9a': server } },
  { gateway, servers: { a: {} } },
  { gateway, servers: { a: { ...server, command: 'node x' } } },
  { gateway, servers: { a: { ...server, tols: {} } } },
  { gateway, servers: { a: { ...server, auth: { mode: 'static', token: 'x' } } } },
  { gateway, servers: { a: { ...server, auth: { mode: 'basic' } } } },
  { gateway, servers: { a: { ...server, policy: {}, policyFile: 'p.json' } } },
  { gateway, servers: { a: { ...server, policy: { tools: { x: 'y' } } } } },
  { gateway, servers: { a: { ...server, tools: { include: 'x' } } } },
  { gateway, servers: { a: { ...server, required: 'yes' } } },
  { gateway, servers: { a: { command: [] } } },
  { gateway, servers: { a: { ...server, identityHeaders: { user: 'X' } } } },
];

/** The fenced JSON and YAML blocks of the reference page that are configuration files (they have "servers"). */
function pageExamples(): { text: string; extension: string; value: unknown }[] {
  const page = readFileSync(PAGE, 'utf8');
  return [...page.matchAll(/```(json|yaml)\n([\s\S]*?)```/g)]
    .map(([, language, text]) => ({ text: text!, extension: language!, value: language === 'json' ? (JSON.parse(text!) as unknown) : (parseYaml(text!) as unknown) }))
    .filter(({ value }) => typeof value === 'object' && value !== null && 'servers' in value);
}

describe('the gateway configuration file JSON Schema', () => {
  it('is the one `npm run docs` generates from the settings table', () => {
    assert.equal(readFileSync(SCHEMA_FILE, 'utf8'), gatewayConfigSchemaText(GATEWAY_SETTINGS), 'run npx tsx docs/generate.ts and commit schema/gateway-config.schema.json');
  });

  it('has one gateway property per gateway-wide setting', () => {
    const expected = GATEWAY_SETTINGS.filter((setting) => placeOf(setting) === 'gateway').map((setting) => fileKeyOf(setting.env));
    assert.deepEqual(Object.keys(schema.properties.gateway.properties), expected);
    assert.ok(expected.includes('issuer') && expected.includes('port') && expected.includes('listTimeoutMs') && !expected.includes('sessionSecret') && !expected.includes('upstream') && !expected.includes('config'));
  });

  it("names exactly the server keys the loader knows, at every level", () => {
    // The loader lists the keys when it refuses one nothing is close to.
    const keysListed = (entry: object): string[] => {
      const line = loaderProblems(JSON.stringify({ gateway, servers: { a: entry } })).find((problem) => problem.includes('the keys are'));
      assert.ok(line, 'the loader lists the keys');
      return /the keys are (.*)$/.exec(line)![1]!.split(', ').sort();
    };
    const properties = schema.$defs.server.properties;
    assert.deepEqual(keysListed({ ...server, qqqqqqqqqq: 1 }), Object.keys(properties).sort());
    for (const group of ['auth', 'timeouts', 'limits', 'tools'] as const) {
      assert.deepEqual(keysListed({ ...server, [group]: { qqqqqqqqqq: 1 } }), Object.keys(properties[group]!.properties!).sort(), group);
    }
  });

  it('accepts every file the loader accepts', () => {
    for (const value of VALID) {
      assert.deepEqual(loaderProblems(JSON.stringify(value)), [], JSON.stringify(value));
      assert.equal(validate(value), true, `the schema refuses ${JSON.stringify(value)}: ${JSON.stringify(validate.errors)}`);
    }
  });

  it('refuses every file the loader refuses for its shape', () => {
    for (const value of INVALID) {
      assert.notDeepEqual(loaderProblems(JSON.stringify(value)), [], `the loader accepts ${JSON.stringify(value)}`);
      assert.equal(validate(value), false, `the schema accepts ${JSON.stringify(value)}`);
    }
  });

  it("every example file on the reference page validates and loads", () => {
    const examples = pageExamples();
    assert.ok(examples.length >= 2, 'the page shows a JSON and a YAML example');
    for (const { text, extension, value } of examples) {
      assert.equal(validate(value), true, `${text}: ${JSON.stringify(validate.errors)}`);
      assert.deepEqual(loaderProblems(text, extension), [], text);
    }
  });

  it('every key of the schema is named on the reference page', () => {
    const page = readFileSync(PAGE, 'utf8');
    const server = schema.$defs.server.properties;
    const keys = [
      ...Object.keys((schema as unknown as { properties: Record<string, unknown> }).properties),
      ...Object.keys(schema.properties.gateway.properties),
      ...Object.keys(server),
      ...(['auth', 'timeouts', 'limits', 'tools'] as const).flatMap((group) => Object.keys(server[group]!.properties!)),
    ];
    for (const key of keys) assert.ok(page.includes(`\`${key}\``), `docs/gateway-config-file.md does not name \`${key}\``);
    assert.ok(page.includes(`\`listTimeoutMs\` (default ${DEFAULT_LIST_TIMEOUT_MS})`), 'the page states the list timeout default');
  });

  it('is published: the package exports it as mcp-oauth-guard/gateway-config.schema.json and ships its folder', () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { exports: Record<string, unknown>; files: string[] };
    assert.equal(pkg.exports['./gateway-config.schema.json'], './schema/gateway-config.schema.json');
    assert.ok(pkg.files.includes('schema'));
    assert.equal(createRequire(import.meta.url).resolve('mcp-oauth-guard/gateway-config.schema.json'), SCHEMA_FILE);
  });
});
