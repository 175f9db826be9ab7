/**
 * A fleet with several servers behind one endpoint: two gateway replicas sharing a session secret behind a real
 * nginx (round robin, no stickiness), each in front of the same two servers: server-everything over Streamable HTTP
 * and a second server-everything. The SDK client's one session is served by both replicas: the sealed id carries
 * each server's session, so either replica forwards to the same upstream session.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { loadGatewayConfig } from '../../src/gateway/config/gateway-config.js';
import type { ServerConfig } from '../../src/gateway/config/server-config.js';
import { startGateway, type RunningGateway } from '../../src/gateway/server/start-gateway.js';
import { startAuthorizationServer, type AuthorizationServer } from '../../examples/dev/authorization-server.js';
import { startEverythingServer, withTimeout, type EverythingServer } from '../helpers/everything-server.js';
import { freePort } from '../helpers/free-port.js';
import { NGINX, startTestNginx, type TestNginx } from '../helpers/nginx.js';

const SCOPE = 'mcp:basic';
const SKIP = NGINX === undefined ? "nginx is not installed (.ci/run installs Debian's nginx-light)" : false;

let dir: string;
let as: AuthorizationServer;
const upstreams: EverythingServer[] = [];
const records: string[] = [];
let nginx: TestNginx;
let resource: string;
const secret = randomBytes(32).toString('base64');
const replicas: { gateway: RunningGateway; logs: string[] }[] = [];

async function startReplica(port: number): Promise<{ gateway: RunningGateway; logs: string[] }> {
  const logs: string[] = [];
  const config = loadGatewayConfig(
    { MCP_AUTH_ISSUER: as.issuer, MCP_AUTH_RESOURCE: resource, MCP_AUTH_SESSION_SECRET: secret, MCP_AUTH_MAX_CONNECTIONS_PER_ADDRESS: '0', HOST: '127.0.0.1', PORT: String(port) },
    { upstreamRequired: false },
  );
  const servers: ServerConfig[] = [
    { name: 'one', transport: 'http', proxy: { upstream: upstreams[0]!.url }, required: true },
    { name: 'two', transport: 'http', proxy: { upstream: upstreams[1]!.url }, required: true },
  ];
  const gateway = await startGateway({ ...config, servers }, { log: (line) => logs.push(line), warn: () => {} });
  await gateway.guard.ready();
  return { gateway, logs };
}

/** The session ids an upstream received (initialize carries none). */
function sessionIds(recordFile: string): Set<string> {
  return new Set(
    readFileSync(recordFile, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as { headers: Record<string, string | undefined> })
      .flatMap((r) => {
        assert.equal(r.headers.authorization, undefined, 'no token reaches the upstream');
        return r.headers['mcp-session-id'] ? [r.headers['mcp-session-id']] : [];
      }),
  );
}

describe('two replicas behind nginx serve one session over several servers', { skip: SKIP, timeout: 90_000 }, () => {
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'fleet-servers-'));
    as = await startAuthorizationServer({ extraScopes: [SCOPE] });
    for (const name of ['one', 'two']) {
      const recordFile = join(dir, `${name}.jsonl`);
      writeFileSync(recordFile, '');
      records.push(recordFile);
      upstreams.push(await startEverythingServer({ recordFile }));
    }
    const [nginxPort, portA, portB] = [await freePort(), await freePort(), await freePort()];
    resource = `http://127.0.0.1:${nginxPort}/mcp`;
    as.addResource(resource, { scopes: [SCOPE] });
    replicas.push(await startReplica(portA), await startReplica(portB));
    nginx = await startTestNginx([`http://127.0.0.1:${portA}`, `http://127.0.0.1:${portB}`], nginxPort);
  });

  after(async () => {
    for (const replica of replicas) await replica.gateway.shutdown();
    await nginx?.stop();
    for (const upstream of upstreams) upstream.stop();
    await as?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('keeps one upstream session per server whichever replica serves each request', async () => {
    const token = await as.issueAccessToken({ resource, scope: SCOPE, sub: 'fleet-user' });
    const transport = new StreamableHTTPClientTransport(new URL(resource), { requestInit: { headers: { Authorization: `Bearer ${token}` } } });
    const client = new Client({ name: 'fleet-servers', version: '1.0.0' });
    try {
      await withTimeout(client.connect(transport), 15_000, 'initialize');
      const sealed = transport.sessionId!;
      assert.equal(sealed.split('.').length, 5, 'the client holds a sealed id (a compact JWE)');
      const names = (await withTimeout(client.listTools(), 10_000, 'tools/list')).tools.map((t) => t.name);
      assert.ok(names.includes('one__echo') && names.includes('two__echo'), names.join());
      for (let i = 0; i < 6; i++) {
        const server = i % 2 === 0 ? 'one' : 'two';
        const result = await withTimeout(client.callTool({ name: `${server}__echo`, arguments: { message: `call ${i}` } }), 10_000, `echo ${i}`);
        assert.deepEqual(result.content, [{ type: 'text', text: `Echo: call ${i}` }]);
      }
      const served = replicas.map((r) => r.logs.map((l) => JSON.parse(l) as { method?: string; status?: number }).filter((e) => e.method === 'tools/call'));
      assert.ok(served.every((calls) => calls.length > 0), `both replicas served calls: ${served.map((c) => c.length).join(' and ')}`);
      assert.ok(served.flat().every((e) => e.status === 200));
      assert.equal(transport.sessionId, sealed, 'the client kept its session id');
      // Each server saw one session of its own, never the sealed id.
      for (const recordFile of records) {
        const ids = sessionIds(recordFile);
        assert.equal(ids.size, 1, [...ids].join(', '));
        assert.ok(!ids.has(sealed));
      }
    } finally {
      await client.close().catch(() => {});
    }
  });
});
