/**
 * The policy of an endpoint serving several MCP servers: the endpoint-wide policy, which sees every message as
 * exposed (`notes__add`), and one policy per server, which sees the messages routed to that server by the names
 * the server itself uses (`add`). Nothing is merged: each policy is compiled once into its own evaluator, and
 * `PolicyEvaluator` stays the one place a rule is decided; this module only routes messages and list items to
 * the evaluators concerned and combines their decisions.
 */
import type { AuthInfo } from '../kernel/auth-info.js';
import { ConfigurationProblems } from '../kernel/configuration-problems.js';
import type { RateLimit, ToolRateLimit } from '../limits/rate-limit.js';
import { EXPOSED_NAME_SEPARATOR, exposedNameSplit } from '../mcp/exposed-names.js';
import { RESOURCE_METHODS } from '../mcp/mcp-methods.js';
import { asRecord } from '../wire/as-record.js';
import type { JsonRpcMessage } from '../wire/jsonrpc.js';
import { brandCompiledPolicy, type CompiledPolicy } from './compile-policy.js';
import { filterListEnvelope, listItemKey, PolicyEvaluator, type AuthorizationDecision, type ListItems } from './evaluate-policy.js';
import { createInsufficientScopeError } from './insufficient-scope.js';
import type { PolicyDefinition } from './policy-definition.js';
import { EMPTY, LIST_SPECS, isListMethod, type ListSpec, type PolicyRules } from './policy-rules.js';
import { readPolicy } from './read-policy.js';
import type { ToolSelection } from './tool-selection.js';

/** One server of a {@link PolicySetOptions}. */
export interface PolicySetServer {
  /** The server's name: the prefix of its exposed tools and prompts (`<name>__<tool>`). No `__`, not empty. */
  readonly name: string;
  /** The server's own policy, by its own tool, prompt and resource names. Absent: nothing beyond the endpoint-wide rules. */
  readonly policy?: PolicyDefinition;
  /** Where `policy` came from (a file path), appended to its configuration errors. */
  readonly source?: string;
  /**
   * Which of its tools the server exposes, by its own names (see `compileToolSelection`). Absent: all. A tool it
   * leaves out is decided under the endpoint-wide rules only, and dropped from lists.
   */
  readonly selection?: ToolSelection;
}

/** Options of {@link compilePolicySet}. */
export interface PolicySetOptions {
  /** The endpoint-wide policy, applied to every message as exposed. Absent or `{}`: no scopes required. */
  readonly gateway?: PolicyDefinition;
  /** Where `gateway` came from (a file path), appended to its configuration errors. */
  readonly gatewaySource?: string;
  /** Root of the paths in the endpoint-wide policy's errors (e.g. `MCP_AUTH_POLICY`). Default `policy`. */
  readonly gatewaySetting?: string;
  /** The servers, each with its own policy; their names must differ. Server `x`'s policy errors are named `servers.x.policy…`. */
  readonly servers: readonly PolicySetServer[];
  /**
   * The server a resource URI (or, for `resources/templates/list` items, a URI template as listed) belongs to, by
   * name; undefined when none is known. Called for every resource request and listed resource, so it should be
   * a lookup. Absent: no resource is routed, so resource requests are decided under the endpoint-wide rules only
   * and listed resources are dropped.
   */
  readonly routeResource?: (uri: string) => string | undefined;
  /** Called when a rule function of any of the policies fails; see `CompilePolicyOptions.onRuleError`. */
  readonly onRuleError?: (error: unknown, rulePath: string) => void;
}

/** One server's rules, compiled. */
class ServerRules {
  constructor(
    readonly name: string,
    /** Its position in the set, for per-list state kept in an array. */
    readonly index: number,
    readonly rules: PolicyRules,
    readonly evaluator: PolicyEvaluator,
    readonly selection: ToolSelection | undefined,
    /** Whether its policy has no rule at all: it then never changes a list, whoever asks. */
    readonly empty: boolean,
  ) {}
}

/** Where an exposed tool or prompt name goes: its server (none when it names no known server) and its name there. */
class NameRoute {
  constructor(
    readonly server: ServerRules | undefined,
    readonly local: string,
    /** Whether the server's selection exposes the tool of that name (for tools only; prompts are not selected). */
    readonly selected: boolean,
  ) {}
}

const NO_ROUTE = new NameRoute(undefined, '', false);
/** Names longer than this are routed without being remembered, so that remembering costs a bounded amount of memory. */
const MAX_REMEMBERED_NAME_LENGTH = 256;
/** How many routes are remembered; past it, they are forgotten all at once (names an attacker makes up cannot grow it). */
const MAX_REMEMBERED_ROUTES = 10_000;

/**
 * The routes of exposed names, remembered: a list of 900 tools then costs one lookup of each name (whose hash a
 * string keeps) instead of cutting it in two and hashing both parts, and the server's own rules are looked up
 * with a name whose hash is known too.
 */
class NameRoutes {
  private readonly remembered = new Map<string, NameRoute>();

  constructor(private readonly servers: ReadonlyMap<string, ServerRules>) {}

  route(exposed: string): NameRoute {
    let route = this.remembered.get(exposed);
    if (route !== undefined) return route;
    route = this.find(exposed);
    if (exposed.length <= MAX_REMEMBERED_NAME_LENGTH) {
      if (this.remembered.size >= MAX_REMEMBERED_ROUTES) this.remembered.clear();
      this.remembered.set(exposed, route);
    }
    return route;
  }

  private find(exposed: string): NameRoute {
    const at = exposedNameSplit(exposed);
    const server = at === -1 ? undefined : this.servers.get(exposed.slice(0, at));
    if (server === undefined) return NO_ROUTE;
    const local = exposed.slice(at + EXPOSED_NAME_SEPARATOR.length);
    return new NameRoute(server, local, server.selection === undefined || server.selection(local));
  }
}

/** The request each list method answers, as a server's rules for the list method itself see it. */
const LIST_REQUESTS: ReadonlyMap<ListSpec, JsonRpcMessage> = new Map(
  [...LIST_SPECS].map(([method, spec]) => [spec, Object.freeze({ jsonrpc: '2.0', id: 0, method }) as JsonRpcMessage]),
);

/** The rules of every server of one list answer for one caller, worked out on the first item of each server. */
type ServerListItems = (ListItems | null | undefined)[];

/** Routes messages and list items to the endpoint-wide evaluator and to their server's; see {@link compilePolicySet}. */
class PolicySet {
  /** The servers with rules of their own: those whose list filtering depends on the caller. */
  private readonly keyed: readonly ServerRules[];
  private readonly names: NameRoutes;

  constructor(
    private readonly gateway: PolicyEvaluator,
    private readonly servers: ReadonlyMap<string, ServerRules>,
    private readonly routeResource: ((uri: string) => string | undefined) | undefined,
  ) {
    this.keyed = [...servers.values()].filter((server) => !server.empty);
    this.names = new NameRoutes(servers);
  }

  authorize(message: JsonRpcMessage, auth: AuthInfo): AuthorizationDecision {
    const decision = this.gateway.authorize(message, auth, undefined, () => this.serverOf(message), (uri) => this.resourceServer(uri)?.name ?? '');
    const params = asRecord((message as { params?: unknown }).params);
    const method = (message as { method?: unknown }).method;
    if (typeof method === 'string' && RESOURCE_METHODS.has(method)) return this.byUri(decision, message, params?.uri, auth);
    switch (method) {
      case 'tools/call':
        return this.byName(decision, message, params?.name, auth, true);
      case 'prompts/get':
        return this.byName(decision, message, params?.name, auth, false);
      case 'completion/complete': {
        const ref = asRecord(params?.ref);
        if (ref?.type === 'ref/prompt') return this.byName(decision, message, ref.name, auth, false);
        return ref?.type === 'ref/resource' ? this.byUri(decision, message, ref.uri, auth) : decision;
      }
      case 'subscriptions/listen':
        return this.bySubscriptions(decision, message, params, auth);
      default:
        return decision;
    }
  }

  /** See `CompiledPolicy.unknownTarget`: a tool or prompt of no server, or a tool its server's selection leaves out. */
  unknownTarget(message: JsonRpcMessage): 'tool' | 'prompt' | undefined {
    const params = asRecord((message as { params?: unknown }).params);
    switch ((message as { method?: unknown }).method) {
      case 'tools/call':
        return this.exposes(params?.name, true) ? undefined : 'tool';
      case 'prompts/get':
        return this.exposes(params?.name, false) ? undefined : 'prompt';
      case 'completion/complete': {
        const ref = asRecord(params?.ref);
        return ref?.type !== 'ref/prompt' || this.exposes(ref.name, false) ? undefined : 'prompt';
      }
      default:
        return undefined;
    }
  }

  /** Whether an exposed name names a server's tool (one its selection keeps) or prompt; a name not a string is not decided here. */
  private exposes(exposed: unknown, tool: boolean): boolean {
    if (typeof exposed !== 'string') return true;
    const { server, selected } = this.names.route(exposed);
    return server !== undefined && (!tool || selected);
  }

  /**
   * Whether the caller of `auth` holds the server's own `requiredScopes` (under the server's hierarchy): without
   * them every message routed to it is refused and every item it lists dropped. True for a name of no server.
   */
  mayReach(name: string, auth: AuthInfo): boolean {
    const server = this.servers.get(name);
    return server === undefined || server.empty || server.evaluator.grantsBase(auth);
  }

  filterListResult(method: string, result: Record<string, unknown>, auth: AuthInfo, message?: JsonRpcMessage, protocolVersion?: string): Record<string, unknown> {
    return filterListEnvelope(method, result, message, protocolVersion, (spec, items) => this.filterItems(spec, items, auth));
  }

  listFilterKey(method: string, auth: AuthInfo, message?: JsonRpcMessage, protocolVersion?: string): string | undefined {
    let key = this.gateway.listFilterKey(method, auth, message, protocolVersion);
    // A server without rules filters nothing, whoever asks: it adds nothing to the key.
    for (const server of this.keyed) {
      if (key === undefined) return undefined;
      const own = server.evaluator.listFilterKey(method, auth, message, protocolVersion);
      // Each key is a JSON array, so their concatenation reads back unambiguously.
      key = own === undefined ? undefined : key + own;
    }
    return key;
  }

  /** A tool or prompt call, by its exposed name: its server's rules too, with the server's own name. */
  private byName(decision: AuthorizationDecision, message: JsonRpcMessage, exposed: unknown, auth: AuthInfo, tool: boolean): AuthorizationDecision {
    if (typeof exposed !== 'string') return decision;
    const { server, local, selected } = this.names.route(exposed);
    // A tool the server does not expose is unknown, not forbidden: the call gets -32602, never a step-up.
    if (server === undefined || (tool && !selected)) return decision;
    return this.gateway.combine(decision, server.evaluator.authorize(message, auth, local), server.name);
  }

  /** A request for one resource URI: its server's rules too (URIs are the same for the server). */
  private byUri(decision: AuthorizationDecision, message: JsonRpcMessage, uri: unknown, auth: AuthInfo): AuthorizationDecision {
    const server = this.resourceServer(uri);
    return server === undefined ? decision : this.gateway.combine(decision, server.evaluator.authorize(message, auth), server.name);
  }

  /**
   * `subscriptions/listen`: each server concerned by one of its URIs decides a listen that carries only its own
   * URIs (what that server is asked for); URIs of no known server need only the endpoint-wide rules. The decision
   * names the server when one alone is concerned.
   */
  private bySubscriptions(decision: AuthorizationDecision, message: JsonRpcMessage, params: Record<string, unknown> | undefined, auth: AuthInfo): AuthorizationDecision {
    const notifications = asRecord(params?.notifications);
    const uris = notifications?.resourceSubscriptions;
    if (!Array.isArray(uris)) return decision;
    const byServer = new Map<ServerRules, unknown[]>();
    let unrouted = false;
    for (const uri of uris as unknown[]) {
      const server = this.resourceServer(uri);
      if (server === undefined) {
        unrouted = true;
        continue;
      }
      const own = byServer.get(server);
      if (own === undefined) byServer.set(server, [uri]);
      else own.push(uri);
    }
    let combined = decision;
    // Named only when every URI is that one server's: a listen that also names URIs of no server is the set's.
    const only = byServer.size === 1 && !unrouted ? byServer.keys().next().value!.name : undefined;
    for (const [server, own] of byServer) {
      const local = { ...message, params: { ...params, notifications: { ...notifications, resourceSubscriptions: own } } } as JsonRpcMessage;
      combined = this.gateway.combine(combined, server.evaluator.authorize(local, auth), only);
    }
    return combined;
  }

  /** The name of the server `message` goes to (the `server` of endpoint-wide conditions), `""` when none is known. */
  private serverOf(message: JsonRpcMessage): string {
    const params = asRecord((message as { params?: unknown }).params);
    const ref = asRecord(params?.ref);
    const name = params?.name ?? ref?.name;
    if (typeof name === 'string') return this.names.route(name).server?.name ?? '';
    return this.resourceServer(params?.uri ?? ref?.uri)?.name ?? '';
  }

  private resourceServer(uri: unknown): ServerRules | undefined {
    if (typeof uri !== 'string' || this.routeResource === undefined) return undefined;
    const name = this.routeResource(uri);
    return name === undefined ? undefined : this.servers.get(name);
  }

  /**
   * The items of a merged list the caller could use under the endpoint-wide rules (by exposed name) and under
   * their server's (by its own name), tools its selection leaves out excepted. Items of no known server are
   * dropped. Each evaluator works out what is the same for every item of a list once (see
   * `PolicyEvaluator.listItems`), so a merged list costs about what one policy's list of the same items costs.
   */
  private filterItems(spec: ListSpec, items: readonly unknown[], auth: AuthInfo): unknown[] {
    const everywhere = this.gateway.listItems(spec, auth);
    if (everywhere.none) return [];
    const byName = spec.kind !== 'resource';
    const tools = spec.kind === 'tool';
    const perServer: ServerListItems = new Array<undefined>(this.servers.size);
    const kept: unknown[] = [];
    for (const item of items) {
      const key = listItemKey(spec, item);
      if (key === undefined) continue;
      let server: ServerRules | undefined;
      let local = key;
      if (byName) {
        const route = this.names.route(key);
        server = route.server;
        if (server === undefined || (tools && !route.selected)) continue;
        local = route.local;
      } else {
        server = this.resourceServer(key);
        if (server === undefined) continue;
      }
      const name = server.name;
      if (!this.gateway.mayUseItem(everywhere, key, () => name)) continue;
      if (server.empty) {
        kept.push(item);
        continue;
      }
      let own = perServer[server.index];
      if (own === undefined) perServer[server.index] = own = this.serverListItems(server, spec, auth);
      if (own !== null && server.evaluator.mayUseItem(own, local)) kept.push(item);
    }
    return kept;
  }

  /** A server's rules for one list, or null when none of its items can pass (not even the list method itself is allowed). */
  private serverListItems(server: ServerRules, spec: ListSpec, auth: AuthInfo): ListItems | null {
    // The server's rules for the list method itself (its base scopes, `methods["tools/list"]`) hold for its items.
    if (!server.evaluator.authorize(LIST_REQUESTS.get(spec)!, auth).allowed) return null;
    const own = server.evaluator.listItems(spec, auth);
    return own.none ? null : own;
  }
}

/**
 * Compiles the policy of an endpoint serving several MCP servers into one {@link CompiledPolicy}, which a guard
 * takes as `policy` (or in `setPolicy`) like any other. Every policy is read and compiled once; a bad one throws
 * one `ConfigurationError` naming every problem of every policy, each by its path (`servers.notes.policy.tools.add`).
 *
 * How it decides:
 * - The endpoint-wide policy (`gateway`) applies to every message as exposed: its rules name exposed tools and
 *   prompts (`notes__add`, `*`), methods and resources.
 * - A server's own policy applies to the messages routed to that server, by its own names: `tools/call`,
 *   `prompts/get` and a completion's `ref/prompt` by their exposed name (`<server>__<name>`, see
 *   `splitExposedName`), rule functions seeing the message with the server's name in it; `resources/read`,
 *   `resources/subscribe`, `resources/unsubscribe`, a completion's `ref/resource` and the URIs of
 *   `subscriptions/listen` by `routeResource`. The scopes required are the endpoint-wide ones ∪ the server's.
 * - A name of no known server, or a tool the server's `selection` leaves out, is decided under the endpoint-wide
 *   rules only, and when they allow it `unknownTarget` names it: the guard then answers "unknown tool" (-32602,
 *   reason `target_unknown`), where a 403 would invite a useless step-up.
 * - Lists: an item of a merged list is kept when the endpoint-wide rules and its server's rules (including the
 *   server's rule for the list method itself) let the caller use it, and its server's selection keeps it; items
 *   of no known server are dropped (fail closed).
 * - Scope hierarchies: each policy's `scopeHierarchy` expands the granted scopes for its own rules only, so a
 *   server's hierarchy never widens another's rules or the endpoint-wide ones. `expandScopes` is the endpoint-wide
 *   hierarchy's. The 403's `missingScopes` name each policy's missing scopes in its own terms.
 * - `listFilterKey` exists only when every policy's list rules are static (the caller's effective scopes under each
 *   hierarchy then decide a list); it assumes `routeResource` keeps answering the same for a listed URI.
 * - `scopesSupported`: the endpoint-wide policy's, then each server's (never `offline_access`); `requiredScopes`:
 *   the endpoint-wide `requiredScopes`; `definition`: the endpoint-wide definition.
 * - Rate limits: the endpoint-wide `rateLimits.tools` by exposed name, as for one policy; each server's by its
 *   own names, counted by exposed name (`notes__add`), its `*` covering its tools not named, each counted apart
 *   (`toolRateLimit` tells the rule, `<server>__*`, for messages). For one tool,
 *   the endpoint-wide limit named for it comes first, then the server's named limit, the server's `*`, and last
 *   the endpoint-wide `*`: the most specific limit applies.
 *
 * @example
 * const policy = compilePolicySet({
 *   gateway: { requiredScopes: ['mcp'] },
 *   servers: [
 *     { name: 'notes', policy: { tools: { add: ['notes:write'] } } },
 *     { name: 'py', selection: compileToolSelection({ exclude: ['debug_*'] }, 'servers.py.tools') },
 *   ],
 *   routeResource: (uri) => (uri.startsWith('notes://') ? 'notes' : undefined),
 * });
 * policy.authorize({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'notes__add' } }, auth).requiredScopes; // ['mcp', 'notes:write']
 * @throws ConfigurationError naming every bad policy and every bad server name (empty, with `__`, or repeated).
 */
export function compilePolicySet(options: PolicySetOptions): CompiledPolicy {
  const problems = new ConfigurationProblems();
  const gatewayDefinition = options.gateway ?? {};
  const gatewaySetting = options.gatewaySetting ?? 'policy';
  const gatewayRules = problems.check(() => readPolicy(gatewayDefinition, gatewaySetting, options.gatewaySource));
  const servers = new Map<string, ServerRules>();
  for (const server of options.servers) {
    const setting = `servers.${server.name}`;
    if (typeof server.name !== 'string' || server.name === '' || server.name.includes(EXPOSED_NAME_SEPARATOR) || servers.has(server.name)) {
      problems.add(setting, `a server name must be unique, not empty and without "${EXPOSED_NAME_SEPARATOR}", got ${JSON.stringify(server.name)}`);
      continue;
    }
    const definition = server.policy ?? {};
    const rules = problems.check(() => readPolicy(definition, `${setting}.policy`, server.source, setting));
    if (rules === undefined) continue;
    const evaluator = new PolicyEvaluator(rules, options.onRuleError, server.name);
    servers.set(server.name, new ServerRules(server.name, servers.size, rules, evaluator, server.selection, Object.keys(definition).length === 0));
  }
  problems.throwIfAny();
  const rules = gatewayRules!;
  const gateway = new PolicyEvaluator(rules, options.onRuleError);
  const set = new PolicySet(gateway, servers, options.routeResource);
  const limits = new ToolRateLimits(rules, servers);
  const authorize = (message: JsonRpcMessage, auth: AuthInfo): AuthorizationDecision => set.authorize(message, auth);
  const compiled = brandCompiledPolicy({
    definition: gatewayDefinition,
    scopesSupported: unionOfScopes([rules.scopesSupported, ...[...servers.values()].map((server) => server.rules.scopesSupported)]),
    requiredScopes: rules.base,
    listFilterKey: (method, auth, message, protocolVersion) => set.listFilterKey(method, auth, message, protocolVersion),
    expandScopes: rules.expand,
    toolRateLimits: limits.byName,
    ...(limits.resolve === undefined ? {} : { toolRateLimit: limits.resolve }),
    requiredScopesFor: (message, auth) => authorize(message, auth).requiredScopes,
    authorize,
    filterListResult: (method, result, auth, message, protocolVersion) => set.filterListResult(method, result, auth, message, protocolVersion),
    insufficientScopeError: (decision, auth, message) => createInsufficientScopeError(decision, auth, message),
    isListMethod,
    unknownTarget: (message) => set.unknownTarget(message),
  });
  // Kept under a symbol, so that a copy made by spreading the policy keeps it too.
  return Object.assign(compiled, { [SERVER_REACH]: (name: string, auth: AuthInfo) => set.mayReach(name, auth) });
}

/** Where a policy set keeps {@link mayReachServer}'s answer. */
const SERVER_REACH: unique symbol = Symbol('mcp-oauth-guard server reach');

/**
 * Whether the caller of `auth` may use anything of the server `name` under `policy`: it holds the `requiredScopes`
 * of the server's own policy (expanded by that policy's `scopeHierarchy`). A server set asks it before contacting
 * a server for a caller (merged lists, `initialize`, `server/discover`), so that a server the caller may use
 * nothing of is never asked on its behalf. True for any policy not made by {@link compilePolicySet}, a server
 * without a policy of its own, and a name of no server.
 *
 * @example
 * const policy = compilePolicySet({ servers: [{ name: 'hr', policy: { requiredScopes: ['hr'] } }] });
 * mayReachServer(policy, 'hr', { ...auth, scopes: ['mcp'] }); // false
 */
export function mayReachServer(policy: CompiledPolicy, name: string, auth: AuthInfo): boolean {
  const reach = (policy as { [SERVER_REACH]?: (name: string, auth: AuthInfo) => boolean })[SERVER_REACH];
  return reach === undefined || reach(name, auth);
}

/** The tool rate limits of a policy set, by exposed name; see {@link compilePolicySet}. */
class ToolRateLimits {
  /** The endpoint-wide limits (its `*` included) and every server's named ones, by exposed name. */
  readonly byName: ReadonlyMap<string, RateLimit>;
  /**
   * Present only when a server has a `*` limit, which no lookup in {@link byName} can find. A server's `*` is
   * named by the rule `<server>__*`, the endpoint-wide one by `*`, a named limit by its name.
   */
  readonly resolve: ((name: string) => ToolRateLimit | undefined) | undefined;

  constructor(gateway: PolicyRules, servers: ReadonlyMap<string, ServerRules>) {
    const byName = new Map(gateway.toolRateLimits);
    const everyTool = new Map<string, ToolRateLimit>();
    for (const server of servers.values()) {
      for (const [name, limit] of server.rules.toolRateLimits) {
        const exposed = server.name + EXPOSED_NAME_SEPARATOR + name;
        if (name === '*') everyTool.set(server.name, Object.freeze({ rule: exposed, limit }));
        else if (!byName.has(exposed)) byName.set(exposed, limit);
      }
    }
    this.byName = byName;
    const star = gateway.toolRateLimits.get('*');
    const fallback = star === undefined ? undefined : Object.freeze({ rule: '*', limit: star });
    this.resolve =
      everyTool.size === 0
        ? undefined
        : (name) => {
            const named = byName.get(name);
            if (named !== undefined) return name === '*' ? fallback : { rule: name, limit: named };
            const at = exposedNameSplit(name);
            return (at === -1 ? undefined : everyTool.get(name.slice(0, at))) ?? fallback;
          };
  }
}

function unionOfScopes(lists: readonly (readonly string[])[]): readonly string[] {
  const all = new Set<string>();
  for (const list of lists) for (const scope of list) all.add(scope);
  return all.size === 0 ? EMPTY : Object.freeze([...all]);
}
