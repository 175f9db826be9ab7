import type { JsonRpcMessage, JsonRpcResponse } from '../core/wire/jsonrpc.js';
import {
  catalogCallResult,
  DEFAULT_CATALOG_MAX_ITEMS,
  DEFAULT_CATALOG_MAX_PAGES,
  listServerSession,
  type CatalogCall,
  type ListedServerCatalog,
} from '../core/policy/read-server-catalog.js';

/**
 * Listing what an SDK server registered (tools, prompts, resources, resource templates), for the policy coverage
 * check the middleware logs at start-up: the server is connected to one end of an in-memory transport pair (each
 * SDK's `InMemoryTransport`), and its lists are read through the other, as a 2025 client would read them, by the
 * gateway's own catalog reader. Its public protocol, not its private registries, so that any SDK server fits.
 */

/** The end of an in-memory transport pair the listing talks through; both SDKs' `InMemoryTransport` fit. */
export interface ListingTransport {
  onmessage?: ((message: never) => void) | undefined;
  start(): Promise<void>;
  send(message: never): Promise<void>;
  close(): Promise<void>;
}

/** Time allowed for each listing request, in milliseconds: an in-memory server answers at once. */
const REQUEST_TIMEOUT_MS = 10_000;

/** Who answers, as the listing's errors name it. */
const LISTER = 'the server';

/** What both SDKs' servers offer a listing: connect to one end of a transport pair, and close. */
export interface ListableServer<Transport> {
  connect(transport: Transport): Promise<void>;
  close(): Promise<void>;
}

/**
 * Connects `server` to one end of `pair` (an SDK's `InMemoryTransport.createLinkedPair()`), lists it through the
 * other, and closes it.
 */
export async function listSdkServerOver<Transport>(server: ListableServer<Transport>, [client, own]: readonly [ListingTransport, Transport]): Promise<ListedServerCatalog> {
  await server.connect(own);
  try {
    return await listThroughTransport(client);
  } finally {
    await server.close().catch(() => {});
  }
}

/**
 * Lists a server already connected to the other end of `transport`, then closes `transport`.
 *
 * @throws an Error saying what failed (no answer in time, a JSON-RPC error, a list without its array).
 */
export async function listThroughTransport(transport: ListingTransport): Promise<ListedServerCatalog> {
  const pending = new Map<number, (response: JsonRpcResponse) => void>();
  transport.onmessage = ((message: JsonRpcMessage) => {
    // Requests from the server (sampling, roots, …) have nobody to answer them here; only responses are read.
    if ('id' in message && !('method' in message)) pending.get(message.id as number)?.(message);
  }) as never;
  await transport.start();
  let nextId = 1;
  const call: CatalogCall = (method, params) => {
    const id = nextId++;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        pending.delete(id);
        reject(new Error(`${method}: no answer within ${REQUEST_TIMEOUT_MS} ms`));
      }, REQUEST_TIMEOUT_MS);
      timer.unref();
      pending.set(id, (response) => {
        clearTimeout(timer);
        pending.delete(id);
        try {
          resolve(catalogCallResult(response, method, LISTER));
        } catch (error) {
          reject(error);
        }
      });
      transport.send({ jsonrpc: '2.0', id, method, ...(params ? { params } : {}) } as never).catch(reject);
    });
  };
  const notify = (method: string): void => void transport.send({ jsonrpc: '2.0', method } as never).catch(() => {});
  try {
    return await listServerSession(call, notify, { maxPages: DEFAULT_CATALOG_MAX_PAGES, maxItems: DEFAULT_CATALOG_MAX_ITEMS });
  } finally {
    await transport.close().catch(() => {});
  }
}
