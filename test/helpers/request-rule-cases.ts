/**
 * One table of requests and the answer each must get from the guard, shared by the middleware test and the
 * gateway test so that both paths are held to the same rules: what a 2026-07-28 request must carry
 * (`basic/index` "_meta", SEP-2575), the methods 2026-07-28 removed (Streamable HTTP, "Protocol Version
 * Header"), and that what is authorized is what is forwarded (resource URIs in resolved form only; tool and
 * prompt names byte for byte).
 */
import { FORBIDDEN_JSONRPC_CODE } from '../../src/core/kernel/errors.js';

export const V2026 = '2026-07-28';
export const V2025 = '2025-11-25';

/**
 * The policy of the finding: `docs://private/plan` needs only `docs:read`; everything else, `*`, needs
 * `docs:private`. An upstream that compares URIs as strings treats `DOCS://private/plan` as another resource.
 */
export const RULE_POLICY = {
  scopesSupported: ['docs:read', 'docs:private'],
  tools: { deploy: ['docs:read'], 'café': ['docs:read'], '*': ['docs:private'] },
  prompts: { summary: ['docs:read'], '*': ['docs:private'] },
  resources: { 'docs://private/plan': ['docs:read'], 'docs://public/{id}': ['docs:read'], '*': ['docs:private'] },
} as const;

/** Scopes of the two test tokens. */
export const READ_SCOPE = 'docs:read';
export const PRIVATE_SCOPE = 'docs:read docs:private';

export const META_2026 = { 'io.modelcontextprotocol/protocolVersion': V2026, 'io.modelcontextprotocol/clientCapabilities': {} } as const;

/** The `Mcp-Name` value a client sends for `value`: plain when header-safe, else the base64 sentinel form. */
export function mcpName(value: string): string {
  return /^[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?$/.test(value) && !(value.startsWith('=?base64?') && value.endsWith('?='))
    ? value
    : `=?base64?${Buffer.from(value, 'utf8').toString('base64')}?=`;
}

/** A 2026-07-28 request and its mirrored headers, as a conforming client sends them. */
export function modern(id: number, method: string, params: Record<string, unknown> = {}): { message: Record<string, unknown>; headers: Record<string, string> } {
  const headers: Record<string, string> = { 'mcp-protocol-version': V2026, 'mcp-method': method };
  const target = method === 'resources/read' ? params.uri : method === 'tools/call' || method === 'prompts/get' ? params.name : undefined;
  if (typeof target === 'string') headers['mcp-name'] = mcpName(target);
  return { message: { jsonrpc: '2.0', id, method, params: { ...params, _meta: META_2026 } }, headers };
}

/** A 2025-11-25 request (no `_meta` version; the header only). */
export function legacy(id: number, method: string, params?: Record<string, unknown>): { message: Record<string, unknown>; headers: Record<string, string> } {
  return { message: { jsonrpc: '2.0', id, method, ...(params ? { params } : {}) }, headers: { 'mcp-protocol-version': V2025 } };
}

export interface RuleCase {
  readonly name: string;
  readonly message: Record<string, unknown>;
  readonly headers: Record<string, string>;
  /** Which token sends it. Default `read`. */
  readonly token?: 'read' | 'private';
  /** Status the guard answers; `forward` when the request must reach the server unchanged. */
  readonly expect: { status: number; code: number; message?: RegExp } | 'forward';
}

const withoutMeta = (id: number, method: string, params: Record<string, unknown>, meta: unknown): RuleCase['message'] => ({
  jsonrpc: '2.0',
  id,
  method,
  params: meta === undefined ? params : { ...params, _meta: meta },
});

const modernHeaders = (method: string, name?: string): Record<string, string> => ({
  'mcp-protocol-version': V2026,
  'mcp-method': method,
  ...(name === undefined ? {} : { 'mcp-name': mcpName(name) }),
});

function spelling(id: number, uri: string, resolved: string): RuleCase[] {
  const expect = { status: 400, code: -32602, message: new RegExp(`in its resolved form, ${JSON.stringify(resolved).replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}`) };
  return [
    { name: `2026 resources/read of ${uri} is refused, naming ${resolved}`, ...modern(id, 'resources/read', { uri }), expect },
    { name: `2025 resources/read of ${uri} is refused, naming ${resolved}`, ...legacy(id + 1, 'resources/read', { uri }), expect },
  ];
}

/** Every rule, one request each (ids are unique so that answers can be matched to cases). */
export const RULE_CASES: readonly RuleCase[] = [
  // What a 2026-07-28 request must carry: -32602 for a missing or invalid _meta; -32020 only for a header that
  // disagrees with a body value that is present, or a missing header.
  { name: '2026 request without params', message: { jsonrpc: '2.0', id: 101, method: 'tools/list' }, headers: modernHeaders('tools/list'), expect: { status: 400, code: -32602, message: /requires params\._meta, an object/ } },
  { name: '2026 request without _meta', message: withoutMeta(102, 'tools/call', { name: 'deploy' }, undefined), headers: modernHeaders('tools/call', 'deploy'), expect: { status: 400, code: -32602, message: /requires params\._meta, an object/ } },
  { name: '2026 request whose _meta is not an object', message: withoutMeta(103, 'tools/list', {}, 'x'), headers: modernHeaders('tools/list'), expect: { status: 400, code: -32602 } },
  {
    name: '2026 request whose _meta lacks the protocol version',
    message: withoutMeta(104, 'tools/list', {}, { 'io.modelcontextprotocol/clientCapabilities': {} }),
    headers: modernHeaders('tools/list'),
    expect: { status: 400, code: -32602, message: /protocolVersion"\], a string/ },
  },
  {
    name: '2026 request whose _meta version is not a string',
    message: withoutMeta(105, 'tools/list', {}, { 'io.modelcontextprotocol/protocolVersion': 20260728, 'io.modelcontextprotocol/clientCapabilities': {} }),
    headers: modernHeaders('tools/list'),
    expect: { status: 400, code: -32602, message: /protocolVersion"\], a string/ },
  },
  {
    name: '2026 request whose _meta lacks clientCapabilities',
    message: withoutMeta(106, 'tools/list', {}, { 'io.modelcontextprotocol/protocolVersion': V2026 }),
    headers: modernHeaders('tools/list'),
    expect: { status: 400, code: -32602, message: /clientCapabilities"\], an object/ },
  },
  {
    name: '2026 header with a body naming 2025-11-25 is a mismatch',
    message: withoutMeta(107, 'tools/list', {}, { ...META_2026, 'io.modelcontextprotocol/protocolVersion': V2025 }),
    headers: modernHeaders('tools/list'),
    expect: { status: 400, code: -32020, message: /does not match body value '2025-11-25'/ },
  },
  { name: '2026 body without the MCP-Protocol-Version header', message: modern(108, 'tools/list').message, headers: { 'mcp-method': 'tools/list' }, expect: { status: 400, code: -32020, message: /MCP-Protocol-Version header is required/ } },
  { name: 'a complete 2026 request is forwarded', ...modern(109, 'tools/list'), expect: 'forward' },
  { name: 'a 2025 request carries no _meta and is forwarded', ...legacy(110, 'tools/list'), expect: 'forward' },

  // Methods 2026-07-28 removed: 404 -32601, whatever their params; the target check is for revisions that have them.
  { name: '2026 resources/subscribe without a uri', ...modern(121, 'resources/subscribe'), expect: { status: 404, code: -32601, message: /resources\/subscribe does not exist in MCP 2026-07-28/ } },
  { name: '2026 resources/subscribe of a resource', ...modern(122, 'resources/subscribe', { uri: 'docs://private/plan' }), expect: { status: 404, code: -32601 } },
  { name: '2026 resources/unsubscribe', ...modern(123, 'resources/unsubscribe', { uri: 'DOCS://private/plan' }), expect: { status: 404, code: -32601 } },
  { name: '2026 ping', ...modern(124, 'ping'), expect: { status: 404, code: -32601 } },
  { name: '2026 logging/setLevel', ...modern(125, 'logging/setLevel', { level: 'debug' }), expect: { status: 404, code: -32601 } },
  { name: '2026 initialize', ...modern(126, 'initialize', { protocolVersion: V2026, capabilities: {}, clientInfo: { name: 'c', version: '1' } }), expect: { status: 404, code: -32601 } },
  { name: '2026 tasks/list', ...modern(127, 'tasks/list'), expect: { status: 404, code: -32601 } },
  { name: '2026 resources/subscribe without _meta is still 404', message: { jsonrpc: '2.0', id: 128, method: 'resources/subscribe' }, headers: modernHeaders('resources/subscribe'), expect: { status: 404, code: -32601 } },
  { name: '2025 resources/subscribe without a uri gets the target check', ...legacy(129, 'resources/subscribe', {}), expect: { status: 400, code: -32602, message: /non-empty string params\.uri/ } },
  { name: '2025 resources/subscribe of a resource is forwarded', ...legacy(130, 'resources/subscribe', { uri: 'docs://private/plan' }), expect: 'forward' },
  { name: '2025 ping is forwarded', ...legacy(131, 'ping'), expect: 'forward' },
  { name: '2026 tasks/get (the tasks extension) is forwarded', ...modern(132, 'tasks/get', { taskId: 't1' }), expect: 'forward' },

  // What is authorized is what is forwarded: URIs only in their resolved form.
  ...spelling(141, 'DOCS://private/plan', 'docs://private/plan'),
  ...spelling(143, 'docs://private/x/../plan', 'docs://private/plan'),
  ...spelling(145, 'docs://private/./plan', 'docs://private/plan'),
  ...spelling(147, 'docs://private/%70lan', 'docs://private/plan'),
  ...spelling(149, 'docs://private/pl%61n', 'docs://private/plan'),
  ...spelling(151, 'https://EXAMPLE.com/doc', 'https://example.com/doc'),
  ...spelling(153, 'https://example.com:443/doc', 'https://example.com/doc'),
  ...spelling(155, 'docs://public/caf%c3%a9', 'docs://public/caf%C3%A9'),
  ...spelling(157, 'docs://public/café', 'docs://public/caf%C3%A9'),
  { name: 'the resolved spelling is forwarded as sent', ...modern(161, 'resources/read', { uri: 'docs://private/plan' }), expect: 'forward' },
  { name: 'a public template URI is forwarded as sent', ...modern(162, 'resources/read', { uri: 'docs://public/caf%C3%A9' }), expect: 'forward' },
  { name: 'another private resource needs the * scope', ...modern(163, 'resources/read', { uri: 'docs://private/other' }), expect: { status: 403, code: FORBIDDEN_JSONRPC_CODE } },
  { name: 'another private resource, with the * scope, is forwarded', ...modern(164, 'resources/read', { uri: 'docs://private/other' }), token: 'private', expect: 'forward' },
  {
    name: 'subscriptions/listen naming a second spelling is refused',
    ...modern(165, 'subscriptions/listen', { notifications: { resourceSubscriptions: ['docs://private/plan', 'DOCS://private/plan'] } }),
    expect: { status: 400, code: -32602, message: /resourceSubscriptions entries in its resolved form/ },
  },
  { name: 'subscriptions/listen of resolved URIs is forwarded', ...modern(166, 'subscriptions/listen', { notifications: { resourceSubscriptions: ['docs://private/plan'] } }), expect: 'forward' },
  {
    name: 'completion/complete of a template spelled otherwise is refused',
    ...modern(167, 'completion/complete', { ref: { type: 'ref/resource', uri: 'DOCS://public/{id}' }, argument: { name: 'id', value: '' } }),
    expect: { status: 400, code: -32602, message: /params\.ref\.uri in its resolved form/ },
  },
  { name: 'completion/complete of a resolved template is forwarded', ...modern(168, 'completion/complete', { ref: { type: 'ref/resource', uri: 'docs://public/{id}' }, argument: { name: 'id', value: '' } }), expect: 'forward' },

  // Tool and prompt names: byte for byte. Other cases, padding, look-alikes and NFD forms are other names: `*`.
  { name: 'tool deploy is forwarded', ...modern(181, 'tools/call', { name: 'deploy' }), expect: 'forward' },
  { name: 'tool café (NFC) is forwarded', ...modern(182, 'tools/call', { name: 'caf\u00e9' }), expect: 'forward' },
  { name: 'tool Deploy is another name', ...modern(183, 'tools/call', { name: 'Deploy' }), expect: { status: 403, code: FORBIDDEN_JSONRPC_CODE } },
  { name: 'tool " deploy" is another name', ...modern(184, 'tools/call', { name: ' deploy' }), expect: { status: 403, code: FORBIDDEN_JSONRPC_CODE } },
  { name: 'tool d\u0435ploy (Cyrillic e) is another name', ...modern(185, 'tools/call', { name: 'd\u0435ploy' }), expect: { status: 403, code: FORBIDDEN_JSONRPC_CODE } },
  { name: 'tool \uff44eploy (fullwidth d) is another name', ...modern(186, 'tools/call', { name: '\uff44eploy' }), expect: { status: 403, code: FORBIDDEN_JSONRPC_CODE } },
  { name: 'tool café (NFD) is another name', ...modern(187, 'tools/call', { name: 'cafe\u0301' }), expect: { status: 403, code: FORBIDDEN_JSONRPC_CODE } },
  { name: 'tool café (NFD), with the * scope, is forwarded byte for byte', ...modern(188, 'tools/call', { name: 'cafe\u0301' }), token: 'private', expect: 'forward' },
  { name: 'tool " deploy", with the * scope, is forwarded untrimmed', ...modern(189, 'tools/call', { name: ' deploy' }), token: 'private', expect: 'forward' },
  { name: 'prompt summary is forwarded', ...modern(190, 'prompts/get', { name: 'summary' }), expect: 'forward' },
  { name: 'prompt SUMMARY is another name', ...modern(191, 'prompts/get', { name: 'SUMMARY' }), expect: { status: 403, code: FORBIDDEN_JSONRPC_CODE } },
  { name: 'a 2025 tool name in NFD is another name too', ...legacy(192, 'tools/call', { name: 'cafe\u0301' }), expect: { status: 403, code: FORBIDDEN_JSONRPC_CODE } },

  // Mirrored headers are checked on every message that carries them, whatever the revision.
  {
    name: 'a client response dressed as a call of secret_admin (Mcp-Method, Mcp-Name) is a mismatch',
    message: { jsonrpc: '2.0', id: 201, result: {} },
    headers: { 'mcp-protocol-version': V2025, 'mcp-method': 'tools/call', 'mcp-name': 'secret_admin' },
    expect: { status: 400, code: -32020, message: /Mcp-Method header value 'tools\/call' does not match a response, which has no method/ },
  },
  {
    name: 'a client response with Mcp-Name alone is a mismatch',
    message: { jsonrpc: '2.0', id: 202, error: { code: -1, message: 'declined' } },
    headers: { 'mcp-protocol-version': V2025, 'mcp-name': 'secret_admin' },
    expect: { status: 400, code: -32020, message: /Mcp-Name header value 'secret_admin' does not match a response/ },
  },
  {
    name: '2025 resources/subscribe of a public URI naming a private one in Mcp-Name is a mismatch',
    ...legacy(203, 'resources/subscribe', { uri: 'docs://public/readme' }),
    headers: { 'mcp-protocol-version': V2025, 'mcp-name': 'docs://private/plan' },
    expect: { status: 400, code: -32020, message: /Mcp-Name header value 'docs:\/\/private\/plan' does not match body value 'docs:\/\/public\/readme'/ },
  },
  {
    name: '2025 resources/unsubscribe naming another URI in Mcp-Name is a mismatch',
    ...legacy(204, 'resources/unsubscribe', { uri: 'docs://public/readme' }),
    headers: { 'mcp-protocol-version': V2025, 'mcp-method': 'resources/unsubscribe', 'mcp-name': 'docs://private/plan' },
    expect: { status: 400, code: -32020 },
  },
  {
    name: '2025 resources/subscribe whose Mcp-Name is its URI is forwarded',
    ...legacy(205, 'resources/subscribe', { uri: 'docs://public/readme' }),
    headers: { 'mcp-protocol-version': V2025, 'mcp-method': 'resources/subscribe', 'mcp-name': 'docs://public/readme' },
    expect: 'forward',
  },
  {
    name: 'Mcp-Name on a method that names nothing is a mismatch',
    ...modern(206, 'tools/list'),
    headers: { ...modernHeaders('tools/list'), 'mcp-name': 'secret_admin' },
    expect: { status: 400, code: -32020, message: /tools\/list names no tool, prompt, resource or task/ },
  },
  {
    name: '2026 tasks/get whose Mcp-Name is its task id (the tasks extension) is forwarded',
    ...modern(207, 'tasks/get', { taskId: 't1' }),
    headers: { ...modernHeaders('tasks/get'), 'mcp-name': 't1' },
    expect: 'forward',
  },
  {
    name: '2026 tasks/get naming another task in Mcp-Name is a mismatch',
    ...modern(208, 'tasks/get', { taskId: 't1' }),
    headers: { ...modernHeaders('tasks/get'), 'mcp-name': 't2' },
    expect: { status: 400, code: -32020 },
  },
];

/**
 * The id a refusal of `message` carries: the request's, or `null` for a response (JSON-RPC 2.0 §5: the id of a
 * message that is not a request cannot be answered).
 */
export function refusalId(message: Record<string, unknown>): unknown {
  return 'method' in message ? message.id : null;
}
