/**
 * The mcp-oauth-guard gateway under benchmark, in its own process, started as the CLI starts it: settings
 * through `loadGatewayConfig`, V8's heap growing factor through `tuneHeapForProxying`, then `startGateway`, on 127.0.0.1 with a free port and the default resource
 * (`http://127.0.0.1:PORT/mcp`).
 *
 * Usage: `node --import tsx bench/gateway.ts <library> <upstream URL> <issuer> <policy file> [stdout|off] [sealed] [NAME=value…]`,
 * where `library` is the file URL of the package entry point (`index.js` of the compiled library, or
 * `src/index.ts`); the gateway modules are loaded from beside it. An upstream `stdio:<command line>` is a
 * stdio MCP server instead (`MCP_AUTH_UPSTREAM_COMMAND`, one process per session, no bound on processes
 * below what the benchmark opens); an upstream `config:<file>` is a configuration file naming several servers
 * (`MCP_AUTH_CONFIG`, the servers part). The log mode: `stdout` (default) keeps the
 * gateway's own per-request log, one JSON line per request to stdout, as deployed (the parent points stdout
 * at /dev/null); `off` gives it a writer that drops the line (the entry is still built). `sealed` gives it a session
 * secret of its own (sealed session ids, `MCP_AUTH_SESSION_SECRET`); each `NAME=value` is one more gateway setting
 * (e.g. `MCP_AUTH_RATE_LIMIT=…`, `MCP_AUTH_REDIS_URL=…`, `MCP_AUTH_UPSTREAM_AUTH=…`). Reports `ready` with
 * the URL it serves the endpoint at (the resource, unless `MCP_AUTH_RESOURCE` names another) once issuer discovery
 * is done, answers `stats`, exits on `stop` (see `hop-scenario.ts`).
 */
import { randomBytes } from 'node:crypto';
import { failHop, serveHopCommands, type GatewayLogMode, type HopReport } from './hop-scenario.js';

async function main(): Promise<void> {
  const [library, upstream, issuer, policyFile, logArg, ...variant] = process.argv.slice(2);
  if (!library || !upstream || !issuer || !policyFile) throw new Error('usage: gateway.ts <library> <upstream> <issuer> <policy file> [stdout|off] [sealed] [NAME=value…]');
  const logMode = (logArg ?? 'stdout') as GatewayLogMode;
  if (logMode !== 'stdout' && logMode !== 'off') throw new Error(`unknown log mode ${logMode}`);
  const ext = library.endsWith('.ts') ? 'ts' : 'js';
  // Through the gateway entry, whose names hold across layouts, so an earlier build (BENCH_LIBRARY) loads as well.
  const entry = (await import(new URL(`gateway/index.${ext}`, library).href)) as typeof import('../src/gateway/index.js');
  const { loadGatewayConfig, startGateway } = entry;
  // As the CLI does before it starts the gateway; builds from before it have no such export.
  const heap = typeof entry.tuneHeapForProxying === 'function' ? entry : undefined;

  const extra: Record<string, string> = {};
  for (const arg of variant) {
    if (arg === 'sealed') extra.MCP_AUTH_SESSION_SECRET = randomBytes(32).toString('base64url');
    else if (/^MCP_AUTH_[A-Z_]+=/.test(arg)) extra[arg.slice(0, arg.indexOf('='))] = arg.slice(arg.indexOf('=') + 1);
    else throw new Error(`unknown gateway variant argument ${arg}`);
  }
  const stdio = upstream.startsWith('stdio:') ? upstream.slice('stdio:'.length) : undefined;
  const configFile = upstream.startsWith('config:') ? upstream.slice('config:'.length) : undefined;
  const config = loadGatewayConfig({
    ...(configFile !== undefined
      ? { MCP_AUTH_CONFIG: configFile }
      : stdio === undefined
        ? { MCP_AUTH_UPSTREAM: upstream }
        : { MCP_AUTH_UPSTREAM_COMMAND: stdio, MCP_AUTH_MAX_UPSTREAM_PROCESSES: '100000' }),
    MCP_AUTH_ISSUER: issuer,
    MCP_AUTH_POLICY: policyFile,
    ...extra,
    HOST: '127.0.0.1',
    PORT: '0',
  });
  heap?.tuneHeapForProxying(process.execArgv, (config as { heapGrowingPercent?: number }).heapGrowingPercent);
  const gateway = await startGateway(config, {
    ...(logMode === 'off' ? { log: () => {} } : {}),
    warn: (line) => void process.stderr.write(`gateway: ${line}\n`),
  });
  // `guard` since the gateway left Express; builds from before that (BENCH_LIBRARY) have `router.guard`.
  const guard = gateway.guard ?? (gateway as unknown as { router: { guard: typeof gateway.guard } }).router.guard;
  await guard.ready();
  serveHopCommands(() => {
    gateway.server.closeAllConnections();
    gateway.proxy.close();
    gateway.server.close();
  });
  // Where it listens, on the resource's path: the resource itself unless MCP_AUTH_RESOURCE names another (the
  // connected-accounts part gives each restarted gateway the same one, so one token serves them all).
  const listening = (gateway as { url?: string }).url;
  const report: HopReport = { type: 'ready', url: listening === undefined ? gateway.resource : new URL(new URL(gateway.resource).pathname, listening).href };
  process.send?.(report);
}

main().catch(failHop);
