/**
 * A fleet: two gateway replicas sharing a session secret behind a real nginx that balances round robin with no
 * stickiness, in front of `@modelcontextprotocol/server-everything` (Streamable HTTP). The official SDK client,
 * with a real token from the test authorization server, runs one session whose requests land on both replicas,
 * and keeps it while one replica is replaced by a new process (the gateway command, a real child process).
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from '../helpers/child-process.js';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, type Progress } from '@modelcontextprotocol/sdk/types.js';
import { loadGatewayConfig } from '../../src/gateway/config/gateway-config.js';
import { startGateway, type RunningGateway } from '../../src/gateway/server/start-gateway.js';
import { startAuthorizationServer, type AuthorizationServer } from '../../examples/dev/authorization-server.js';
import { startEverythingServer, withTimeout, type EverythingServer } from '../helpers/everything-server.js';
import { freePort } from '../helpers/free-port.js';
import { NGINX, startTestNginx, type TestNginx } from '../helpers/nginx.js';
import { REPOSITORY_ROOT } from '../helpers/run-cli.js';

const SCOPE = 'mcp:basic mcp:tools';
const SKIP = NGINX === undefined ? 'nginx is not installed (.ci/run installs Debian\'s nginx-light)' : false;

interface Replica {
  port: number;
  gateway: RunningGateway;
  logs: string[];
}

/** A replica run as its own process by the gateway command; its request log is its standard output. */
interface ReplicaProcess {
  port: number;
  child: ChildProcess;
  logs: string[];
}

let dir: string;
let recordFile: string;
let as: AuthorizationServer;
let everything: EverythingServer;
let nginx: TestNginx;
let resource: string;
const secret = randomBytes(32).toString('base64');
const replicas: Replica[] = [];
const running = new Set<RunningGateway>();
const processes: ChildProcess[] = [];

/** Every replica's settings: one upstream, one resource (the fleet's public URL) and one secret. */
function replicaSettings(port: number): Record<string, string> {
  return {
    MCP_AUTH_UPSTREAM: everything.url,
    MCP_AUTH_ISSUER: as.issuer,
    MCP_AUTH_RESOURCE: resource,
    MCP_AUTH_SESSION_SECRET: secret,
    // Behind a proxy every client shares its address.
    MCP_AUTH_MAX_CONNECTIONS_PER_ADDRESS: '0',
    HOST: '127.0.0.1',
    PORT: String(port),
  };
}

/**
 * Starts the gateway command as a child process on `port` with the fleet's settings; resolves once it serves and
 * has listed the upstream (its start-up summary), a listing done in a session of its own that it ends.
 */
async function startReplicaProcess(port: number): Promise<ReplicaProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', resolve(REPOSITORY_ROOT, 'src/gateway/cli.ts')], {
    cwd: REPOSITORY_ROOT,
    env: { PATH: process.env.PATH ?? '', ...replicaSettings(port) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  processes.push(child);
  const logs: string[] = [];
  let rest = '';
  const listening = new Promise<void>((resolveListening, reject) => {
    child.stdout!.on('data', (chunk: Buffer) => {
      rest += chunk.toString('utf8');
      const lines = rest.split('\n');
      rest = lines.pop()!;
      for (const line of lines) {
        if (!line.startsWith('{')) continue;
        logs.push(line);
        if ((JSON.parse(line) as { event?: string }).event === 'summary') resolveListening();
      }
    });
    child.once('exit', (code, signal) => reject(new Error(`the gateway process ended while starting (${code ?? signal})`)));
  });
  child.stderr!.resume();
  await listening;
  return { port, child, logs };
}

async function startReplica(port: number): Promise<Replica> {
  const logs: string[] = [];
  const config = loadGatewayConfig(replicaSettings(port));
  const gateway = await startGateway(config, { log: (line) => logs.push(line), warn: () => {} });
  running.add(gateway);
  await gateway.guard.ready();
  return { port, gateway, logs };
}

/** The tools/call requests a replica served, by status. */
function calls(replica: { logs: readonly string[] }): number[] {
  return replica.logs.map((l) => JSON.parse(l) as { method?: string; status: number }).flatMap((e) => (e.method === 'tools/call' ? [e.status] : []));
}

/** The session ids the upstream received, in order, with the HTTP method of each request (initialize carries none). */
function upstreamSessionIds(): { method: string; id: string }[] {
  return readFileSync(recordFile, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as { method: string; headers: Record<string, string | undefined> })
    .flatMap((r) => {
      assert.equal(r.headers.authorization, undefined, 'no token reaches the upstream');
      return r.headers['mcp-session-id'] ? [{ method: r.method, id: r.headers['mcp-session-id'] }] : [];
    });
}

describe('two replicas behind nginx (round robin, no stickiness) share sealed sessions', { skip: SKIP, timeout: 90_000 }, () => {
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'fleet-nginx-'));
    recordFile = join(dir, 'upstream-requests.jsonl');
    writeFileSync(recordFile, '');
    as = await startAuthorizationServer({ extraScopes: SCOPE.split(' ') });
    everything = await startEverythingServer({ recordFile });
    const [nginxPort, portA, portB] = [await freePort(), await freePort(), await freePort()];
    resource = `http://127.0.0.1:${nginxPort}/mcp`;
    as.addResource(resource, { scopes: SCOPE.split(' ') });
    replicas.push(await startReplica(portA), await startReplica(portB));
    nginx = await startTestNginx([`http://127.0.0.1:${portA}`, `http://127.0.0.1:${portB}`], nginxPort);
  });

  after(async () => {
    for (const gateway of running) await gateway.shutdown();
    for (const child of processes) {
      if (child.exitCode !== null || child.signalCode !== null) continue;
      const exited = once(child, 'exit');
      child.kill('SIGTERM');
      await exited;
    }
    await nginx?.stop();
    everything?.stop();
    await as?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('serves one SDK client session from both replicas, and from a replica restarted mid-session', async () => {
    const token = await as.issueAccessToken({ resource, scope: SCOPE, sub: 'fleet-user' });
    const transport = new StreamableHTTPClientTransport(new URL(resource), { requestInit: { headers: { Authorization: `Bearer ${token}` } } });
    const client = new Client({ name: 'fleet-interop', version: '1.0.0' });
    try {
      await withTimeout(client.connect(transport), 15_000, 'initialize');
      const sealed = transport.sessionId!;
      assert.equal(sealed.split('.').length, 5, 'the client holds a sealed id (a compact JWE)');

      const echo = async (i: number): Promise<void> => {
        const result = await withTimeout(client.callTool({ name: 'echo', arguments: { message: `call ${i}` } }), 10_000, `echo ${i}`);
        assert.deepEqual(result.content, [{ type: 'text', text: `Echo: call ${i}` }]);
      };
      for (let i = 0; i < 6; i++) await echo(i);
      const [a, b] = replicas as [Replica, Replica];
      assert.ok(calls(a).length > 0 && calls(b).length > 0, `both replicas served calls: ${calls(a).length} and ${calls(b).length}`);
      assert.ok([...calls(a), ...calls(b)].every((status) => status === 200));
      const addresses = new Set(nginx.accessLog().map((line) => line.split(' ')[0]));
      assert.ok(addresses.has(`127.0.0.1:${a.port}`) && addresses.has(`127.0.0.1:${b.port}`), [...addresses].join(', '));

      // A streamed answer (progress notifications over SSE) passes nginx unbuffered, whichever replica serves it.
      const progress: Progress[] = [];
      const long = await withTimeout(
        client.callTool({ name: 'trigger-long-running-operation', arguments: { duration: 0.4, steps: 2 } }, CallToolResultSchema, { onprogress: (p) => progress.push(p), timeout: 10_000 }),
        15_000,
        'trigger-long-running-operation',
      );
      assert.match(JSON.stringify(long.content), /Long running operation completed/);
      assert.deepEqual(progress.map((p) => p.progress), [1, 2]);

      // Replace replica A by a new process with the same secret, on the same port: the session goes on.
      await a.gateway.shutdown();
      running.delete(a.gateway);
      const restarted = await startReplicaProcess(a.port);
      for (let i = 6; i < 12; i++) await echo(i);
      assert.ok(calls(restarted).length > 0, 'the new process served calls of the session it never saw begin');
      assert.ok(calls(restarted).every((status) => status === 200));
      assert.equal(transport.sessionId, sealed, 'the client kept its session id throughout');

      // One upstream session behind it all, named by the upstream's own id, never the sealed one. The gateway
      // command lists the upstream at start-up in a session of its own, which it ends (DELETE): that one aside.
      const seen = upstreamSessionIds();
      const ended = new Set(seen.filter((r) => r.method === 'DELETE').map((r) => r.id));
      assert.equal(ended.size, 1, 'the restarted process listed the upstream once, in a session it ended');
      const ids = new Set(seen.map((r) => r.id).filter((id) => !ended.has(id)));
      assert.equal(ids.size, 1, [...ids].join(', '));
      assert.ok(!ids.has(sealed));

      // The session ends through whichever replica nginx picks.
      await withTimeout(transport.terminateSession(), 10_000, 'DELETE');
      assert.equal(transport.sessionId, undefined);
    } finally {
      await client.close().catch(() => {});
    }
  });
});
