/**
 * The kept lists of an upstream in connected mode ({@link KeptLists}): the tool, prompt and resource template
 * definitions it last listed for a user who had connected it, sealed in the token store beside its profile, each
 * list under a key of its own (`keptStoreValue`: read again across replicas, written only on change, retried after a
 * refusal), in as many records as it takes (`keptChunkedRecords`: a reader never sees a mix of two lists).
 *
 * Only definitions are kept, the same for every user of most servers: the fields MCP defines for an item of the
 * list, never its `_meta` nor a vendor's field, which may carry what one user's answer was given. The resources
 * themselves (`resources/list`) are not kept: they are most often the user's own data. An upstream that tailors
 * definitions to each user is for `MCP_AUTH_CONNECT_LISTS=hide`, which keeps nothing.
 */
import { formatLogLine, writeSafely, type LineSink } from '../../core/kernel/log-line.js';
import { LIST_SPECS } from '../../core/policy/policy-rules.js';
import type { KeptLists } from '../upstream-auth/kept-lists.js';
import { keptChunkedRecords } from './kept-chunked-records.js';
import { KEPT_VALUE_RECHECK_MS, keptStoreValue, type KeptJson, type KeptStoreValue, type Settles } from './kept-store-value.js';
import { upstreamProfileKey } from './kept-upstream-profile.js';
import { serverPublicName } from './oauth/gateway-client-urls.js';
import type { Sealer } from './oauth/sealer.js';
import type { TokenStore } from './store/token-store.js';

/**
 * Largest list kept in the store, in bytes of JSON: 1 MiB, a few hundred tools with large schemas (a vendor's server
 * of 90 tools takes 100 to 300 KB). It is cut into records of at most 11 KiB (`MAX_KEPT_CHUNK_BYTES`), each under the
 * store's 16 KiB a value once sealed: about 100 records for a list of 1 MiB, at most `mostKeptChunks` (187), all
 * durable keys under `profile:`. A longer list is kept up to the last whole item that fits, and a log line says so
 * once. Each process holds the lists it knows in memory too, each with its JSON: at most about 6 MiB an upstream (its
 * three lists), most often far less.
 */
export const MAX_KEPT_LIST_BYTES = 1024 * 1024;

/**
 * The fields kept of an item of each kept list: those MCP defines (2025-06-18 to 2026-07-28), but `_meta`. The
 * first names the item, and an item without it (a string) is not kept. Nested values are kept as listed: the pins
 * digest them so (`tool-digest.ts`), and a kept tool must read as the one pinned.
 */
const KEPT_FIELDS: ReadonlyMap<string, readonly string[]> = new Map([
  ['tools/list', ['name', 'title', 'description', 'inputSchema', 'outputSchema', 'annotations', 'icons', 'execution']],
  ['prompts/list', ['name', 'title', 'description', 'arguments', 'icons']],
  ['resources/templates/list', ['uriTemplate', 'name', 'title', 'description', 'mimeType', 'annotations', 'icons']],
]);

/** A kept list as sealed in the store. */
interface StoredList {
  readonly items: readonly object[];
}

/**
 * The store key of `server`'s kept list `method` (its head record; its chunks' keys start with it and `:`), beside
 * its profile's (server names hold no `:`).
 *
 * @example keptListKey('notes', 'tools/list'); // 'profile:notes:tools'
 */
export function keptListKey(server: string, method: string): string {
  return `${upstreamProfileKey(server)}:${LIST_SPECS.get(method)!.resultKey}`;
}

/** Options of {@link keptUpstreamLists}. */
export interface KeptUpstreamListsOptions {
  readonly store: TokenStore;
  readonly sealer: Sealer;
  /** The configuration file's server name, `""` for the single upstream. */
  readonly server: string;
  /**
   * Receives one log line per list and process when a list was longer than what is kept (`connected_list_cut`):
   * past {@link MAX_KEPT_LIST_BYTES}, or paged (only its first page is kept).
   */
  readonly log?: LineSink;
  /** Clock, in milliseconds. Default `Date.now`. */
  readonly now?: () => number;
}

/**
 * The lists of one upstream, kept in the token store. A list learnt is the first page a connected user got (a
 * later page, reached with a cursor, is not asked for): its items' definitions, in the upstream's order, up to
 * {@link MAX_KEPT_LIST_BYTES} of JSON.
 *
 * @example
 * const kept = keptUpstreamLists({ store, sealer, server: 'notes' });
 * await kept.learnt('tools/list', { tools: [{ name: 'add', inputSchema: { type: 'object' }, _meta: { user: 'alice' } }] });
 * await kept.read('tools/list'); // [{ name: 'add', inputSchema: { type: 'object' } }]
 */
export function keptUpstreamLists(options: KeptUpstreamListsOptions): KeptLists & Settles {
  const lists = new Map<string, KeptStoreValue<StoredList>>();
  for (const [method, fields] of KEPT_FIELDS) {
    const keep = (value: unknown): KeptJson<StoredList> | undefined => keptListOf(value, fields);
    const key = keptListKey(options.server, method);
    const records = keptChunkedRecords({ store: options.store, sealer: options.sealer, key, maxBytes: MAX_KEPT_LIST_BYTES });
    lists.set(method, keptStoreValue({ records, keep, maxBytes: MAX_KEPT_LIST_BYTES, ...(options.now ? { now: options.now } : {}) }));
  }
  /** The lists already said to be cut, so that the log line is written once per list. */
  const told = new Set<string>();
  const now = options.now ?? Date.now;
  /** When each list's answer was last wanted: read at most every `KEPT_VALUE_RECHECK_MS`. */
  const wantedAt = new Map<string, number>();
  return {
    wants(method) {
      if (!lists.has(method) || now() - (wantedAt.get(method) ?? -Infinity) < KEPT_VALUE_RECHECK_MS) return false;
      wantedAt.set(method, now());
      return true;
    },
    async read(method) {
      return (await lists.get(method)?.read())?.items;
    },
    async learnt(method, result) {
      const kept = lists.get(method);
      const listed = (result as Record<string, unknown> | null)?.[LIST_SPECS.get(method)?.resultKey ?? ''];
      if (kept === undefined || !Array.isArray(listed) || !isComplete(result)) return;
      const items = definitionsOf(listed, KEPT_FIELDS.get(method)!);
      const fitting = fittingPrefix(items);
      const paged = typeof (result as Record<string, unknown>).nextCursor === 'string';
      if ((fitting.length < items.length || paged) && options.log && !told.has(method)) {
        told.add(method);
        const fields = { server: serverPublicName(options.server), list: method, listed: items.length, kept: fitting.length, paged, maxBytes: MAX_KEPT_LIST_BYTES };
        writeSafely(options.log, formatLogLine('connected_list_cut', fields));
      }
      await kept.learnt({ items: fitting });
    },
    async settled() {
      await Promise.all([...lists.values()].map((kept) => kept.settled()));
    },
  };
}

/** Whether a list result is a final one (2026-07-28 `resultType`: absent before, `complete` then). */
function isComplete(result: unknown): boolean {
  const type = (result as Record<string, unknown>).resultType;
  return type === undefined || type === 'complete';
}

/** A stored value's kept list and its JSON, or undefined when it has not the shape of one. */
function keptListOf(value: unknown, fields: readonly string[]): KeptJson<StoredList> | undefined {
  const items = (value as Partial<StoredList> | null | undefined)?.items;
  if (!Array.isArray(items)) return undefined;
  const list: StoredList = { items: definitionsOf(items, fields) };
  return { value: list, json: JSON.stringify(list) };
}

/** The definitions of `listed`: of each item that is an object named by a string `fields[0]`, the `fields` it has. */
function definitionsOf(listed: readonly unknown[], fields: readonly string[]): object[] {
  const items: object[] = [];
  for (const item of listed) {
    if (typeof item !== 'object' || item === null || Array.isArray(item)) continue;
    const source = item as Record<string, unknown>;
    if (typeof source[fields[0]!] !== 'string') continue;
    const kept: Record<string, unknown> = {};
    for (const field of fields) if (source[field] !== undefined) kept[field] = source[field];
    items.push(kept);
  }
  return items;
}

/** The longest prefix of `items` whose stored JSON (`{"items":[…]}`) takes at most {@link MAX_KEPT_LIST_BYTES}. */
function fittingPrefix(items: readonly object[]): readonly object[] {
  let bytes = Buffer.byteLength('{"items":[]}');
  for (let i = 0; i < items.length; i++) {
    bytes += Buffer.byteLength(JSON.stringify(items[i])) + (i > 0 ? 1 : 0);
    if (bytes > MAX_KEPT_LIST_BYTES) return items.slice(0, i);
  }
  return items;
}
