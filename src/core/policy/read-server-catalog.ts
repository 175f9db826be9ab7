import { JsonRpcErrorCode, type JsonRpcResponse } from '../wire/jsonrpc.js';
import { LATEST_SESSION_PROTOCOL_VERSION } from '../mcp/protocol-version.js';
import type { ServerCatalog } from './policy-coverage.js';

/**
 * Listing what an MCP server offers (tools, prompts, resources, resource templates) through any JSON-RPC channel,
 * for the policy coverage check: the gateway's listing of its upstream (HTTP or stdio) and the SDK adapters' listing
 * of the server they serve read the lists here, page by page, within bounds on pages and items. The channel (and
 * its bounds in time and size) is the caller's.
 */

/**
 * A catalog as listed: what the server offers, and the lists a bound cut off.
 *
 * @example
 * ```ts
 * const catalog: ListedServerCatalog = {
 *   tools: ['notes_add', 'notes_list'],
 *   resourceTemplates: ['notes://{id}'],
 *   truncated: [], // or e.g. ['tools/list'] when a bound cut the tool list short
 * };
 * ```
 */
export interface ListedServerCatalog extends ServerCatalog {
  /** List methods whose answer was cut off by a bound (then rules may wrongly look unmatched). */
  truncated: string[];
  /** The tools as listed, whole (for their pins), when the listing was asked to keep them (`keepToolDefinitions`). */
  toolDefinitions?: Record<string, unknown>[];
}

/** Bounds of a listing on the number of pages and items. */
export interface CatalogReadLimits {
  /** Most pages read per list method; a longer list is reported as truncated. */
  maxPages: number;
  /** Most items kept per list method. */
  maxItems: number;
  /** Keep each listed tool whole in `toolDefinitions`, not only its name. Default false. */
  keepToolDefinitions?: boolean;
}

/** Default {@link CatalogReadLimits.maxPages}. */
export const DEFAULT_CATALOG_MAX_PAGES = 20;
/** Default {@link CatalogReadLimits.maxItems}. */
export const DEFAULT_CATALOG_MAX_ITEMS = 10_000;

/** One JSON-RPC call to the server: its result, or a thrown error ({@link CatalogCallError} for a JSON-RPC error). */
export type CatalogCall = (method: string, params?: Record<string, unknown>) => Promise<Record<string, unknown>>;

/** A JSON-RPC error answer to a listing call, as a thrown error. */
export class CatalogCallError extends Error {
  constructor(
    readonly rpcCode: number,
    message: string,
  ) {
    super(message);
  }
}

/** The client the listing introduces itself as in `initialize`. */
const CLIENT_INFO = { name: 'mcp-oauth-guard', version: 'policy-coverage' };

const LISTS = [
  { capability: 'tools', method: 'tools/list', resultKey: 'tools', itemKey: 'name', catalogKey: 'tools' },
  { capability: 'prompts', method: 'prompts/list', resultKey: 'prompts', itemKey: 'name', catalogKey: 'prompts' },
  { capability: 'resources', method: 'resources/list', resultKey: 'resources', itemKey: 'uri', catalogKey: 'resources' },
  { capability: 'resources', method: 'resources/templates/list', resultKey: 'resourceTemplates', itemKey: 'uriTemplate', catalogKey: 'resourceTemplates' },
] as const;

/** The `initialize` parameters of a listing: the latest session revision, no capabilities. */
export function catalogInitializeParams(): Record<string, unknown> {
  return { protocolVersion: LATEST_SESSION_PROTOCOL_VERSION, capabilities: {}, clientInfo: CLIENT_INFO };
}

/** The `clientInfo` a stateless (2026-07-28) listing sends in each request's `_meta`. */
export function catalogClientInfo(): Record<string, unknown> {
  return { ...CLIENT_INFO };
}

/**
 * The result of a listing call's response, or a thrown error saying what `lister` answered instead.
 *
 * @param lister - Who answered, in the error, e.g. `the upstream`.
 * @throws {@link CatalogCallError} for a JSON-RPC error; an Error for no answer or a result that is not an object.
 */
export function catalogCallResult(response: JsonRpcResponse | undefined, method: string, lister: string): Record<string, unknown> {
  if (response === undefined) throw new Error(`${method}: ${lister} sent no JSON-RPC answer`);
  if ('error' in response) throw new CatalogCallError(Number(response.error?.code), `${method}: ${lister} answered error ${String(response.error?.code)}`);
  const result = (response as { result?: unknown }).result;
  if (typeof result !== 'object' || result === null || Array.isArray(result)) throw new Error(`${method}: ${lister} answered a result that is not an object`);
  return result as Record<string, unknown>;
}

/**
 * Opens a session through `call` (`initialize`, then `notifications/initialized` through `notify`) and reads every
 * list the server declares ({@link readServerCatalog}).
 */
export async function listServerSession(call: CatalogCall, notify: (method: string) => void, limits: CatalogReadLimits): Promise<ListedServerCatalog> {
  const result = await call('initialize', catalogInitializeParams());
  notify('notifications/initialized');
  const capabilities = result.capabilities;
  return readServerCatalog(call, typeof capabilities === 'object' && capabilities !== null ? (capabilities as Record<string, unknown>) : {}, limits);
}

/**
 * Reads every list through `call`. With `capabilities` (from `initialize`), a kind the server does not declare
 * is an empty list and is not asked for; without (a stateless server), each list is asked for, and a kind it
 * answers with "method not found" is an empty list.
 */
export async function readServerCatalog(call: CatalogCall, capabilities: Record<string, unknown> | undefined, limits: CatalogReadLimits): Promise<ListedServerCatalog> {
  const catalog: ListedServerCatalog = { truncated: [] };
  for (const list of LISTS) {
    const names: string[] = [];
    catalog[list.catalogKey] = names;
    if (capabilities && (typeof capabilities[list.capability] !== 'object' || capabilities[list.capability] === null)) continue;
    let cursor: string | undefined;
    for (let page = 0; ; page++) {
      if (page === limits.maxPages) {
        catalog.truncated.push(list.method);
        break;
      }
      let result: Record<string, unknown>;
      try {
        result = await call(list.method, cursor === undefined ? {} : { cursor });
      } catch (error) {
        if (!capabilities && error instanceof CatalogCallError && error.rpcCode === JsonRpcErrorCode.MethodNotFound) break;
        throw error;
      }
      const items = result[list.resultKey];
      if (!Array.isArray(items)) throw new Error(`${list.method} answered without a "${list.resultKey}" array`);
      for (const item of items) {
        const name = (item as Record<string, unknown> | null)?.[list.itemKey];
        if (typeof name !== 'string') continue;
        names.push(name);
        if (list.catalogKey === 'tools' && limits.keepToolDefinitions) (catalog.toolDefinitions ??= []).push(item as Record<string, unknown>);
      }
      if (names.length > limits.maxItems) {
        names.length = limits.maxItems;
        catalog.truncated.push(list.method);
        break;
      }
      const next = result.nextCursor;
      if (typeof next !== 'string' || next === '' || next === cursor) break;
      cursor = next;
    }
  }
  return catalog;
}
