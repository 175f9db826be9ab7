import type { Upstream } from './upstream.js';

/**
 * `upstream` with some of its members replaced by `overrides` (a `handle` that does something first, say), every
 * other member read from `upstream` when asked: its getters (`inFlight`, `sessions`, a stdio upstream's
 * `processes`) keep reading its live state, and its methods run with `upstream` as `this`.
 *
 * Not by inheritance (`Object.create(upstream)`): an object that becomes another's prototype is given a prototype
 * map, and V8 then compiles the reads of its own fields in its methods less well, on every request it forwards
 * (measured: about 3 % more CPU per call through an HTTP upstream, every field read of its exchange slower).
 * The members forwarded here are looked up once, when the decoration is made; only those overridden are on the
 * request path.
 *
 * @example
 * const logged = decorateUpstream(upstream, { handle: (req, res, context) => { log(req); return upstream.handle(req, res, context); } });
 */
export function decorateUpstream<U extends Upstream>(upstream: U, overrides: Partial<U>): U {
  const decorated: Record<PropertyKey, unknown> = {};
  for (const key of Reflect.ownKeys(overrides)) decorated[key] = (overrides as Record<PropertyKey, unknown>)[key];
  for (let holder: object | null = upstream; holder !== null && holder !== Object.prototype; holder = Object.getPrototypeOf(holder) as object | null) {
    for (const key of Reflect.ownKeys(holder)) {
      if (key === 'constructor' || Object.hasOwn(decorated, key)) continue;
      Object.defineProperty(decorated, key, {
        get: () => {
          const value = (upstream as unknown as Record<PropertyKey, unknown>)[key];
          return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(upstream) : value;
        },
        set: (value: unknown) => {
          (upstream as unknown as Record<PropertyKey, unknown>)[key] = value;
        },
        enumerable: true,
        configurable: true,
      });
    }
  }
  return decorated as U;
}
