// The two ways the interop suites put their one upstream behind the gateway: the single-upstream settings
// (`MCP_AUTH_UPSTREAM`, `MCP_AUTH_UPSTREAM_COMMAND`) and a configuration file with one server, `every`. Each suite
// runs its body once per mode, so that everything it checks holds through the server set as well.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadGatewayConfig } from '../../src/gateway/config/gateway-config.js';
import type { ServerSet } from '../../src/gateway/multiplex/server-set.js';
import { startGateway, type RunningGateway } from '../../src/gateway/server/start-gateway.js';
import type { Upstream } from '../../src/gateway/upstream/upstream.js';
import type { AuthorizationServer } from '../../examples/dev/authorization-server.js';
import { quote } from './stdio-gateway.js';

/** The one upstream of a suite, as the suite would describe it whichever way it is configured. */
export interface OneUpstream {
  /** A Streamable HTTP endpoint; or else `command`. */
  readonly url?: string;
  /** A stdio server: the program and its arguments. */
  readonly command?: readonly string[];
  /** The upstream's policy file, by the upstream's own names. */
  readonly policyFile: string;
  /** Whether the caller's identity goes to the upstream (headers for HTTP, `MCP_CALLER_*` for stdio). */
  readonly identity: boolean;
}

/** How a suite configures its upstream and names its tools and prompts. */
export interface GatewayMode {
  /** Appended to the suite's name, so that each mode's tests have names of their own. */
  readonly label: string;
  /** Whether the upstream is a server of a configuration file (the server set), rather than the single upstream. */
  readonly viaConfigFile: boolean;
  /** The name a client uses for one of the upstream's tools or prompts. */
  exposed(name: string): string;
  /** The gateway's settings for `upstream`, writing any file it needs in `dir`. */
  settings(upstream: OneUpstream, dir: string): Record<string, string>;
}

/** The server's name in the configuration file. */
export const SERVER_NAME = 'every';

/** `MCP_AUTH_UPSTREAM` or `MCP_AUTH_UPSTREAM_COMMAND`, with `MCP_AUTH_POLICY` and the identity setting. */
export const SINGLE_UPSTREAM: GatewayMode = {
  label: 'single upstream',
  viaConfigFile: false,
  exposed: (name) => name,
  settings(upstream) {
    const http = upstream.url !== undefined;
    return {
      ...(http ? { MCP_AUTH_UPSTREAM: upstream.url! } : { MCP_AUTH_UPSTREAM_COMMAND: upstream.command!.map(quote).join(' ') }),
      MCP_AUTH_POLICY: upstream.policyFile,
      ...(upstream.identity ? { [http ? 'MCP_AUTH_IDENTITY_HEADERS' : 'MCP_AUTH_IDENTITY_ENV']: 'on' } : {}),
    };
  },
};

/**
 * `MCP_AUTH_CONFIG` naming a YAML file with one server, `every`: the upstream's settings are the server's keys, and
 * its policy is the server's own `policyFile`, so that its rules keep the upstream's own names while clients see
 * `every__<name>`. A server's policy holds for the messages routed to that server (its `requiredScopes` included);
 * what the gateway answers itself (`initialize`, `ping`, notifications, the GET stream, DELETE) needs only the
 * gateway-wide policy, of which this mode sets none: no suite relies on the upstream's `requiredScopes` there.
 */
export const ONE_SERVER_FILE: GatewayMode = {
  label: 'one-server configuration file',
  viaConfigFile: true,
  exposed: (name) => `${SERVER_NAME}__${name}`,
  settings(upstream, dir) {
    const http = upstream.url !== undefined;
    const lines = [
      'servers:',
      `  ${SERVER_NAME}:`,
      http ? `    url: ${JSON.stringify(upstream.url)}` : `    command: [${upstream.command!.map((word) => JSON.stringify(word)).join(', ')}]`,
      `    policyFile: ${JSON.stringify(upstream.policyFile)}`,
      ...(upstream.identity ? [http ? '    identityHeaders: "on"' : '    identityEnv: true'] : []),
      '',
    ];
    const file = join(dir, 'gateway.yaml');
    writeFileSync(file, lines.join('\n'));
    return { MCP_AUTH_CONFIG: file };
  },
};

export const GATEWAY_MODES: readonly GatewayMode[] = [SINGLE_UPSTREAM, ONE_SERVER_FILE];

/** A gateway started in `mode` with the test authorization server, and the upstream of its one server. */
export async function startGatewayInMode(
  mode: GatewayMode,
  as: AuthorizationServer,
  upstream: OneUpstream,
  dir: string,
  options: { log: (line: string) => void; scopes: readonly string[] },
): Promise<{ gateway: RunningGateway; upstream: Upstream }> {
  const config = loadGatewayConfig({ ...mode.settings(upstream, dir), MCP_AUTH_ISSUER: as.issuer, HOST: '127.0.0.1', PORT: '0' });
  const gateway = await startGateway(config, { log: options.log, warn: () => {} });
  as.addResource(gateway.resource, { scopes: options.scopes });
  const proxy = mode.viaConfigFile ? (gateway.proxy as ServerSet).servers.get(SERVER_NAME) : gateway.proxy;
  if (proxy === undefined) throw new Error(`no upstream for ${SERVER_NAME}`);
  return { gateway, upstream: proxy };
}
