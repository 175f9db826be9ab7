/**
 * The JSON Schema of the gateway configuration file (`schema/gateway-config.schema.json`, package export
 * `mcp-oauth-guard/gateway-config.schema.json`), for editors and CI. Its `gateway` section is built from the settings
 * table, one property per gateway-wide setting, so the schema cannot drift from what the gateway reads; `npm run docs`
 * writes it, and a test fails while the committed file differs. The loader stays the authority: it checks every value
 * with the setting's own parser, which the schema only approximates (types, names, enumerations).
 */
import { MAX_PAGE_REUSE_MS } from './server-config.js';
import { DEFAULT_LIST_TIMEOUT_MS } from './gateway-config.js';
import { SERVER_SETTING_KEYS, fileKeyOf, placeOf } from './file-settings.js';
import type { GatewaySetting } from './gateway-setting.js';
import { MAX_LIST_TIMEOUT_MS, MAX_SERVERS } from './server-entry.js';

/** Where the schema is written, from the repository's root. */
export const GATEWAY_CONFIG_SCHEMA_FILE = 'schema/gateway-config.schema.json';

type Schema = Record<string, unknown>;

const WHOLE_NUMBER_VALUES = new Set(['<ms>', '<number>', '<bytes>', '<seconds>', '<percent>']);
const LIST: Schema = { anyOf: [{ type: 'array', items: { type: 'string' } }, { type: 'string' }] };
/** A whole number where zero means none, or `off` (or false) for the same (see `parseOffOr`). */
const COUNT_OR_OFF: Schema = { anyOf: [{ type: 'integer', minimum: 0 }, { enum: ['off'] }, { const: false }] };

/** A setting's value in the file: a whole number, a switch, one of a few words, a list, or text. */
function valueSchema(setting: GatewaySetting): Schema {
  const described = { description: `${setting.description}${setting.defaultValue ? ` Default: ${setting.defaultValue}.` : ''} Variable: ${setting.env}; flag: ${setting.flag}.` };
  if (WHOLE_NUMBER_VALUES.has(setting.value)) return { ...described, type: 'integer', minimum: 0 };
  // A bound that `off` (or false) disables besides its count (see `parseOffOr`).
  if (setting.value.endsWith('|off>') && WHOLE_NUMBER_VALUES.has(`${setting.value.slice(0, -'|off>'.length)}>`)) return { ...described, ...COUNT_OR_OFF };
  if (setting.value === '[on|off]' || setting.value === '[true|false]') return { ...described, type: 'boolean' };
  const words = /^<([a-z]+(?:\|[a-z]+)+)>$/.exec(setting.value);
  if (words) return { ...described, enum: words[1]!.split('|') };
  if (setting.value === '<list>' || setting.value.includes('[,')) return { ...described, ...LIST };
  return { ...described, type: 'string', minLength: 1 };
}

/** A whole number of milliseconds or bytes. */
function count(description: string, minimum = 1): Schema {
  return { description, type: 'integer', minimum };
}

/** One `servers.<name>.limits` key: a count, or for the replay buffer (where zero keeps nothing) also off. */
function limitSchema(key: string): Schema {
  const description = `The setting ${Object.entries(SERVER_SETTING_KEYS).find(([, path]) => path === key)![0]} for this server.`;
  return key === 'limits.replayBytes' ? { description, ...COUNT_OR_OFF } : count(description);
}

/** One `servers.<name>` entry. */
function serverSchema(): Schema {
  const auth = {
    description: 'How the gateway authenticates to this server, as itself (the caller\'s token never goes upstream). Secrets are named by an environment variable or a file, never written here.',
    type: 'object',
    additionalProperties: false,
    required: ['mode'],
    properties: {
      mode: {
        enum: ['none', 'static', 'client_credentials', 'token_exchange', 'connected'],
        description: "none (default), a static token, a client credentials token, the caller's token exchanged (RFC 8693), or connected: each user's own authorization at this server, asked for once in the browser (connected accounts).",
      },
      tokenEnv: { type: 'string', pattern: '^[A-Za-z_][A-Za-z0-9_]*$', description: 'With static: the environment variable holding the token.' },
      tokenFile: { type: 'string', minLength: 1, description: 'With static: a file holding the token, relative to this file; re-read when it changes.' },
      clientId: { type: 'string', minLength: 1, description: "With client_credentials or token_exchange: the gateway's client id at the server's authorization server. With connected, optional: without it the gateway uses a Client ID Metadata Document it serves, or registers itself (RFC 7591)." },
      clientSecretEnv: { type: 'string', pattern: '^[A-Za-z_][A-Za-z0-9_]*$', description: 'The environment variable holding its client secret.' },
      clientSecretFile: { type: 'string', minLength: 1, description: 'A file holding its client secret, relative to this file.' },
      scope: { ...LIST, description: 'The scopes asked for this server.' },
      issuer: { type: 'string', minLength: 1, description: "The issuer of this server's tokens. Default: its RFC 9728 metadata, else the gateway's issuer." },
      resource: { type: 'string', minLength: 1, description: 'The resource (RFC 8707) tokens are asked for. Default: its RFC 9728 metadata, else its url.' },
    },
  };
  const headerNames = { type: 'object', additionalProperties: false, minProperties: 1, properties: Object.fromEntries(['subject', 'clientId', 'scopes', 'issuer'].map((key) => [key, { type: 'string', minLength: 1 }])) };
  return {
    type: 'object',
    additionalProperties: false,
    // One of url and command, never both; never both policy and policyFile.
    anyOf: [{ required: ['url'], properties: { url: true } }, { required: ['command'], properties: { command: true } }],
    dependentSchemas: { url: { properties: { command: false } }, policy: { properties: { policyFile: false } } },
    properties: {
      url: { type: 'string', minLength: 1, description: 'The Streamable HTTP MCP endpoint, e.g. http://127.0.0.1:3001/mcp. Not with command.' },
      command: {
        description: 'A stdio MCP server to run, one process per session: a command line split with shell-style quoting (no shell runs it), or a list of the program and its arguments. Not with url.',
        anyOf: [{ type: 'string', minLength: 1 }, { type: 'array', minItems: 1, items: { type: 'string' } }],
      },
      cwd: { type: 'string', minLength: 1, description: 'stdio: the working directory, relative to this file.' },
      env: { ...LIST, description: 'stdio: names of environment variables passed to the process (besides PATH, HOME and LANG).' },
      auth,
      identityHeaders: { description: 'HTTP: send the caller\'s identity in headers: "on" (the default names), "off", or the header names.', anyOf: [{ enum: ['on', 'off'] }, { type: 'boolean' }, headerNames] },
      identityEnv: { type: 'boolean', description: "stdio: start each process with its caller's identity in MCP_CALLER_* variables." },
      timeouts: {
        type: 'object',
        additionalProperties: false,
        properties: { connectMs: count('HTTP: time allowed to connect, in milliseconds.'), idleMs: count('Time allowed with no word from the server about a request, in milliseconds.') },
      },
      limits: {
        type: 'object',
        additionalProperties: false,
        properties: {
          ...Object.fromEntries(
            Object.values(SERVER_SETTING_KEYS)
              .filter((key) => key.startsWith('limits.'))
              .map((key) => [key.slice('limits.'.length), limitSchema(key)]),
          ),
          maxResponseBytes: count('HTTP: the largest answer accepted from this server, in bytes.'),
        },
      },
      policy: { $ref: 'policy.schema.json', description: "This server's own policy, by its own tool, prompt and resource names, in the policy file's shape. Not with policyFile." },
      policyFile: { type: 'string', minLength: 1, description: "A policy file for this server, relative to this file; re-read on a policy reload. Not with policy." },
      tools: {
        type: 'object',
        additionalProperties: false,
        description: 'Which of its tools are exposed, by its own names; * matches any run of characters. An excluded tool is absent for every caller.',
        properties: { include: { type: 'array', items: { type: 'string', minLength: 1 } }, exclude: { type: 'array', items: { type: 'string', minLength: 1 } } },
      },
      required: { type: 'boolean', description: '/readyz is ready only when this server is. Default: false.' },
      listReuseMs: {
        type: 'integer',
        minimum: 1,
        maximum: MAX_PAGE_REUSE_MS,
        description: "This server's lists are the same for every caller: a merged list serves its pages again, to anyone, for this many milliseconds, instead of asking it for every list. With auth.mode connected, only pages fetched with a connected user's token are kept, and users who have not connected the server see its tools too (unless MCP_AUTH_CONNECT_LISTS is hide). Not with identityHeaders, identityEnv, or auth.mode token_exchange. Default: only pages the server marks public (2026-07-28).",
      },
      listTimeoutMs: { type: 'integer', minimum: 1, maximum: MAX_LIST_TIMEOUT_MS, description: `Time allowed for this server's part of a merged list, in milliseconds. Default: the gateway's listTimeoutMs (${DEFAULT_LIST_TIMEOUT_MS}).` },
    },
  };
}

/**
 * The schema, as `npm run docs` writes it.
 *
 * @param settings - The gateway's settings table (`GATEWAY_SETTINGS`).
 */
export function gatewayConfigSchema(settings: readonly GatewaySetting[]): Schema {
  const gateway = settings.filter((setting) => placeOf(setting) === 'gateway').map((setting) => [fileKeyOf(setting.env), valueSchema(setting)] as const);
  return {
    $schema: 'https://json-schema.org/draft/2020-12/schema',
    title: 'mcp-oauth-guard gateway configuration file',
    description: 'Several MCP servers behind one gateway endpoint (--config, MCP_AUTH_CONFIG): gateway-wide settings and the servers. Variables and flags win over the file; relative paths start from the file\'s directory. Unknown keys are refused.',
    type: 'object',
    additionalProperties: false,
    required: ['servers'],
    properties: {
      $schema: { type: 'string', description: "This schema's location, for editors: a path relative to the file, or a URL." },
      gateway: {
        type: 'object',
        additionalProperties: false,
        description: 'Gateway-wide settings, each named as its variable in camelCase without MCP_AUTH_ (MCP_AUTH_ISSUER: issuer, PORT: port). Secrets are set in the environment only.',
        properties: Object.fromEntries(gateway),
      },
      servers: {
        type: 'object',
        description: `Each upstream by its name (letters, digits, "-" and "_", starting with a letter, at most 64, no "__"): its tools and prompts are exposed as <name>__<tool>. At least one, at most ${MAX_SERVERS}.`,
        minProperties: 1,
        maxProperties: MAX_SERVERS,
        propertyNames: { pattern: '^(?!.*__)[A-Za-z][A-Za-z0-9_-]{0,63}$' },
        additionalProperties: { $ref: '#/$defs/server' },
      },
    },
    $defs: { server: serverSchema() },
  };
}

/** The schema file's text: the schema as JSON, two-space indented, with a final newline. */
export function gatewayConfigSchemaText(settings: readonly GatewaySetting[]): string {
  return `${JSON.stringify(gatewayConfigSchema(settings), null, 2)}\n`;
}
