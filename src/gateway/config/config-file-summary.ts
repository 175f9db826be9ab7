/**
 * What the start-up line and `check` say about a configuration: the file, its servers (name and transport), and
 * where each setting came from. Names only: never a value, which may be a secret.
 */
import type { GatewayConfig } from './gateway-config.js';
import type { SettingSource } from './setting-sources.js';

/** The configuration file's part of the start-up line. */
export interface ConfigFileSummary {
  /** The configuration file (`MCP_AUTH_CONFIG`), absolute; absent without one. */
  readonly config?: string;
  /** Each server of the file, in its order. */
  readonly servers?: readonly { readonly name: string; readonly transport: 'http' | 'stdio' }[];
  /** Where each setting that is set came from, by variable name. */
  readonly sources?: Readonly<Record<string, SettingSource>>;
}

/**
 * The configuration file, its servers and the settings' sources, for the `listening` line.
 *
 * @example
 * describeConfigFile(config); // { config: '/etc/mcp/gateway.yaml', servers: [{ name: 'notes', transport: 'http' }], sources: { MCP_AUTH_ISSUER: 'file', PORT: 'environment' } }
 */
export function describeConfigFile(config: Pick<GatewayConfig, 'configFile' | 'servers' | 'settingSources'>): ConfigFileSummary {
  return {
    ...(config.configFile !== undefined ? { config: config.configFile } : {}),
    ...(config.servers !== undefined ? { servers: config.servers.map(({ name, transport }) => ({ name, transport })) } : {}),
    ...(config.settingSources !== undefined ? { sources: config.settingSources } : {}),
  };
}
