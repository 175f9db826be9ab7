import { GATEWAY_SETTINGS, type GatewayConfig } from '../config/gateway-config.js';

/** A setting as an operator gives it: its environment variable and its flag. */
export interface SettingName {
  readonly env: string;
  readonly flag: string;
}

/** One address the gateway listens on, and the settings that name it. */
export interface ListenAddress {
  readonly host: string;
  readonly port: number;
  /** What listens there, for messages: `the MCP endpoint` or `the metrics listener`. */
  readonly what: string;
  readonly hostSetting: SettingName;
  readonly portSetting: SettingName;
}

/**
 * Every address the gateway listens on: the MCP endpoint (`HOST`, `PORT`) and, when metrics are on, their own
 * listener (`MCP_AUTH_METRICS_HOST`, `MCP_AUTH_METRICS_PORT`). `check` binds each, and the CLI names the one a
 * listen error is about.
 *
 * @example
 * listenAddresses(config).map((a) => `${a.host}:${a.port}`); // ['127.0.0.1:8080', '127.0.0.1:9464']
 */
export function listenAddresses(config: Pick<GatewayConfig, 'host' | 'port' | 'metrics'>): ListenAddress[] {
  const addresses: ListenAddress[] = [
    { host: config.host, port: config.port, what: 'the MCP endpoint', hostSetting: settingNamed('HOST'), portSetting: settingNamed('PORT') },
  ];
  if (config.metrics) {
    addresses.push({
      host: config.metrics.host,
      port: config.metrics.port,
      what: 'the metrics listener',
      hostSetting: settingNamed('MCP_AUTH_METRICS_HOST'),
      portSetting: settingNamed('MCP_AUTH_METRICS_PORT'),
    });
  }
  return addresses;
}

/** A setting's variable and flag, as the settings table spells them. */
function settingNamed(env: string): SettingName {
  const flag = GATEWAY_SETTINGS.find((setting) => setting.env === env)?.flag;
  if (flag === undefined) throw new Error(`${env} has no flag in the settings table`);
  return { env, flag };
}
