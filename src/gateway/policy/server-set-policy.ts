import { loadPolicyFile } from '../../core/policy/load-policy-file.js';
import type { RuleErrorHook } from '../../core/policy/evaluate-policy.js';
import type { CompiledPolicy } from '../../core/policy/compile-policy.js';
import type { PolicyDefinition } from '../../core/policy/policy-definition.js';
import { compilePolicySet } from '../../core/policy/policy-set.js';
import { compileToolSelection } from '../../core/policy/tool-selection.js';
import type { ServerConfig } from '../config/server-config.js';

/**
 * The policy of a gateway with several servers: the gateway-wide policy (`MCP_AUTH_POLICY`, by exposed names) and
 * each server's own (`policy` or `policyFile`, by its own names), compiled into one policy set the guard holds.
 * A reload reads the gateway-wide file and every server's `policyFile` again; until it has compiled, the policy in
 * force stays.
 *
 * @example
 * const policies = new ServerSetPolicy(config.servers, (uri) => set.serverOfResource(uri));
 * const compiled = policies.compile(gatewayDefinition); // for the guard
 * guard.setPolicy(policies.compile(loadPolicyFile(file), { reread: true })); // a reload
 */
export class ServerSetPolicy {
  /** Each server's own policy in force, by name. */
  private inForce: ReadonlyMap<string, PolicyDefinition | undefined>;

  constructor(
    private readonly servers: readonly ServerConfig[],
    private readonly routeResource: (uri: string) => string | undefined,
    /** Told of every rule that could not be decided (the gateway logs a rate-limited warning). Default none. */
    private readonly onRuleError?: RuleErrorHook,
  ) {
    this.inForce = new Map(servers.map((server) => [server.name, server.policy]));
  }

  /**
   * Compiles the set for `gateway` (the gateway-wide definition) and the servers' policies; with `reread`, each
   * `policyFile` is read again first. The servers' policies are in force (for {@link policyOf}) once it returns.
   *
   * @throws ConfigurationError naming the file or JSON path at fault; nothing changes then.
   */
  compile(gateway: PolicyDefinition | undefined, options: { reread?: boolean; gatewaySource?: string } = {}): CompiledPolicy {
    const read = new Map(
      this.servers.map((server) => [server.name, options.reread && server.policyFile !== undefined ? loadPolicyFile(server.policyFile, `servers.${server.name}.policyFile`) : this.inForce.get(server.name)] as const),
    );
    const compiled = compilePolicySet({
      ...(gateway ? { gateway } : {}),
      ...(options.gatewaySource ? { gatewaySource: options.gatewaySource } : {}),
      gatewaySetting: 'MCP_AUTH_POLICY',
      servers: this.servers.map((server) => {
        const policy = read.get(server.name);
        return {
          name: server.name,
          ...(policy ? { policy } : {}),
          ...(server.policySource ? { source: server.policySource } : {}),
          selection: compileToolSelection(server.tools, `servers.${server.name}.tools`),
        };
      }),
      routeResource: this.routeResource,
      ...(this.onRuleError ? { onRuleError: this.onRuleError } : {}),
    });
    this.inForce = read;
    return compiled;
  }

  /** The server's own policy in force. */
  policyOf(server: string): PolicyDefinition | undefined {
    return this.inForce.get(server);
  }
}
