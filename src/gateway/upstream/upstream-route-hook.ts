import type { GuardedRequest } from '../../http/http-handler.js';
import { decorateUpstream } from './decorated-upstream.js';
import type { Upstream } from './upstream.js';

/** Told of each request handed to a named upstream, before it is forwarded. Keep it cheap: it runs per request. */
export type UpstreamRouteHook = (req: GuardedRequest, upstream: string) => void;

/**
 * The upstream, with `onRouted` told of each request handed to it (with the upstream's name) before it forwards it:
 * how the request log learns which of several servers a request went to. The request is the client's when the
 * request was routed, or one the gateway made itself (a merged list's part), which no log entry has.
 *
 * Everything else is the upstream's own (see `decorateUpstream`).
 *
 * @example
 * const notes = withRouteHook(createUpstreamProxy({ name: 'notes', upstream: notesUrl }), requestLog.onServerRouted);
 */
export function withRouteHook<U extends Upstream>(upstream: U, onRouted: UpstreamRouteHook): U {
  const name = upstream.name;
  const handle = upstream.handle;
  const hooked: Pick<Upstream, 'handle'> = {
    handle(req, res, context) {
      try {
        onRouted(req, name);
      } catch {
        // A log hook must never break forwarding.
      }
      return handle.call(upstream, req, res, context);
    },
  };
  return decorateUpstream(upstream, hooked as Partial<U>);
}
