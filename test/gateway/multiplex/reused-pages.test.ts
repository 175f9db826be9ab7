// Which list pages a server set may serve again to any caller (2026-07-28 caching hints), and that what it keeps
// stays bounded and fresh.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MAX_PAGE_REUSE_MS, ReusedPages, reuseMsOf } from '../../../src/gateway/multiplex/reused-pages.js';

describe('reuseMsOf', () => {
  it('is the ttlMs of a complete public result, at most the cap, and 0 for anything else', () => {
    assert.equal(reuseMsOf({ tools: [], resultType: 'complete', cacheScope: 'public', ttlMs: 60_000 }), 60_000);
    assert.equal(reuseMsOf({ tools: [], cacheScope: 'public', ttlMs: 10 * MAX_PAGE_REUSE_MS }), MAX_PAGE_REUSE_MS);
    assert.equal(reuseMsOf({ tools: [], cacheScope: 'private', ttlMs: 60_000 }), 0);
    assert.equal(reuseMsOf({ tools: [], cacheScope: 'public' }), 0, 'no ttlMs: immediately stale');
    assert.equal(reuseMsOf({ tools: [], cacheScope: 'public', ttlMs: -5 }), 0);
    assert.equal(reuseMsOf({ tools: [], cacheScope: 'public', ttlMs: '60000' }), 0);
    assert.equal(reuseMsOf({ resultType: 'input_required', cacheScope: 'public', ttlMs: 60_000 }), 0);
    assert.equal(reuseMsOf(undefined), 0);
  });
});

describe('ReusedPages', () => {
  it('serves a page until it is stale, and forgets one server without touching another', () => {
    const pages = new ReusedPages<string>();
    const a = ReusedPages.key('alpha', 'tools/list', '2026-07-28', undefined);
    const b = ReusedPages.key('beta', 'tools/list', '2026-07-28', 'c1');
    pages.set(a, 'page a', 6, 1_000, 0);
    pages.set(b, 'page b', 6, 1_000, 0);
    assert.equal(pages.get(a, 999), 'page a');
    assert.equal(pages.get(a, 1_000), undefined, 'stale at its ttl');
    pages.forget('beta');
    assert.equal(pages.get(b, 10), undefined);
    pages.set(a, 'page a', 6, 0, 0);
    assert.equal(pages.get(a, 1), undefined, 'a page that may not be reused is not kept');
  });

  it('stays bounded whatever cursors the servers hand out', () => {
    const pages = new ReusedPages<string>();
    for (let i = 0; i < 10_000; i++) pages.set(ReusedPages.key('alpha', 'tools/list', '2026-07-28', `c${i}`), 'x', 1_000_000, 60_000, 0);
    let kept = 0;
    for (let i = 0; i < 10_000; i++) if (pages.get(ReusedPages.key('alpha', 'tools/list', '2026-07-28', `c${i}`), 1) !== undefined) kept++;
    assert.ok(kept > 0 && kept <= 256, `${kept} pages kept`);
    assert.ok(kept * 1_000_000 <= 16 * 1_048_576, 'within the bound in code units');
    assert.notEqual(pages.get(ReusedPages.key('alpha', 'tools/list', '2026-07-28', 'c9999'), 1), undefined, 'the newest is kept');
  });
});
