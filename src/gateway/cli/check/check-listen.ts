import { once } from 'node:events';
import { createServer } from 'node:net';
import type { GatewayConfig } from '../../config/gateway-config.js';
import { listenAddresses, type ListenAddress, type SettingName } from '../../server/listen-addresses.js';
import type { CheckResult } from './check-result.js';

const named = (setting: SettingName): string => `${setting.env} (${setting.flag})`;

/**
 * Whether the gateway could listen where its settings say ({@link listenAddresses}). Each address is bound for a
 * moment and released. A port in use only warns: what holds it may be this very gateway, already running.
 */
export async function checkListenAddresses(config: GatewayConfig): Promise<CheckResult[]> {
  return Promise.all(listenAddresses(config).map(checkAddress));
}

async function checkAddress(address: ListenAddress): Promise<CheckResult> {
  const { host, port, what } = address;
  const hostSetting = named(address.hostSetting);
  const portSetting = named(address.portSetting);
  const base = { check: 'listen', subject: `${host.includes(':') ? `[${host}]` : host}:${port}` } as const;
  if (port === 0) return { ...base, status: 'ok', message: `${what}: port 0, so a free port is picked at start` };
  const server = createServer();
  try {
    server.listen({ host, port, exclusive: true });
    await once(server, 'listening');
    server.close();
    await once(server, 'close');
    return { ...base, status: 'ok', message: `${what}: free, a server can listen there` };
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'EADDRINUSE') {
      return {
        ...base,
        status: 'warn',
        message: `${what}: in use now; a server started with these settings could not listen while it is (one already running with them holds it too)`,
        fix: `stop what listens there, or choose another ${portSetting}`,
      };
    }
    if (code === 'EACCES') return { ...base, status: 'fail', message: `${what}: not allowed to listen there (ports below 1024 need privileges)`, fix: `choose a ${portSetting} of 1024 or above, or grant the process CAP_NET_BIND_SERVICE` };
    if (code === 'EADDRNOTAVAIL') return { ...base, status: 'fail', message: `${what}: this host has no such address`, fix: `set ${hostSetting} to an address of this host (0.0.0.0 or :: for all of them)` };
    if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return { ...base, status: 'fail', message: `${what}: the host name does not resolve (${code})`, fix: `correct ${hostSetting}` };
    return { ...base, status: 'fail', message: `${what}: cannot listen there (${code ?? 'an unknown error'})`, fix: `check ${hostSetting} and ${portSetting}` };
  }
}
