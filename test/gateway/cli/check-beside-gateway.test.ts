// `check` run beside the gateway it checks: the gateway's own ports are in use, by the gateway itself, which is no
// problem, so they are reported as information (status ok) and --strict still passes. Anything else on the port,
// a server that answers /healthz but is no gateway for this resource among them, still warns. A real gateway
// (startGateway, on free ports), a real authorization server (oidc-provider on 127.0.0.1), the real CLI.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { startUpstreamServer } from '../../../examples/gateway/upstream-server.js';
import { startAuthorizationServer, type AuthorizationServer } from '../../../examples/dev/authorization-server.js';
import { runCheckCommand } from '../../../src/gateway/cli/check/check-command.js';
import { loadGatewayConfig } from '../../../src/gateway/config/gateway-config.js';
import { startGateway, type RunningGateway } from '../../../src/gateway/server/start-gateway.js';
import { freePort } from '../../helpers/free-port.js';
import { runGatewayCli } from '../../helpers/run-cli.js';

interface Report {
  exitCode: number;
  results: { check: string; subject?: string; status: string; message: string; fix?: string }[];
}

let as: AuthorizationServer;
let upstream: Awaited<ReturnType<typeof startUpstreamServer>>;
let gateway: RunningGateway;
let settings: Record<string, string>;

/** `check --json` in this process, with `env` as its whole environment. */
async function checkInProcess(env: Record<string, string>): Promise<Report> {
  let stdout = '';
  let stderr = '';
  await runCheckCommand(['--json', '--strict'], env, { stdout: (text) => void (stdout += text), stderr: (text) => void (stderr += text) });
  const report = JSON.parse(stdout) as Report;
  assert.ok(Array.isArray(report.results), stdout + stderr);
  return report;
}

const listenLines = (report: Report): Report['results'] => report.results.filter((result) => result.check === 'listen');

describe('check beside the running gateway', () => {
  before(async () => {
    const [port, metricsPort] = [await freePort(), await freePort()];
    // The authorization server's scopes_supported are those of the resources it starts with.
    as = await startAuthorizationServer({ resources: { [`http://127.0.0.1:${port}/mcp`]: { scopes: ['counter:read', 'counter:write'] } } });
    upstream = await startUpstreamServer('127.0.0.1', 0);
    settings = { MCP_AUTH_ISSUER: as.issuer, MCP_AUTH_UPSTREAM: upstream.url, MCP_AUTH_POLICY: 'examples/gateway/policy.json', HOST: '127.0.0.1', PORT: String(port), MCP_AUTH_METRICS_PORT: String(metricsPort) };
    gateway = await startGateway(loadGatewayConfig(settings), { log: () => {}, warn: () => {} });
  });
  after(async () => {
    await gateway?.shutdown();
    upstream?.server.closeAllConnections();
    upstream?.server.close();
    await as?.close();
  });

  it('its MCP endpoint and metrics ports: "the gateway is already running on this port", status ok, and --strict passes (the real CLI)', async () => {
    const run = await runGatewayCli(['check', '--json', '--strict'], settings);
    assert.equal(run.stderr, '');
    const report = JSON.parse(run.stdout) as Report;
    const [endpoint, metrics] = listenLines(report);
    assert.deepEqual(endpoint, {
      check: 'listen',
      subject: `127.0.0.1:${settings.PORT}`,
      status: 'ok',
      message: 'the MCP endpoint: in use: the gateway is already running on this port (it answers for this resource); a second one could not listen here while it runs',
    });
    assert.equal(metrics?.subject, `127.0.0.1:${settings.MCP_AUTH_METRICS_PORT}`);
    assert.equal(metrics?.status, 'ok', metrics?.message);
    assert.match(metrics!.message, /^the metrics listener: in use: the gateway is already running on this port/);
    assert.equal(report.results.filter((result) => result.status !== 'ok').length, 0, run.stdout);
    assert.equal(run.code, 0, run.stdout);
  });

  it('the same port under settings for another resource: the running gateway is not this one, so it warns', async () => {
    const report = await checkInProcess({ ...settings, MCP_AUTH_RESOURCE: `http://127.0.0.1:${settings.PORT}/other` });
    const [endpoint, metrics] = listenLines(report);
    assert.equal(endpoint?.status, 'warn');
    assert.match(endpoint!.message, /^the MCP endpoint: in use now; /);
    assert.equal(endpoint?.fix, 'stop what listens there, or choose another PORT (--port)');
    // The metrics listener is not recognised without the MCP endpoint: metrics name no resource.
    assert.equal(metrics?.status, 'warn');
    assert.equal(report.exitCode, 1);
  });

  it('a server that answers /healthz but publishes no metadata for this resource, on 0.0.0.0: it warns', async () => {
    const impostor = createServer((req, res) => {
      res.writeHead(req.url === '/healthz' ? 200 : 404, { 'content-type': 'application/json' }).end(JSON.stringify({ status: 'ok' }));
    });
    impostor.listen(0, '0.0.0.0');
    await once(impostor, 'listening');
    const port = String((impostor.address() as { port: number }).port);
    try {
      const report = await checkInProcess({ MCP_AUTH_ISSUER: as.issuer, HOST: '0.0.0.0', PORT: port, MCP_AUTH_RESOURCE: `http://127.0.0.1:${port}/mcp` });
      const [endpoint] = listenLines(report);
      assert.equal(endpoint?.subject, `0.0.0.0:${port}`);
      assert.equal(endpoint?.status, 'warn');
      assert.match(endpoint!.message, /in use now/);
    } finally {
      impostor.closeAllConnections();
      impostor.close();
    }
  });
});
