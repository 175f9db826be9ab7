import { splitExposedName } from '../../core/mcp/exposed-names.js';
import { RESOURCE_METHODS } from '../../core/mcp/mcp-methods.js';
import { isListMethod } from '../../core/policy/policy-rules.js';
import { JsonRpcErrorCode, type JsonRpcMessage, type JsonRpcRequest } from '../../core/wire/jsonrpc.js';
import { pinRefusal, type PinRefusal } from '../pins/pin-hidden-target.js';
import { unknownNameRefusal } from '../../core/mcp/unknown-name.js';
import type { ResourceRoutes } from './resource-routes.js';
import type { SetMember } from './set-member.js';

/** Where one client message goes in a server set. */
export type MessageRoute =
  /** Answered by the gateway itself (`initialize`, `ping`, `server/discover`, `notifications/initialized`). */
  | { readonly to: 'gateway' }
  /** A list merged across the servers. */
  | { readonly to: 'merge' }
  /** One server, with the message in its own names. */
  | { readonly to: 'member'; readonly member: SetMember; readonly message: JsonRpcMessage; readonly localName?: string }
  /** A resource no server claims yet: routes are learnt from lists, so they are listed first, then asked again. */
  | { readonly to: 'unrouted_resource'; readonly uri: string }
  /** Every server the client's session opened (notifications, `logging/setLevel`). */
  | { readonly to: 'opened' }
  /** `subscriptions/listen` (2026-07-28): every server concerned, merged into one stream. */
  | { readonly to: 'listen' }
  /** A client's answer to a server's request: back to the server that asked. */
  | { readonly to: 'asker' }
  /** Refused as the JSON-RPC error given (an unknown tool, a method the endpoint does not offer). */
  | { readonly to: 'refused'; readonly code: number; readonly message: string; /** The audit reason of a refusal the guard's policy did not make (a pin's). */ readonly audit?: PinRefusal['audit'] };

const GATEWAY_METHODS: ReadonlySet<string> = new Set(['initialize', 'ping', 'server/discover', 'notifications/initialized']);

/**
 * Decides where a client message goes, by its body: tools and prompts by the server prefix of their exposed name
 * (`<server>__<name>`), resources by the server that listed the URI or a template matching it, completions by
 * their `ref`. A tool of no server, one its server's `tools` selection leaves out, or one whose definition differs
 * from its pin (`MCP_AUTH_PINS=enforce`) is refused as unknown (JSON-RPC -32602), never with a 403 that would invite
 * a scope step-up. Behind the guard, with the policy set, the guard has refused the first two already (reason
 * `target_unknown`), and the third once the pins hid it (`tool_pin_mismatch`): this is the answer without one, or
 * for pins changed since the guard decided.
 */
export function routeMessage(message: JsonRpcMessage, members: ReadonlyMap<string, SetMember>, routes: ResourceRoutes): MessageRoute {
  if (!('method' in message)) return { to: 'asker' };
  const method = message.method;
  if (GATEWAY_METHODS.has(method)) return { to: 'gateway' };
  if (isListMethod(method)) return { to: 'merge' };
  const params = (message as JsonRpcRequest).params as Record<string, unknown> | undefined;
  if (method === 'tools/call' || method === 'prompts/get') return byName(message, params, 'name', method === 'tools/call' ? 'tool' : 'prompt', members);
  if (RESOURCE_METHODS.has(method)) return byUri(message, params?.uri, members, routes);
  if (method === 'completion/complete') {
    const ref = params?.ref as Record<string, unknown> | undefined;
    if (ref?.type === 'ref/prompt') return byName(message, ref, 'name', 'prompt', members);
    if (ref?.type === 'ref/resource') return byUri(message, ref.uri, members, routes);
    return refused(JsonRpcErrorCode.InvalidParams, 'Invalid params: completion/complete needs a ref/prompt or ref/resource');
  }
  if (method === 'subscriptions/listen') return { to: 'listen' };
  if (method.startsWith('notifications/') || method === 'logging/setLevel') return { to: 'opened' };
  return refused(JsonRpcErrorCode.MethodNotFound, `Method not found: ${method}`);
}

/** Routes by an exposed name held at `holder[key]` (the params, or a completion's ref), rewriting it to the server's own. */
function byName(message: JsonRpcMessage, holder: Record<string, unknown> | undefined, key: string, kind: 'tool' | 'prompt', members: ReadonlyMap<string, SetMember>): MessageRoute {
  const exposed = holder?.[key];
  if (typeof exposed !== 'string') return refused(JsonRpcErrorCode.InvalidParams, `Invalid params: the ${kind} name must be a string`);
  const split = splitExposedName(exposed);
  const member = split ? members.get(split.server) : undefined;
  if (!split || !member || (kind === 'tool' && !member.selects(split.name))) {
    const { code, message: text } = unknownNameRefusal(kind, exposed);
    return refused(code, text);
  }
  const pinRefused = kind === 'tool' && member.pins ? pinRefusal(member.pins, member.name, split.name, exposed) : undefined;
  if (pinRefused) return { to: 'refused', ...pinRefused };
  return { to: 'member', member, message: renamed(message, holder!, key, split.name), localName: split.name };
}

function byUri(message: JsonRpcMessage, uri: unknown, members: ReadonlyMap<string, SetMember>, routes: ResourceRoutes): MessageRoute {
  if (typeof uri !== 'string') return refused(JsonRpcErrorCode.InvalidParams, 'Invalid params: the resource uri must be a string');
  const server = routes.serverOf(uri);
  const member = server === undefined ? undefined : members.get(server);
  return member ? { to: 'member', member, message } : { to: 'unrouted_resource', uri };
}

/** A copy of `message` with `holder[key]` (inside its params) set to `name`; the client's message is left as it is. */
function renamed(message: JsonRpcMessage, holder: Record<string, unknown>, key: string, name: string): JsonRpcMessage {
  const params = (message as JsonRpcRequest).params as Record<string, unknown>;
  if (holder === params) return { ...message, params: { ...params, [key]: name } } as JsonRpcMessage;
  // A completion's ref: the ref is copied too.
  return { ...message, params: { ...params, ref: { ...holder, [key]: name } } } as JsonRpcMessage;
}

function refused(code: number, message: string): MessageRoute {
  return { to: 'refused', code, message };
}
