/**
 * The pins as stored: per server, per tool, the digest of the definition accepted, each field's digest, and the
 * definition itself when it is small, so that a difference can be shown field by field. One JSON document in a pin
 * file (`MCP_AUTH_PIN_FILE`); one entry per tool in the shared store. Bounded in bytes and entries: a pin file past
 * the bounds is refused, as a corrupt one is, never read in part.
 */
import { ConfigurationError } from '../../core/kernel/errors.js';
import { asRecord } from '../../core/wire/as-record.js';
import { canonicalJson, PINNED_FIELDS, type PinnedField, type ToolDigest } from './tool-digest.js';

/** The pin of one tool: the definition an operator accepted (or the gateway saw first). */
export interface ToolPin {
  /** The digest of the pinned definition (`sha256:…`, see `digestTool`). */
  readonly digest: string;
  /** Each pinned field's digest. */
  readonly fields: Readonly<Partial<Record<PinnedField, string>>>;
  /** When it was pinned, as an ISO 8601 time. */
  readonly pinnedAt: string;
  /** How: `first-sight`, `update` or `accept`. */
  readonly by: PinSource;
  /** The pinned fields themselves, when their canonical JSON is at most {@link MAX_KEPT_DEFINITION_BYTES}. */
  readonly definition?: Readonly<Partial<Record<PinnedField, unknown>>>;
}

/** How a pin was made. */
export type PinSource = 'first-sight' | 'update' | 'accept';

/** Every pin: server name → tool name (the server's own) → pin. The single upstream is named `upstream`. */
export type PinSet = Map<string, Map<string, ToolPin>>;

/** The format's version, written in every pin file. */
export const PIN_DOCUMENT_VERSION = 1;
/** Largest pin file read, in bytes: 16 MiB. */
export const MAX_PIN_DOCUMENT_BYTES = 16 * 1_048_576;
/** Most tools pinned per server, as many as the gateway lists of one server. */
export const MAX_PINNED_TOOLS_PER_SERVER = 10_000;
/** Most servers with pins. */
export const MAX_PINNED_SERVERS = 1_000;
/** Largest definition kept beside its digest, in bytes of canonical JSON: larger ones are pinned by digest only. */
export const MAX_KEPT_DEFINITION_BYTES = 32 * 1_024;
/** Longest tool or server name pinned. */
const MAX_NAME_LENGTH = 256;

/** The name of the single upstream (`MCP_AUTH_UPSTREAM` or `MCP_AUTH_UPSTREAM_COMMAND`) in pins, as the connect pages name it. */
export const SINGLE_UPSTREAM_PIN_NAME = 'upstream';

/**
 * The pin of a definition just digested.
 *
 * @example
 * const pin = pinOf(digestTool(tool), 'accept');
 */
export function pinOf(digested: ToolDigest, by: PinSource, at: Date = new Date()): ToolPin {
  const kept = canonicalJson(digested.definition).length <= MAX_KEPT_DEFINITION_BYTES;
  return { digest: digested.digest, fields: { ...digested.fields }, pinnedAt: at.toISOString(), by, ...(kept ? { definition: digested.definition } : {}) };
}

/**
 * Reads a pin document (a pin file's text).
 *
 * @param source - What it was read from, named in errors (e.g. `MCP_AUTH_PIN_FILE`).
 * @throws ConfigurationError naming `source` and what is wrong: not JSON, another version, past a bound, or an
 *   entry that is not a pin.
 */
export function parsePinDocument(text: string, source: string): PinSet {
  if (text.length > MAX_PIN_DOCUMENT_BYTES) throw new ConfigurationError(source, `holds more than ${MAX_PIN_DOCUMENT_BYTES} bytes; a pin file is that size at most`);
  let document: unknown;
  try {
    document = JSON.parse(text);
  } catch {
    throw new ConfigurationError(source, 'is not JSON: fix it, or move it away and run mcp-oauth-guard pins update');
  }
  const record = asRecord(document);
  const listed = asRecord(record?.servers);
  if (record?.version !== PIN_DOCUMENT_VERSION || listed === undefined) {
    throw new ConfigurationError(source, `is not a pin file: expected {"version": ${PIN_DOCUMENT_VERSION}, "servers": {…}}`);
  }
  const servers = Object.entries(listed);
  if (servers.length > MAX_PINNED_SERVERS) throw new ConfigurationError(source, `pins more than ${MAX_PINNED_SERVERS} servers`);
  const pins: PinSet = new Map();
  for (const [server, value] of servers) {
    const tools = asRecord(value);
    if (tools === undefined) throw new ConfigurationError(`${source}: servers.${server}`, 'is not an object of pins by tool name');
    const entries = Object.entries(tools);
    if (entries.length > MAX_PINNED_TOOLS_PER_SERVER) throw new ConfigurationError(`${source}: servers.${server}`, `pins more than ${MAX_PINNED_TOOLS_PER_SERVER} tools`);
    pins.set(server, new Map(entries.map(([tool, pin]) => [tool, readPin(pin, `${source}: servers.${server}.${tool}`)])));
  }
  return pins;
}

/** One stored pin, checked. @throws ConfigurationError naming `path`. */
export function readPin(stored: unknown, path: string): ToolPin {
  const value = asRecord(stored);
  const given = asRecord(value?.fields);
  if (value === undefined || typeof value.digest !== 'string' || !DIGEST.test(value.digest) || given === undefined) {
    throw new ConfigurationError(path, 'is not a pin: expected {"digest": "sha256:<hex>", "fields": {…}, …}');
  }
  const fields: Partial<Record<PinnedField, string>> = {};
  for (const [field, digest] of Object.entries(given)) {
    if (!(PINNED_FIELDS as readonly string[]).includes(field) || typeof digest !== 'string' || !DIGEST.test(digest)) throw new ConfigurationError(`${path}.fields.${field}`, 'is not the digest of a pinned field');
    fields[field as PinnedField] = digest;
  }
  const by = PIN_SOURCES.includes(value.by as PinSource) ? (value.by as PinSource) : 'update';
  const definition = asRecord(value.definition);
  return {
    digest: value.digest,
    fields,
    pinnedAt: typeof value.pinnedAt === 'string' ? value.pinnedAt.slice(0, 64) : '',
    by,
    ...(definition ? { definition } : {}),
  };
}

/** The pin document of `pins`, as a pin file holds it: servers and tools in name order, two-space indented. */
export function serializePinDocument(pins: PinSet): string {
  const servers: Record<string, Record<string, ToolPin>> = {};
  for (const server of [...pins.keys()].sort()) {
    const tools = pins.get(server)!;
    servers[server] = Object.fromEntries([...tools.keys()].sort().map((tool) => [tool, tools.get(tool)!]));
  }
  return `${JSON.stringify({ version: PIN_DOCUMENT_VERSION, servers }, null, 2)}\n`;
}

/** Whether a tool or server name may be pinned (names past the bound are never remembered). */
export function isPinnableName(name: string): boolean {
  return name.length > 0 && name.length <= MAX_NAME_LENGTH;
}

/**
 * The name of a listed tool when it may be pinned (a string within the name bound), else `undefined`: the one name
 * rule of the gateway, its `pins` commands and `check`. A tool without such a name is never pinned, so `enforce`
 * hides it.
 *
 * @example
 * pinnableToolName({ name: 'add' }); // 'add'
 * pinnableToolName({ name: 42 }); // undefined
 */
export function pinnableToolName(tool: unknown): string | undefined {
  const name = asRecord(tool)?.name;
  return typeof name === 'string' && isPinnableName(name) ? name : undefined;
}

const DIGEST = /^sha256:[0-9a-f]{64}$/;
const PIN_SOURCES: readonly PinSource[] = ['first-sight', 'update', 'accept'];
