// An upstream with members replaced (a route hook, the pins) stays the upstream for everything else, read live, and
// is never made another object's prototype (which would slow every field read of its request path).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { decorateUpstream } from '../../../src/gateway/upstream/decorated-upstream.js';
import { withRouteHook } from '../../../src/gateway/upstream/upstream-route-hook.js';
import type { Upstream } from '../../../src/gateway/upstream/upstream.js';
import type { GuardedRequest, HttpHandlerContext } from '../../../src/http/http-handler.js';
import type { ServerResponse } from 'node:http';

/** An upstream as the kinds are made: a class with private state, a getter of it, and methods using `this`. */
class CountingUpstream {
  readonly name = 'notes';
  readonly transport = 'http' as const;
  #handled = 0;
  label = 'first';
  get inFlight(): number {
    return this.#handled;
  }
  handle(_req: GuardedRequest, _res: ServerResponse, _context: HttpHandlerContext): void {
    this.#handled++;
  }
  async close(): Promise<string> {
    return `closed after ${this.#handled}`;
  }
}

const asUpstream = (u: CountingUpstream): Upstream & CountingUpstream => u as unknown as Upstream & CountingUpstream;
const req = {} as GuardedRequest;
const res = {} as ServerResponse;
const context = {} as HttpHandlerContext;

describe('decorateUpstream', () => {
  it('uses the overrides, and reads every other member of the upstream live, its methods running on it', async () => {
    const upstream = asUpstream(new CountingUpstream());
    const seen: string[] = [];
    const decorated = decorateUpstream(upstream, {
      handle(r, s, c) {
        seen.push('hook');
        return upstream.handle(r, s, c);
      },
    });
    decorated.handle(req, res, context);
    decorated.handle(req, res, context);
    assert.deepEqual(seen, ['hook', 'hook']);
    assert.equal(decorated.inFlight, 2, 'the getter reads the upstream state as it is now');
    assert.equal(decorated.name, 'notes');
    assert.equal(await decorated.close(), 'closed after 2', 'a method runs with the upstream as this (its private state)');
    decorated.label = 'second';
    assert.equal(upstream.label, 'second', 'a write goes to the upstream');
  });

  it('forwards symbol-keyed members, and gives one function for a forwarded method however often it is read', () => {
    const mark = Symbol('mark');
    const upstream = Object.assign(asUpstream(new CountingUpstream()), { [mark]: 'kept' });
    const inner = withRouteHook(upstream, () => {});
    // The outer wrapper replaces another member: its `handle` is the inner one's, read on every request.
    const outer = decorateUpstream(inner, { supportsGet: false } as Partial<typeof inner>);
    assert.equal((outer as unknown as Record<symbol, unknown>)[mark], 'kept');
    assert.equal(outer.close, outer.close, 'a forwarded method is bound once');
    outer.handle(req, res, context);
    assert.equal(upstream.inFlight, 1, "the inner wrapper's handle reached the upstream");
    assert.equal(Object.keys(outer).includes('inFlight'), Object.keys(upstream).includes('inFlight'), 'enumerable as on the upstream');
  });

  it('never makes the upstream a prototype', () => {
    const upstream = asUpstream(new CountingUpstream());
    const decorated = withRouteHook(upstream, () => {});
    assert.equal(Object.getPrototypeOf(decorated), Object.prototype);
    assert.notEqual(Object.getPrototypeOf(decorated), upstream);
  });

  it('tells the route hook of each request with the name, and a throwing hook never stops the request', () => {
    const upstream = asUpstream(new CountingUpstream());
    const names: string[] = [];
    withRouteHook(upstream, (_r, name) => names.push(name)).handle(req, res, context);
    withRouteHook(upstream, () => {
      throw new Error('log hook failed');
    }).handle(req, res, context);
    assert.deepEqual(names, ['notes']);
    assert.equal(upstream.inFlight, 2);
  });
});
