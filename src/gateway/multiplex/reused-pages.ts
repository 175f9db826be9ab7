/**
 * Servers' list pages that any caller may be served again, as MCP 2026-07-28 allows a shared gateway to
 * (`server/utilities/caching`): a page whose result is `cacheScope: "public"` with a positive `ttlMs` "does not
 * contain user-specific data", so a merged list may reuse it for every caller while it is fresh, instead of
 * asking the server again. Each page is still renamed, selected and filtered by the caller's policy afterwards,
 * exactly as a page just fetched.
 *
 * Freshness is the server's `ttlMs`, at most {@link MAX_PAGE_REUSE_MS}, or the operator's `listReuseMs` for a server
 * whose lists are the same for everyone; a `list_changed` notification from the server drops its pages at once.
 * Without `listReuseMs`, pages of a session (revisions before 2026-07-28 carry no hints) are never kept. Only a
 * server's own pages are kept, never an answer the gateway gave in its place (the connect flow's, one caller's).
 * Bounded in entries and in bytes, whatever cursors the servers hand out.
 */

import { MAX_PAGE_REUSE_MS } from '../config/server-config.js';

export { MAX_PAGE_REUSE_MS };
/** Most pages kept. */
const MAX_PAGES = 256;
/** Most bytes of pages kept, together: 16 MiB. */
const MAX_PAGE_BYTES = 16 * 1_048_576;

/** A page as kept: whatever the merge needs of it, and when it stops being fresh. */
interface KeptPage<P> {
  readonly page: P;
  readonly bytes: number;
  readonly freshUntil: number;
}

/**
 * How long a list result may be reused for any caller, in milliseconds, or 0 when it may not: only a complete
 * `public` result with a positive `ttlMs` (a result of a retried request, with `requestState`, is never one).
 *
 * @example
 * reuseMsOf({ tools: [], resultType: 'complete', cacheScope: 'public', ttlMs: 60_000 }); // 60000
 * reuseMsOf({ tools: [], cacheScope: 'private', ttlMs: 60_000 }); // 0
 */
export function reuseMsOf(result: Readonly<Record<string, unknown>> | undefined): number {
  if (!result || result.cacheScope !== 'public' || (result.resultType !== undefined && result.resultType !== 'complete')) return 0;
  const ttlMs = result.ttlMs;
  return typeof ttlMs === 'number' && Number.isFinite(ttlMs) && ttlMs > 0 ? Math.min(ttlMs, MAX_PAGE_REUSE_MS) : 0;
}

/** The pages kept, by server, method, revision and the server's own cursor. */
export class ReusedPages<P> {
  private readonly pages = new Map<string, KeptPage<P>>();
  private bytes = 0;

  /** The key of a page: `cursor` is the server's own (from a verified merged cursor), or undefined for the first page. */
  static key(server: string, method: string, protocolVersion: string, cursor: string | undefined): string {
    return `${server}\n${method}\n${protocolVersion}\n${cursor ?? ''}`;
  }

  /** The page under `key` while it is fresh. */
  get(key: string, now = Date.now()): P | undefined {
    const kept = this.pages.get(key);
    if (kept === undefined) return undefined;
    if (now >= kept.freshUntil) {
      this.remove(key, kept);
      return undefined;
    }
    return kept.page;
  }

  /** Keeps `page` (of `bytes` bytes) for `reuseMs` milliseconds; a page too large to keep is not kept. */
  set(key: string, page: P, bytes: number, reuseMs: number, now = Date.now()): void {
    if (reuseMs <= 0 || bytes > MAX_PAGE_BYTES / 4) return;
    const previous = this.pages.get(key);
    if (previous) this.remove(key, previous);
    // Oldest first: a Map keeps insertion order.
    for (const [oldKey, old] of this.pages) {
      if (this.pages.size < MAX_PAGES && this.bytes + bytes <= MAX_PAGE_BYTES) break;
      this.remove(oldKey, old);
    }
    this.pages.set(key, { page, bytes, freshUntil: now + reuseMs });
    this.bytes += bytes;
  }

  /** Drops every page of `server` (its lists changed), or of every server. */
  forget(server?: string): void {
    for (const [key, kept] of this.pages) if (server === undefined || key.startsWith(`${server}\n`)) this.remove(key, kept);
  }

  private remove(key: string, kept: KeptPage<P>): void {
    this.pages.delete(key);
    this.bytes -= kept.bytes;
  }
}
