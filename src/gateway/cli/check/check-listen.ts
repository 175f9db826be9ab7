import { once } from 'node:events';
import { createServer } from 'node:net';
import type { GatewayConfig } from '../../config/gateway-config.js';
import { listenAddresses, type ListenAddress, type SettingName } from '../../server/listen-addresses.js';
import type { CheckResult } from './check-result.js';
import { RunningGatewayProbe, type RunningGatewayProbeOptions } from './running-gateway.js';

const named = (setting: SettingName): string => `${setting.env} (${setting.flag})`;

/**
 * Whether the gateway could listen where its settings say ({@link listenAddresses}). Each address is bound for a
 * moment and released. A port in use warns, unless what holds it is this very gateway, already running (`check`
 * is often run beside it): its MCP endpoint answers `/healthz` and the metadata of the same resource, and its
 * metrics listener the gateway's metrics ({@link RunningGatewayProbe}, loopback only, bounded by `timeoutMs`).
 */
export async function checkListenAddresses(config: GatewayConfig, running: RunningGatewayProbeOptions): Promise<CheckResult[]> {
  const probe = new RunningGatewayProbe(running);
  const [endpoint, ...others] = listenAddresses(config);
  const endpointBound = await bindOnce(endpoint!);
  // The metrics listener counts as the gateway's only once the MCP endpoint does: metrics name no resource.
  const gatewayRuns = endpointBound === IN_USE && (await probe.servesMcpEndpoint(endpoint!.host, endpoint!.port));
  const otherResults = others.map(async (address) => {
    const bound = await bindOnce(address);
    if (bound !== IN_USE) return bound;
    return inUse(address, gatewayRuns && (await probe.servesMetrics(address.host, address.port)));
  });
  return [endpointBound === IN_USE ? inUse(endpoint!, gatewayRuns) : endpointBound, ...(await Promise.all(otherResults))];
}

/** What {@link bindOnce} found when something else listens there: see {@link inUse}. */
const IN_USE = Symbol('in use');

function subjectOf(address: ListenAddress): { check: 'listen'; subject: string } {
  return { check: 'listen', subject: `${address.host.includes(':') ? `[${address.host}]` : address.host}:${address.port}` };
}

/** The line of an address in use: information when it is this gateway's own (`own`), else a warning. */
function inUse(address: ListenAddress, own: boolean): CheckResult {
  const { what } = address;
  if (own) return { ...subjectOf(address), status: 'ok', message: `${what}: in use: the gateway is already running on this port (it answers for this resource); a second one could not listen here while it runs` };
  return {
    ...subjectOf(address),
    status: 'warn',
    message: `${what}: in use now; a server started with these settings could not listen while it is (one already running with them holds it too)`,
    fix: `stop what listens there, or choose another ${named(address.portSetting)}`,
  };
}

/** Binds the address for a moment: its line, or {@link IN_USE}. */
async function bindOnce(address: ListenAddress): Promise<CheckResult | typeof IN_USE> {
  const { host, port, what } = address;
  const hostSetting = named(address.hostSetting);
  const portSetting = named(address.portSetting);
  const base = subjectOf(address);
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
    if (code === 'EADDRINUSE') return IN_USE;
    if (code === 'EACCES') return { ...base, status: 'fail', message: `${what}: not allowed to listen there (ports below 1024 need privileges)`, fix: `choose a ${portSetting} of 1024 or above, or grant the process CAP_NET_BIND_SERVICE` };
    if (code === 'EADDRNOTAVAIL') return { ...base, status: 'fail', message: `${what}: this host has no such address`, fix: `set ${hostSetting} to an address of this host (0.0.0.0 or :: for all of them)` };
    if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return { ...base, status: 'fail', message: `${what}: the host name does not resolve (${code})`, fix: `correct ${hostSetting}` };
    return { ...base, status: 'fail', message: `${what}: cannot listen there (${code ?? 'an unknown error'})`, fix: `check ${hostSetting} and ${portSetting}` };
  }
}
