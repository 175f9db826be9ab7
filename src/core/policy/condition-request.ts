/**
 * The `mcp` and `server` a condition sees, read from the JSON-RPC message its rule is applied to: the request
 * itself at call time, or the request that would use a listed item at list time.
 */
import { captureUriTemplate } from '../wire/uri-template.js';
import type { AuthInfo } from '../kernel/auth-info.js';
import type { JsonRpcMessage } from '../wire/jsonrpc.js';
import type { CompiledCondition, ConditionFailure, ConditionRequest } from './policy-condition.js';
import type { CompiledRule } from './policy-rules.js';

/** How a rule is being applied: for a call, or to decide a listed item. */
export interface RuleContext {
  /** Whether a list item is being decided (conditions reading the call's arguments wait for the call). */
  readonly listing: boolean;
  /** At list time, whether the item is a resource template (its URI is the template, so captures no values). */
  readonly template?: boolean;
  /** The server the request goes to, asked only when a condition reads `server`; default the policy's own. */
  readonly server?: () => string;
  /**
   * Outcomes of the conditions that read neither `mcp` nor `server`, for one caller: the items of one list are
   * decided by the same few conditions, which then run once per list, not once per item.
   */
  readonly outcomes?: Map<CompiledCondition, boolean | ConditionFailure>;
}

const NO_PARAMS: Readonly<Record<string, string>> = Object.freeze({});

/**
 * The outcomes of conditions that read neither `mcp` nor `server`, kept per token: such a condition decides the same
 * for every request the token makes (its claims and scopes are fixed; CEL has no clock), so it runs once per token,
 * not once per call or list. Kept with the verified identity, which the verifier makes once per cached token (a
 * frozen `auth.extra`, with frozen scopes), and freed with it; at most one entry per distinct condition. The
 * entry also holds the client id and the scopes it was made for: a custom verifier that shares one frozen `extra`
 * between clients (`claims.client_id` comes from `auth.clientId`) or scope sets gets a fresh map, never another
 * caller's outcomes. A caller whose `extra` is not frozen gets a map of its own, used for one list.
 */
export function callerOutcomes(auth: AuthInfo): Map<CompiledCondition, boolean | ConditionFailure> {
  const extra = auth.extra;
  if (extra === undefined || !Object.isFrozen(extra)) return new Map();
  return tokenEntry(auth, extra).outcomes;
}

/**
 * A number for the caller of `auth` while its verified identity is kept (the same frozen `auth.extra`, scopes and
 * client id as {@link callerOutcomes} asks), never given to another caller; undefined when `extra` is not frozen.
 */
export function callerKey(auth: AuthInfo): number | undefined {
  const extra = auth.extra;
  if (extra === undefined || !Object.isFrozen(extra)) return undefined;
  return tokenEntry(auth, extra).key;
}

function tokenEntry(auth: AuthInfo, extra: object): TokenEntry {
  const known = outcomesByToken.get(extra);
  if (known !== undefined && known.scopes === auth.scopes && known.clientId === auth.clientId) return known;
  const entry: TokenEntry = { scopes: auth.scopes, clientId: auth.clientId, outcomes: new Map(), key: nextCallerKey++ };
  outcomesByToken.set(extra, entry);
  return entry;
}

interface TokenEntry {
  readonly scopes: unknown;
  readonly clientId: unknown;
  readonly outcomes: Map<CompiledCondition, boolean | ConditionFailure>;
  readonly key: number;
}

const outcomesByToken = new WeakMap<object, TokenEntry>();
let nextCallerKey = 0;

/**
 * The {@link ConditionRequest} of `message` under `rule`: `mcp.method` the message's method, `mcp.name` its
 * `params.name` (tools, prompts), `mcp.uri` its `params.uri` (resources), `mcp.arguments` the `tools/call`
 * arguments, `mcp.params` what the rule's URI template captures from the URI (made only if read).
 */
export function conditionRequest(message: JsonRpcMessage, rule: CompiledRule, context: RuleContext, ownServer: string): ConditionRequest {
  const method = (message as { method?: unknown }).method;
  const params = (message as { params?: unknown }).params as Record<string, unknown> | undefined;
  const named = typeof params === 'object' && params !== null ? params : undefined;
  const name = typeof named?.name === 'string' ? named.name : '';
  const uri = typeof named?.uri === 'string' ? named.uri : '';
  const key = rule.templateKey;
  return {
    method: typeof method === 'string' ? method : '',
    name,
    uri,
    ...(method === 'tools/call' && named?.arguments !== undefined ? { arguments: named.arguments } : {}),
    params: key === undefined || uri === '' ? () => NO_PARAMS : () => captureUriTemplate(key, uri) ?? NO_PARAMS,
    server: context.server ?? ownServer,
  };
}
