import type { IncomingHttpHeaders, ServerResponse } from 'node:http';
import type { AuthInfo } from '../../core/kernel/auth-info.js';
import { callerOrIssuerKey } from '../../core/kernel/caller-key.js';
import type { JsonRpcId, JsonRpcRequest } from '../../core/wire/jsonrpc.js';
import type { GuardedRequest, HttpHandlerContext } from '../../http/http-handler.js';
import { EVENT_STREAM_MEDIA_TYPE, JSON_MEDIA_TYPE, MCP_POST_ACCEPT, mediaType } from '../../http/media-type.js';
import { startEventStream, writeEvent } from '../../http/write-response.js';
import { CapturedResponse } from './captured-response.js';
import { ListChangedWindow } from './list-changed-window.js';
import { EventIdVector, EventRelabeller } from './relabelled-events.js';
import type { ResourceRoutes } from './resource-routes.js';
import type { SetMember } from './set-member.js';

/** `_meta` key naming the subscription a notification belongs to (MCP 2026-07-28 `subscriptions/listen`). */
export const SUBSCRIPTION_ID_META_KEY = 'io.modelcontextprotocol/subscriptionId';

/** What a `subscriptions/listen` asks for (its `params.notifications`). */
interface ListenFilter {
  toolsListChanged?: boolean;
  promptsListChanged?: boolean;
  resourcesListChanged?: boolean;
  resourceSubscriptions?: string[];
}

const LIST_KINDS = [
  ['toolsListChanged', 'tools', 'notifications/tools/list_changed'],
  ['promptsListChanged', 'prompts', 'notifications/prompts/list_changed'],
  ['resourcesListChanged', 'resources', 'notifications/resources/list_changed'],
] as const;

/**
 * `subscriptions/listen` (MCP 2026-07-28) over a server set: the gateway acknowledges the client's filter first,
 * then asks each server concerned (the list kinds it offers, the subscribed URIs it holds) with its part of the
 * filter and the client's own request id (so that each server stamps its notifications with the client's
 * subscription id), and merges their notifications into one stream carrying only what the client asked for: the
 * list kinds it named, and updates of a subscribed URI from the server that holds it.
 * `list_changed` of one kind is collapsed by a {@link ListChangedWindow} (one more following the window when any
 * were held back). The stream ends when the client cancels it (`notifications/cancelled`), leaves, or every
 * server's stream has ended.
 */
export class ListenFanOut {
  private readonly active = new Map<string, () => void>();

  /**
   * @param onListChanged - Told of each server whose `list_changed` arrives, whether or not the client asked for
   *   it: the lists kept of that server are stale.
   */
  constructor(
    private readonly members: readonly SetMember[],
    private readonly routes: ResourceRoutes,
    private readonly onListChanged: (server: string) => void = () => {},
  ) {}

  /**
   * Serves one `subscriptions/listen` (the pipeline has authorized every URI in it), asking only among `members`
   * (the servers the caller may use; default every server).
   */
  async listen(req: GuardedRequest, res: ServerResponse, context: HttpHandlerContext, message: JsonRpcRequest, members: readonly SetMember[] = this.members): Promise<void> {
    const params = (message.params ?? {}) as Record<string, unknown>;
    const filter = (params.notifications ?? {}) as ListenFilter;
    const honored: ListenFilter = {};
    for (const [key] of LIST_KINDS) if (filter[key] === true) honored[key] = true;
    if (Array.isArray(filter.resourceSubscriptions)) honored.resourceSubscriptions = filter.resourceSubscriptions.filter((uri): uri is string => typeof uri === 'string');
    startEventStream(res);
    writeEvent(res, stamped({ jsonrpc: '2.0', method: 'notifications/subscriptions/acknowledged', params: { notifications: honored } }, message.id));
    const parts = this.parts(honored, members);
    const key = `${callerOrIssuerKey(context.auth)}\n${JSON.stringify(message.id)}`;
    const streams: CapturedResponse[] = [];
    let ended = false;
    // A trailing `list_changed` is stamped with the subscription id, as each server stamps its own.
    const listChanged = new ListChangedWindow((method) => {
      if (!ended && !res.writableEnded) writeEvent(res, stamped({ jsonrpc: '2.0', method, params: {} }, message.id));
    });
    const end = (): void => {
      if (ended) return;
      ended = true;
      listChanged.close();
      this.active.delete(key);
      for (const stream of streams) stream.destroy();
      if (!res.writableEnded) {
        writeEvent(res, { jsonrpc: '2.0', id: message.id, result: { resultType: 'complete', _meta: { [SUBSCRIPTION_ID_META_KEY]: message.id } } });
        res.end();
      }
    };
    this.active.get(key)?.();
    this.active.set(key, end);
    res.once('close', end);
    const ids = new EventIdVector();
    // Only what the client asked for: the list kinds it named, and updates of the URIs it subscribed to from the
    // server that holds each (the one asked for it): another server's word on a URI is not about that resource.
    const asked = new Set<string>(LIST_KINDS.filter(([key]) => honored[key]).map(([, , method]) => method));
    const keep = (part: ListenFilter): ((note: Record<string, unknown>) => boolean) => {
      const subscribed = new Set(part.resourceSubscriptions ?? []);
      return (note) => {
        const method = note.method;
        if (method === 'notifications/resources/updated') return subscribed.has((note.params as { uri?: unknown } | undefined)?.uri as string);
        return typeof method === 'string' && asked.has(method) && listChanged.pass(method);
      };
    };
    const finished = parts.map(([member, part]) => this.relay(member, part, message, context, res, new EventRelabeller(member.name, ids, this.noticing(member.name, keep(part))), streams, req.headers));
    if (parts.length === 0) end();
    await Promise.all(finished);
    end();
  }

  /** `keep`, telling {@link onListChanged} of a `list_changed` from `server` first. */
  private noticing(server: string, keep: (note: Record<string, unknown>) => boolean): (note: Record<string, unknown>) => boolean {
    return (note) => {
      if (typeof note.method === 'string' && note.method.endsWith('/list_changed')) this.onListChanged(server);
      return keep(note);
    };
  }

  /** Ends the client's listen stream of that id, for a `notifications/cancelled`; false when there is none. */
  cancel(auth: AuthInfo, requestId: unknown): boolean {
    const end = this.active.get(`${callerOrIssuerKey(auth)}\n${JSON.stringify(requestId)}`);
    end?.();
    return end !== undefined;
  }

  /** Each server concerned and its part of the filter. */
  private parts(filter: ListenFilter, members: readonly SetMember[]): [SetMember, ListenFilter][] {
    const parts: [SetMember, ListenFilter][] = [];
    for (const member of members) {
      const part: ListenFilter = {};
      const capabilities = member.profile?.capabilities;
      for (const [key, capability] of LIST_KINDS) if (filter[key] && (capabilities === undefined || capability in capabilities)) part[key] = true;
      const uris = filter.resourceSubscriptions?.filter((uri) => this.routes.serverOf(uri) === member.name);
      if (uris && uris.length > 0) part.resourceSubscriptions = uris;
      if (Object.keys(part).length > 0) parts.push([member, part]);
    }
    return parts;
  }

  /** One server's listen stream, relayed into the client's until either ends. */
  private async relay(member: SetMember, part: ListenFilter, message: JsonRpcRequest, context: HttpHandlerContext, res: ServerResponse, relabeller: EventRelabeller, streams: CapturedResponse[], clientHeaders: IncomingHttpHeaders): Promise<void> {
    const captured: CapturedResponse = new CapturedResponse(0, (chunk) => {
      if (mediaType(captured.header('content-type')) !== EVENT_STREAM_MEDIA_TYPE) return;
      const out = relabeller.push(chunk);
      if (out === undefined) captured.destroy();
      else if (out !== '' && !res.writableEnded) res.write(out);
    });
    streams.push(captured);
    const params = { ...(message.params as Record<string, unknown>), notifications: part };
    const headers: IncomingHttpHeaders = { accept: MCP_POST_ACCEPT, 'content-type': JSON_MEDIA_TYPE };
    for (const name of ['mcp-protocol-version', 'mcp-method', 'user-agent', 'accept-language']) if (clientHeaders[name] !== undefined) headers[name] = clientHeaders[name];
    const req = { method: 'POST', headers, auth: context.auth, body: { ...message, params } } as unknown as GuardedRequest;
    try {
      await member.upstream.handle(req, captured.asServerResponse(req), { ...context, filterResponse: (_request, response) => response });
      await captured.done;
    } catch {
      captured.destroy();
    }
  }
}

/** A notification stamped with the client's subscription id. */
function stamped(note: { jsonrpc: '2.0'; method: string; params: Record<string, unknown> }, id: JsonRpcId): { jsonrpc: '2.0'; method: string; params: Record<string, unknown> } {
  return { ...note, params: { ...note.params, _meta: { ...(note.params._meta as object | undefined), [SUBSCRIPTION_ID_META_KEY]: id } } };
}
